"""Running a participant's script (the steps of ``kit.scenario``): the kit's interpreter.

One interpreter serves synchronous and asynchronous participants: a synchronous
participant's script has no suspending step (the scenario check guarantees it), so its
coroutine completes on the first ``send``. The interpreter records the participant's
``call`` and its ``return`` or ``throw``, and what each ``mutate`` and ``observe`` step saw.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from . import engine_texts as texts
from .jsvalue import (clone, HOSTILE_INSPECTION, UNDEFINED, JsValue, Thrown, is_undefined, js_error, read, to_string,
                      token, type_error)
from .record import IDENTITY, Record
from .session import RunState
from .scenario import Behavior, ScenarioError
from .scheduler import ABORT_REASON, Signal

NOTHING = object()

FsIntent = Callable[[RunState, Record, str, JsValue], Awaitable[JsValue]]
"""A body's filesystem intent (P71): runs the named waterfall (``fs/write-intent``,
``fs/edit-intent``) for the record with the target; the pipeline hands it to a body."""


@dataclass
class Invocation:
    """One invocation of a participant: who it is, what it was handed."""

    who: str
    stage: str
    record: Record | None
    rules: tuple[str, ...] = ()
    next: Callable[[], Awaitable[JsValue]] | None = None
    result: Any = NOTHING  # the result handed to it (wrappers: what next() returned)
    args: Any = NOTHING  # the body's arguments parameter
    request: dict[str, Any] | None = None
    request_signal: Signal | None = None
    input: dict[str, Any] | None = None
    saved_signal: Signal | None = None
    last_next: Any = NOTHING
    call_id: str | None = None  # the call it runs for, where the record does not say (a UI projection)
    fs_intent: FsIntent | None = None  # a body's: how its dispatch steps run their waterfall (P71)

    @property
    def call(self) -> str | None:
        # The call the invocation runs for: its record's, unless it runs for another call
        # than its record's (a dispatch-log listener is handed run_code's record for a sub-call).
        if self.call_id is not None:
            return self.call_id
        return self.record.callId if self.record is not None else None


async def perform(w: RunState, inv: Invocation, behavior: Behavior, awaited: bool = True) -> JsValue:
    """Run the participant's script; returns its value or raises Thrown.

    An asynchronous participant's returned promise is awaited (P5: ``await listener()``;
    the body: ``await tool.execute()``); a synchronous participant's is used as returned
    (``awaited=False``: P50, P94)."""
    steps = behavior.script_for(inv.call, w.next_invocation(inv.who))
    w.obs(inv.call, inv.stage, "call", inv.who, rules=inv.rules)
    try:
        value = await _steps(w, inv, steps)
        while awaited and token(value) == "promise":
            if "rejects" in value:
                raise Thrown(value["rejects"])
            value = value.get("resolves", UNDEFINED)
            if token(value) == "hostile":  # resolving a promise with it reads its `then`
                raise Thrown(HOSTILE_INSPECTION)
    except Thrown as t:
        w.obs(inv.call, inv.stage, "throw", inv.who, t.value, inv.rules)
        raise
    w.obs(inv.call, inv.stage, "return", inv.who, value, inv.rules)
    if awaited and token(value) == "hostile":
        # An asynchronous participant's promise resolves with what it returns, and that
        # reads the value's `then`: the caller's await sees the inspection's throw.
        raise Thrown(HOSTILE_INSPECTION)
    return value


def perform_sync(w: RunState, inv: Invocation, behavior: Behavior) -> JsValue:
    """Run a synchronous participant (guard, finalizer, render, observer, classifier)."""
    coro = perform(w, inv, behavior, awaited=False)
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise AssertionError(f"synchronous participant {inv.who} suspended")


async def _steps(w: RunState, inv: Invocation, steps: list[Any]) -> JsValue:
    for step in steps:
        match step.do:
            case "return":
                return clone(step.value)
            case "return-next":
                return inv.last_next if inv.last_next is not NOTHING else UNDEFINED
            case "throw":
                raise Thrown(clone(step.value))
            case "next":
                if inv.next is None:
                    raise ScenarioError(f"participant {inv.who}", "a 'next' step outside a waterfall")
                if step.catch:
                    try:
                        inv.last_next = await inv.next()
                    except Thrown:
                        inv.last_next = UNDEFINED
                else:
                    inv.last_next = await inv.next()
                if inv.stage == "execute":
                    inv.result = inv.last_next  # what a wrapper is handed is next()'s value (P11)
            case "mutate":
                _mutate(w, inv, step)
            case "set-signal":
                rec = _need_record(inv)
                if rec.frozen:
                    raise Thrown(type_error(texts.frozen_set("signal")))
                if step.signal == "restore":
                    if inv.saved_signal is not None:
                        rec.signal = inv.saved_signal
                else:
                    if inv.saved_signal is None:
                        inv.saved_signal = rec.signal
                    rec.signal = w.signal(step.signal)
            case "abort":
                target = _need_record(inv).abort_target if step.signal == "caller" else w.signal(step.signal)
                assert target is not None
                reason = ABORT_REASON if step.reason is None else clone(step.reason)
                w.obs(inv.call, inv.stage, "abort", inv.who, step.signal, inv.rules + ("P52",))
                target.abort(reason)
            case "defer-context":
                _need_record(inv).deferred.append(clone(step.message))
                w.obs(inv.call, inv.stage, "defer", inv.who, step.message, ("P67",))
            case "conclude-turn":
                _need_record(inv).concluded = True
                w.obs(inv.call, inv.stage, "conclude", inv.who, None, ("P67",))
            case "await-signal":
                sig = inv.request_signal or _need_record(inv).signal
                await sig.on_abort
            case "sleep":
                await w.sched.timer(step.ms)
            case "gate":
                await gate(w, inv.call)
            case "register":
                w.obs(inv.call, inv.stage, "register", inv.who, step.ref, inv.rules + _TABLE_RULES)
                w.register(step.ref)
            case "unregister":
                w.obs(inv.call, inv.stage, "unregister", inv.who, step.ref, inv.rules + _TABLE_RULES)
                w.unregister(step.ref)
            case "inject" | "steer":
                if w.loop_agent is None:
                    raise ScenarioError(f"participant {inv.who}", f"'{step.do}' needs a loop run")
                w.obs(inv.call, inv.stage, "inject", inv.who, step.message, ("P111", "P112"))
                w.inject(clone(step.message), step.do == "steer")
            case "observe":
                rules = ("P110",) if inv.stage == "pre-step" else _OBSERVE_RULES[step.what]  # a step boundary's payload
                w.obs(inv.call, inv.stage, "observe", inv.who, _observe(w, inv, step.what), rules)
            case "dispatch":
                await _dispatch(w, inv, step)
            case "keep":  # the very object, so that identity survives (P63)
                kept = inv.result if step.what == "result" else inv.last_next
                w.kept[step.name] = UNDEFINED if kept is NOTHING else kept
            case "return-kept":
                return w.kept.get(step.name, UNDEFINED)
            case "cancel":
                if w.loop_agent is None:
                    raise ScenarioError(f"participant {inv.who}", "'cancel' needs a loop run")
                w.obs(inv.call, inv.stage, "cancel", inv.who, {"keepInbox": step.keepInbox}, inv.rules + ("P112",))
                w.cancel(step.keepInbox, ABORT_REASON if step.reason is None else clone(step.reason))
            case "append":
                rec = _need_record(inv)
                if rec.agent is None:
                    raise Thrown(js_error(texts.NO_AGENT_SESSION))
                w.append_event(rec.agent, step.type, step.data.model_dump(mode="python"))
                w.obs(inv.call, "tool-event", "append", inv.who, {"type": step.type}, ("P71",))
    return UNDEFINED


async def _dispatch(w: RunState, inv: Invocation, step: Any) -> None:
    """A body's filesystem intent (P71): the waterfall runs inside the body's run, and what
    escapes it is the body's own throw unless the body catches it."""
    if inv.fs_intent is None:
        raise ScenarioError(f"participant {inv.who}", "a 'dispatch' step outside a tool body")
    w.obs(inv.call, "fs-intent", "start", inv.who, {"event": step.event, "target": step.target}, ("P71",))
    try:
        value = await inv.fs_intent(w, _need_record(inv), step.event, clone(step.target))
    except Thrown as t:
        w.obs(inv.call, "fs-intent", "throw", inv.who, t.value, ("P55", "P71"))
        if not step.catch:
            raise
        return
    w.obs(inv.call, "fs-intent", "end", inv.who, value, ("P71",))


