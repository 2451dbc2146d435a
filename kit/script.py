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
from . import writes
from .jsvalue import clone, HOSTILE_INSPECTION, UNDEFINED, JsValue, Thrown, js_error, token, type_error
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
                if step.what == "record" and w.loop_agent is not None and inv.record is not None and inv.record.parent is None:
                    rules = (*rules, "P17")  # a loop call's record holds the input the loop built
                w.obs(inv.call, inv.stage, "observe", inv.who, _observe(w, inv, step.what, step.name), rules)
            case "dispatch":
                await _dispatch(w, inv, step)
            case "keep" if step.what == "signal":  # P60: the signal itself, looked at later
                rec = _need_record(inv)
                w.kept_signals[(inv.call, step.name)] = (rec.signal, rec.view(w.signals)["signal"]["is"])
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
_OBSERVE_RULES = {"record": ("P22", "P24", "P60"), "result": ("P11",), "args": ("P25",), "request": ("P39",),
                  "kept": ("P60",)}


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


def _observe(w: RunState, inv: Invocation, what: str, name: str | None = None) -> JsValue:
    match what:
        case "kept":  # P60: a kept signal as it is now; nothing kept under the name (yet): no signal
            if (inv.call, name) not in w.kept_signals:
                return {"kept": name}
            signal, which = w.kept_signals[(inv.call, name)]
            view: dict[str, Any] = {"is": which, "aborted": signal.aborted}
            if signal.aborted:
                view["reason"] = signal.reason
            return {"kept": name, "signal": view}
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
    """A write attempt (P11, P23, P24, P25, P99): strict-mode JavaScript on the value the
    participant holds (``kit.writes``). Refused writes throw; allowed writes into the
    caller's input, the record's own fields and an approval request apply."""
    root, *path = step.target.split(".")
    failure, rules, written = _refusal(w, inv, root, path, step.op)
    w.obs(inv.call, inv.stage, "mutate", inv.who,
          {"target": step.target, "op": step.op, "outcome": "failed" if failure is not None else "applied"}, rules)
    if failure is not None:
        if not step.catch:
            raise Thrown(clone(failure))
        return
    if root in ("input", "result", "args", "record") and written is not None:
        # P23: the caller's object is an object like any other: a later write below a field
        # deleted or redefined here sees that (a deleted getter is not read again). A result
        # the registry left unfrozen (the reference's P11 departure, oracle.departures)
        # changes as a real object does, for every later reader of it.
        writes.apply(written, path[-1], step.op, step.value)
    if root == "request" and len(path) == 1 and inv.stage == "approval" and isinstance(inv.request, dict):
        # P39 builds the request for this ask alone: a write changes what later reads of it see.
        if step.op == "delete":
            inv.request.pop(path[0], None)
        else:
            inv.request[path[0]] = clone(step.value)
    if root == "record" and len(path) == 1 and path[0] in IDENTITY:
        if w.identity_writable():  # allowed: the P24 departure (else only a delete of what is absent)
            w.write_identity(_need_record(inv), path[0], step.op, step.value)
    elif root == "record" and len(path) == 1:
        rec = _need_record(inv)
        if step.op == "delete":
            rec.extra.pop(path[0], None)
        else:
            rec.extra[path[0]] = clone(step.value)


def _refusal(w: RunState, inv: Invocation, root: str, path: list[str],
             op: str) -> tuple[JsValue | None, tuple[str, ...], Any]:
    """What a write throws (None when it is allowed), the rules that decide it, and the
    container it writes into. As in strict-mode JavaScript, deleting an absent key succeeds."""
    if not path:
        return type_error(texts.frozen_set(root)), ("P24",), None
    if root == "input":
        # The caller's object: never frozen, never read again by the pipeline after entry
        # (P23); a getter field (Call.getters) is an accessor without a setter.
        failure, node = writes.attempt(w, w.input_object(inv.call), path, op)
        return failure, ("P23",), node
    key = path[-1]
    if root == "record":
        rec = _need_record(inv)
        head = path[0]
        if len(path) == 1:
            exists = rec.has(head)
            rule = ("P24",) if head in IDENTITY else ("P99",) if rec.frozen else ("P24", "P60")
            writable = head in IDENTITY and not rec.frozen and w.identity_writable()  # P24 departure
            if (head in IDENTITY or rec.frozen) and not writable and not (op == "delete" and not exists):
                return type_error(_message(op, key, exists)), rule, None
            return None, rule, None
        if head == "arguments":
            failure, node = writes.attempt(w, rec.get_arguments(), path[1:], op)
            return failure, ("P24", "P25"), node
        if head in ("callId", "rootCallId", "name", "token", "parent") and rec.has(head):
            # A primitive (a string, a symbol token) has no properties of its own.
            held = (rec.current_call_id if head == "callId" else getattr(rec, head)
                    if head in ("rootCallId", "name") else {"$js": "symbol"})
            return writes.attempt(w, {head: held}, path, op)[0], ("P24",), None
        if head in ("agent", "parent") and not rec.has(head):
            return writes.refusal(w, UNDEFINED, key, op), ("P24",), None
        if head == "signal":  # an AbortSignal, never frozen: its aborted and reason have no setter
            return writes.attempt(w, {head: writes.SIGNAL}, path, op)[0], ("P24",), None
        if head == "agent":
            return None, ("P24",), None  # the agent object itself is not frozen
        return (type_error(_message(op, key, True)) if rec.frozen else None), ("P99",), None
    if root == "request" and inv.stage == "approval" and isinstance(inv.request, dict):
        # P39 fixes what the request holds, no sentence that it is frozen: a plain object made
        # for this ask (as the real package's is), so a write applies as on any object.
        return writes.attempt(w, {**inv.request, "signal": {}}, path, op)[0], ("P39",), None
    # A participant handed no arguments or no result reads the root as undefined.
    if root == "args":
        failure, node = writes.attempt(w, UNDEFINED if inv.args is NOTHING else inv.args, path, op)
        return failure, ("P25",), node
    failure, node = writes.attempt(w, UNDEFINED if inv.result is NOTHING else inv.result, path, op)
    return failure, ("P11",), node


def _message(op: str, key: str, exists: bool) -> str:
    if op == "delete":
        return texts.frozen_delete(key)
    if op == "define":
        return texts.frozen_define(key) if exists else texts.frozen_define_new(key)
    return texts.frozen_set(key) if exists else texts.frozen_add(key)


__all__ = ["Invocation", "perform", "perform_sync", "gate", "NOTHING", "js_error"]