# The rules behind what a step shows. An observation names these alone, so that a
# divergence in it is put down to the rule about what was observed, not to the stage the
# observing participant runs in.
_TABLE_RULES = ("P5", "P26", "P45", "P56")  # tables are read live at the points the spec names
_OBSERVE_RULES = {"record": ("P22", "P24", "P60"), "result": ("P11",), "args": ("P25",), "request": ("P39",)}


def _need_record(inv: Invocation) -> Record:
    if inv.record is None:
        raise ScenarioError(f"participant {inv.who}", "this step needs an execution record")
    return inv.record


async def gate(w: RunState, call: str | None) -> None:
    """Loop gates: a body waits until every call released before it has finished."""
    release = getattr(w.scenario.run, "release", [])
    if call is None or call not in release:
        return
    for earlier in release[: release.index(call)]:
        await w.gate(earlier)


def _observe(w: RunState, inv: Invocation, what: str) -> JsValue:
    match what:
        case "record":
            return _need_record(inv).view(w.signals)
        case "result":
            if inv.result is NOTHING:
                return {"result": UNDEFINED, "frozen": False}
            return {"result": inv.result, "frozen": w.is_deeply_frozen(inv.result)}
        case "args":
            if inv.args is NOTHING:
                return {"args": UNDEFINED, "isRecordArguments": False}
            same = inv.record is not None and inv.args is inv.record.arguments
            return {"args": inv.args, "isRecordArguments": same, "frozen": w.is_deeply_frozen(inv.args)}
        case "request":
            req = dict(inv.request or {})
            sig = inv.request_signal
            req["signal"] = {"aborted": bool(sig and sig.aborted)}
            return req
    return UNDEFINED


def _mutate(w: RunState, inv: Invocation, step: Any) -> None:
    """A write attempt (P11, P24, P25, P99). Frozen targets refuse; others apply."""
    root, *path = step.target.split(".")
    failure, rules = _refusal(w, inv, root, path, step.op)
    w.obs(inv.call, inv.stage, "mutate", inv.who,
          {"target": step.target, "op": step.op, "outcome": "failed" if failure else "applied"}, rules)
    if failure:
        if not step.catch:
            raise Thrown(type_error(failure))
        return
    if root == "request" and len(path) == 1 and inv.stage == "approval" and isinstance(inv.request, dict):
        # P39 builds the request for this ask alone: a write changes what later reads of it see.
        if step.op == "delete":
            inv.request.pop(path[0], None)
        else:
            inv.request[path[0]] = clone(step.value)
    if root == "record" and len(path) == 1:
        rec = _need_record(inv)
        if step.op == "delete":
            rec.extra.pop(path[0], None)
        else:
            rec.extra[path[0]] = clone(step.value)


def _refusal(w: RunState, inv: Invocation, root: str, path: list[str], op: str) -> tuple[str | None, tuple[str, ...]]:
    """The TypeError message a write raises (None when it is allowed), and the rules that
    decide it. As in strict-mode JavaScript, deleting a key that is absent succeeds."""
    if not path:
        return texts.frozen_set(root), ("P24",)
    if root == "input":
        # The caller's object: never frozen, never read again (P23); a write fails only
        # where it runs into a primitive or through a nullish value. An input field that
        # is a getter (Call.getters) has no setter, and a write below it reads it first.
        spec = next((c for c in getattr(w.scenario.run, "calls", []) if c.callId == inv.call), None)
        if spec is not None and path[0] in spec.getters:
            if len(path) == 1:
                return (texts.getter_only(path[0]) if op == "set" else None), ("P23",)
            held = read({"$js": "getter", "id": spec.getters[path[0]]})
            return _frozen_write(w, held, path[1:], op), ("P23",)
        return _frozen_write(w, w.caller_input(inv.call), path, op), ("P23",)
    key = path[-1]
    if root == "record":
        rec = _need_record(inv)
        head = path[0]
        if len(path) == 1:
            exists = rec.has(head)
            rule = ("P24",) if head in IDENTITY else ("P99",) if rec.frozen else ("P24", "P60")
            if (head in IDENTITY or rec.frozen) and not (op == "delete" and not exists):
                return _message(op, key, exists), rule
            return None, rule
        if head == "arguments":
            return _frozen_write(w, rec.arguments, path[1:], op), ("P24", "P25")
        if head in ("callId", "rootCallId", "name", "token", "parent") and rec.has(head):
            # A primitive (a string, a symbol token) has no properties of its own.
            kind = "string" if head in ("callId", "rootCallId", "name") else "symbol"
            return _primitive_write(op, key, kind, getattr(rec, head)), ("P24",)
        if head in ("agent", "parent") and not rec.has(head):
            return _nullish_write(op, key, UNDEFINED), ("P24",)
        if head in ("agent", "signal"):
            return None, ("P24",)  # the agent and signal objects themselves are not frozen
        return (_message(op, key, True) if rec.frozen else None), ("P99",)
    if root == "request" and inv.stage == "approval" and isinstance(inv.request, dict):
        # P39 fixes what the request holds, no sentence that it is frozen: a plain object made
        # for this ask (as the real package's is), so a write applies as on any object.
        return _frozen_write(w, {**inv.request, "signal": {}}, path, op), ("P39",)
    # A participant handed no arguments or no result reads the root as undefined.
    if root == "args":
        return _frozen_write(w, UNDEFINED if inv.args is NOTHING else inv.args, path, op), ("P25",)
    return _frozen_write(w, UNDEFINED if inv.result is NOTHING else inv.result, path, op), ("P11",)


def _frozen_write(w: RunState, value: Any, path: list[str], op: str) -> str | None:
    """Write ``path`` inside ``value``: refused where the container is frozen."""
    node = value
    for part in path[:-1]:
        if node is None or is_undefined(node):
            return _nullish_write("read", part, node)
        child = _child(node, part)
        node = UNDEFINED if child is NOTHING else child  # an absent property reads as undefined
    key = path[-1]
    if node is None or is_undefined(node):
        return _nullish_write(op, key, node)
    kind = _primitive_kind(node)
    if kind is not None:
        return _primitive_write(op, key, kind, node)
    if not isinstance(node, (dict, list)):
        return texts.nullish_set(to_string(node), key)
    # Objects in wire form (a null-prototype object, an instance, ...) take writes as any
    # object does.
    exists = _child(node, key) is not NOTHING
    if not w.is_frozen(node) or (op == "delete" and not exists):
        return None
    return _message(op, key, exists)


def _primitive_kind(v: Any) -> str | None:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (int, float)) or token(v) in ("NaN", "Infinity", "-Infinity", "-0"):
        return "number"
    if token(v) in ("symbol", "bigint"):
        return str(token(v))
    return None


def _primitive_write(op: str, key: str, kind: str, value: Any) -> str | None:
    """A write to a primitive's property in strict code: a set throws, a delete of a
    property it does not have is a no-op, defineProperty refuses a non-object."""
    if op == "delete":
        return None
    if op == "define":
        return texts.DEFINE_ON_NON_OBJECT
    # The engine's wording names the primitive; only the prefix is compared (WRITE_REFUSALS).
    shown = "Symbol()" if kind == "symbol" else to_string(value)
    return texts.primitive_create(key, kind, shown)


def _nullish_write(op: str, key: str, node: Any) -> str:
    """A read, write, delete or define through ``null`` or ``undefined``: each throws."""
    what = "null" if node is None else "undefined"
    match op:
        case "read":
            return texts.nullish_read(what, key)
        case "delete":
            return texts.NULLISH_DELETE
        case "define":
            return texts.DEFINE_ON_NON_OBJECT
    return texts.nullish_set(what, key)


def _child(node: Any, key: str) -> Any:
    if isinstance(node, dict):
        if token(node) is not None:  # an object in wire form: its own keys are its entries
            return node.get("entries", {}).get(key, NOTHING)
        return node.get(key, NOTHING)
    if isinstance(node, list) and key.isdigit() and int(key) < len(node):
        return node[int(key)]
    return NOTHING


def _message(op: str, key: str, exists: bool) -> str:
    if op == "delete":
        return texts.frozen_delete(key)
    if op == "define":
        return texts.frozen_define(key) if exists else texts.frozen_add(key)
    return texts.frozen_set(key) if exists else texts.frozen_add(key)


__all__ = ["Invocation", "perform", "perform_sync", "gate", "NOTHING", "js_error"]
