"""The pipeline for one call, stage by stage (spec section 7: E, G, D, Q, F).

Each stage is one function named after the spec's letter; each branch cites the rule it
implements. A stage returns a ``Route``: where the call goes next and with what result.
The staged scheduler of section 3.6 falls out directly: ``prepare`` = entry + gate,
``dispatch``, ``finalize`` = post + finish; ``execute`` runs them back to back.

The gate's approval step (G3) is ``oracle.approval``, handed this module's waterfall; a
body's filesystem intents reach ``body_waterfall`` through its ``Invocation`` (P71); the
run_code bridge drives its sub-calls through ``STAGES`` (P120). The decision vocabularies
are the tables of ``kit.decisions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Literal


from . import approval, code_mode, texts
from ..kit.decisions import POST_KINDS, PRE_REASONS
from ..kit.jsvalue import (UNDEFINED, JsValue, NotLossless, Thrown, get, has_own, info_of, is_object,
                      is_undefined, js_error, json_text, message_of, message_value, snapshot, to_string,
                      token, truthy, type_error)
from ..kit.engine_texts import nullish_read
from ..kit.trace import EVENT_STAGES
from ..kit.record import Input, Record
from .schema_check import schema_violations
from .registry import World
from ..kit.scenario import DELEGATE, Behavior, Listener, ScenarioError, Tool
from ..kit.scheduler import fuse
from ..kit.trace import ANY
from ..kit.script import NOTHING, Invocation, perform, perform_sync

RouteKind = Literal["dispatch", "post", "final"]


@dataclass
class Route:
    kind: RouteKind
    result: Any = None


# ============================================================================ helpers

def E(m: JsValue) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "Error: " + to_string(m)}]


def failure(m: str, name: str | None = None, code: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"message": m}
    if name is not None:
        error["info"] = {"name": name, "code": code}
    return {"isError": True, "error": error, "content": E(m)}


def fail(x: JsValue) -> dict[str, Any]:
    """P9, P10: the canonical failure for a thrown value. ``message(x)`` is whatever an
    Error's message holds (not always a string); the content shows ``ToString`` of it."""
    info = info_of(x)  # read before the message, as the reference does
    m = message_value(x)
    error: dict[str, Any] = {"message": m}
    if info is not None:
        error["info"] = info
    return {"isError": True, "error": error, "content": E(m)}


def harness_error(cls: str, code: str, message: str) -> dict[str, Any]:
    return js_error(message, cls, name=cls, code=code, harness=True)


def unknown_tool_error(name: str) -> dict[str, Any]:
    return harness_error("ToolNotFoundError", "UNKNOWN_TOOL", texts.unknown_tool(name))


def output_error(name: str, violations: list[str]) -> dict[str, Any]:
    return harness_error("ToolOutputError", "INVALID_TOOL_OUTPUT", texts.invalid_output(name, violations))


def abort_bd(prior: Any = None) -> dict[str, Any]:
    return _with_contexts(failure(texts.ABORTED_BEFORE_DISPATCH, "AbortError", "ABORTED_BEFORE_DISPATCH"), prior)


def abort_a(prior: Any = None) -> dict[str, Any]:
    return _with_contexts(failure(texts.ABORTED, "AbortError", "ABORTED"), prior)


def _with_contexts(r: dict[str, Any], prior: Any) -> dict[str, Any]:
    # P68: an abort replacement keeps the replaced result's contexts, omitted when none.
    contexts = get(prior, "additionalContexts") if prior is not None else UNDEFINED
    if isinstance(contexts, list) and contexts:
        r["additionalContexts"] = contexts
    return r


def handed(w: World, r: Any) -> Any:
    """P11: a result handed to a participant is deep-frozen. The reference's departure
    (``oracle.departures``) freezes only what its output contract and materialization build
    (a success, a denial, a final outcome): what else it hands on stays a writable object."""
    return r if "P11" in w.departures else w.freeze(r)


def canonical(w: World, rec: Record, r: JsValue) -> bool:
    """P63 step 1: a result the registry built for this very execution. The reference's P11
    departure marks only what its output contract built (frozen): a failure or an abort its
    terminal made is rebuilt from what it holds now (a wrapper may have written it)."""
    if not isinstance(r, dict) or id(r) not in rec.built:
        return False
    # The reference's P24 departure: it marks a result with the record's token as it is then,
    # and recognizes it by the token as it is now (a wrapper may have written the token).
    marked = rec.built[id(r)][1]
    same_token = marked is rec.token or (isinstance(marked, str) and marked == rec.token)
    return same_token and ("P11" not in w.departures or w.is_frozen(r))


def own_record(w: World, r: dict[str, Any], rec: Record) -> dict[str, Any]:
    rec.built[id(r)] = (r, rec.token)  # holding the object keeps its id unique for the run
    return r


# ============================================================================ waterfalls

async def waterfall(w: World, event: str, rec: Record, args: dict[str, Any], terminal: Any,
                    rules: tuple[str, ...], freeze_next: bool = False, agent: str | None = None) -> JsValue:
    """P5, P6: run the listeners selected now, in order, sharing one consuming cursor.

    ``terminal`` is an async function. With ``freeze_next`` (``tools/execute``, D1) every
    value a ``next()`` resolves to is deep-frozen before the caller receives it.
    """
    listeners = w.selected(event, rec.agent if agent is None else agent)
    if not listeners:  # the bare default: nothing to hand a next() (most waterfalls of a plain call)
        return await terminal()
    # The waterfall's result is the first listener's return value (P5), not frozen: only
    # what next() hands a listener is (D1).
    return await _Cursor(w, event, rec, args, terminal, rules, freeze_next, listeners).step()


@dataclass
class _Cursor:
    """P6: the one consuming cursor of a waterfall, shared by every ``next()``. (An object,
    not closures calling each other: those would form a reference cycle per waterfall, left
    to the cyclic collector, three waterfalls a call.)"""

    w: World
    event: str
    rec: Record
    args: dict[str, Any]
    terminal: Any
    rules: tuple[str, ...]
    freeze_next: bool
    listeners: list[Listener]
    position: int = 0

    async def step(self) -> JsValue:
        position = self.position
        self.position += 1  # P6: every next(), whoever makes it, advances the shared cursor
        if position < len(self.listeners):
            return await self.call_listener(self.listeners[position], position)
        return await self.terminal()

    async def next_(self, caller: int | None = None) -> JsValue:
        if caller is not None and self.position != caller + 1:
            # P6: the shared cursor moved on since the listener at ``caller`` was called (its
            # second next(), or one after an inner listener's): what runs now is P6's decision,
            # where a cursor per listener would run the one after it again (P5 alone).
            # In tools/execute that next() re-runs dispatch in full: P69's retry.
            self.w.obs(self.rec.callId, EVENT_STAGES[self.event], "cursor", None, self.position,
                       ("P6", "P69") if self.freeze_next else ("P6",))
        value = await self.step()
        return handed(self.w, value) if self.freeze_next else value

    async def call_listener(self, l: Listener, position: int) -> JsValue:
        if l.id == TIMEOUT_POLICY:
            return await timeout_wrapper(self.w, self.rec, self.next_)
        inv = Invocation(who=l.id, stage=EVENT_STAGES[self.event], record=self.rec, rules=self.rules,
                         next=partial(self.next_, position), **self.args)
        return await perform(self.w, inv, l.script or _DELEGATE)


_DELEGATE = Behavior.model_validate(DELEGATE)  # a listener without a script: validated once (never changed)



async def body_waterfall(w: World, rec: Record, event: str, target: JsValue) -> JsValue:
    """P71: a waterfall a tool body dispatches (``fs/write-intent``, ``fs/edit-intent``).
    Its listeners are handed the target and the record; the bare default decides nothing
    (``undefined``). It is the body's own work: no registry stage wraps it."""
    return await waterfall(w, event, rec, {"args": target}, _undecided, ("P5", "P6", "P71"))


async def _undecided() -> JsValue:
    return UNDEFINED


TIMEOUT_POLICY = "timeout-policy"


def _times_out(w: World, rec: Record) -> bool:
    """Whether the shipped timeout policy acts for the call (P70): installed, for a visible
    definition that declares ``timeoutMs``."""
    tool = w.view(rec.agent, rec.name)
    return (tool is not None and tool.timeoutMs is not None
            and any(l.id == TIMEOUT_POLICY for l in w.selected("tools/execute", rec.agent)))


async def timeout_wrapper(w: World, rec: Record, next_: Any) -> JsValue:
    """P70: the shipped timeout policy, a ``tools/execute`` listener installed before the
    scenario's own. It acts only for a visible definition that declares ``timeoutMs``."""
    tool = w.view(rec.agent, rec.name)
    if tool is None or tool.timeoutMs is None:
        return await next_()
    prev = rec.signal
    deadline = w.signal(f"deadline:{rec.callId}:{w.sched.now}")
    fired = False
    timer = w.sched.timer(tool.timeoutMs)

    def expire(_d: Any) -> None:
        nonlocal fired
        if not deadline.aborted:
            fired = True
            deadline.abort(ANY)  # P70 does not say what the deadline's abort reason is
    timer.on_settle(expire)
    detach = prev.listen(lambda s: deadline.abort(s.reason))
    if prev.aborted:
        deadline.abort(prev.reason)
    w.obs(rec.callId, "execute", "call", TIMEOUT_POLICY, tool.timeoutMs, ("P70",))
    rec.signal = deadline
    try:
        r = await next_()
    finally:
        rec.signal = prev
        detach()
        w.sched.cancel(timer)
    if fired:  # P70.4: the policy's own failure replaces next()'s result
        w.obs(rec.callId, "checkpoint", "abort", None, "deadline", ("P70",))
        r = failure(texts.timed_out(tool.timeoutMs), "ToolTimeoutError", "TOOL_TIMEOUT")
    w.obs(rec.callId, "execute", "return", TIMEOUT_POLICY, r, ("P70",))
    return r


# ============================================================================ E: entry

def entry(w: World, inp: Input) -> tuple[Record, Route | None]:
    """E1-E4. Returns the record and a final route, or None to go on to the gate."""
    caller = inp.signal
    visible = w.view(inp.agent, inp.name)  # E1 / P26: the definition visible at entry
    collapsed = visible is not None and w.collapses(inp.agent, inp.name, inp.parent is not None)  # P28
    rec = Record(token=w.mint_token(), callId=inp.callId,
                 rootCallId=inp.rootCallId if inp.rootCallId is not None else inp.callId,  # P23
                 name=inp.name, agent=inp.agent, parent=inp.parent, arguments=UNDEFINED,
                 signal=caller, caller=caller, abort_target=inp.abort_target or caller,
                 finalizer=visible if visible is not None and visible.finalizeContent is not None else None)
    w.obs(rec.callId, "entry", "start", None, {"token": rec.token, "visible": visible is not None},
          ("P22", "P23", "P26"), fresh=True)
    if visible is None and (hidden := w.hidden(inp.agent, inp.name)) is not None:  # P56: a restriction hides it
        w.obs(rec.callId, "entry", "hide", None, hidden.ref, ("P56", "P26"))
    try:  # E2: P25, P27
        try:
            args = snapshot(inp.arguments)
        except NotLossless:
            raise Thrown(type_error(texts.ARGS_NOT_LOSSLESS)) from None
    except Thrown as t:
        if collapsed and not caller.aborted:
            rec.finalizer = None  # P28: a collapsed call that could never run keeps no finalizer
        w.obs(rec.callId, "entry", "snapshot", None, {"ok": False}, ("P12", "P13", "P27"), fresh=True)
        return rec, _final(w, rec, fail(t.value), ("P27",))
    rec.arguments = w.freeze(args)
    w.obs(rec.callId, "entry", "snapshot", None, {"ok": True, "arguments": args}, ("P25", "P12", "P13"), fresh=True)
    if collapsed:  # E3: P28
        if caller.aborted:
            return rec, _final(w, rec, abort_bd(), ("P28", "P29"))
        rec.finalizer = None
        w.obs(rec.callId, "entry", "collapse", None, None, ("P28",))
        return rec, _final(w, rec, fail(harness_error("ToolNotFoundError", "UNKNOWN_TOOL",
                                                     texts.collapsed(inp.name))), ("P28",))
    if caller.aborted:  # E4: P29
        return rec, _final(w, rec, abort_bd(), ("P29",))
    return rec, None


def _final(w: World, rec: Record, r: dict[str, Any], rules: tuple[str, ...]) -> Route:
    w.obs(rec.callId, "route", "to", None, "final", rules)
    return Route("final", r)


def _post(w: World, rec: Record, r: dict[str, Any], rules: tuple[str, ...], denied: bool = False) -> Route:
    w.obs(rec.callId, "route", "to", None, "denied" if denied else "post", rules)
    return Route("post", r)


# ============================================================================ G: gate

async def gate(w: World, rec: Record) -> Route:
    """G1-G6: pre-execute, approval, guards and the pre-dispatch checkpoints."""
    try:
        return await _gate(w, rec)
    except Thrown as t:  # P8, P34, P40, P49: any throw in G is a final failure
        return _final(w, rec, fail(t.value), ("P8",))


async def _gate(w: World, rec: Record) -> Route:
    # G1: P30, P5
    # P57: policy runs for a name that does not resolve as for any other
    unknown = ("P57",) if w.view(rec.agent, rec.name) is None else ()
    w.obs(rec.callId, "pre-execute", "start", None, None, ("P30", *unknown))
    try:
        d = await waterfall(w, "tools/pre-execute", rec, {}, _allow, ("P5", "P30"))
    except Thrown as t:
        w.obs(rec.callId, "pre-execute", "throw", None, t.value, ("P34",))
        return _final(w, rec, fail(t.value), ("P34",))
    w.obs(rec.callId, "pre-execute", "end", None, d, ("P30",))
    # G2: P31, P35 (reading kind or reason may throw: the throw is the result)
    try:
        kind, reason = _well_formed_pre(d)
    except Thrown as t:
        return _final(w, rec, fail(t.value), ("P35",))
    if kind is None:
        return _final(w, rec, fail(type_error(texts.INVALID_PRE_DECISION)), ("P31", "P34", "P35"))

    # G3: approval, only after an ask (P36..P41)
    asked = kind == "ask"
    if kind == "ask":
        kind, reason, cancelled = await approval.ask(w, rec, reason, waterfall)
        # G4: P42
        if cancelled and rec.caller.aborted:
            return _post(w, rec, own_record(w, handed(w, abort_bd()), rec), ("P42",))
    elif kind == "deny":
        w.obs(rec.callId, "pre-execute", "deny", None, reason, ("P32",))

    # G5: guards run only after an allow (P44); the first non-undefined return denies (P46)
    if kind == "allow":
        reason = _guards(w, rec)
        # P50: a guard's returned promise is its return value, used as returned (not awaited)
        deny_rules: tuple[str, ...] = ("P46", "P47", *(("P50",) if token(reason) == "promise" else ()))
    else:
        # an approval's denial carries its outcome's reason (P40, P41), a pre-execute deny its own
        deny_rules = ("P3", "P40", "P41") if asked else ("P3", "P32")
    if not is_undefined(reason):
        try:
            denial = _denial(w, rec, reason)
        except Thrown as t:
            # P46, P47: a guard denial that cannot be materialized (not lossless JSON, or a
            # ToString that throws) ends the call with a final failure, under core too. (Only
            # a guard's can fail: every other reason is a string, P31, P41.)
            return _final(w, rec, fail(t.value), deny_rules)
        return _post(w, rec, denial, deny_rules, denied=True)
    # G6: P53
    if rec.caller.aborted:
        w.obs(rec.callId, "checkpoint", "abort", None, "after-guards", ("P53",))
        return _post(w, rec, own_record(w, handed(w, abort_bd()), rec), ("P53",))
    w.obs(rec.callId, "route", "to", None, "dispatch", ("P54",))
    return Route("dispatch")


async def _allow() -> JsValue:
    return {"kind": "allow"}


def _well_formed_pre(d: JsValue) -> tuple[str | None, JsValue]:
    """P31: (kind, reason) of a well-formed decision, or (None, ...) when it is not. What is
    not an object (a primitive, an array, a function) has no ``kind``: it reads undefined."""
    kind = get(d, "kind")
    rule = PRE_REASONS.get(kind) if isinstance(kind, str) else None
    reason = get(d, "reason") if rule in ("string", "absent-or-string") else UNDEFINED  # an allow's is never read
    well_formed = rule == "ignored" or isinstance(reason, str) or (rule == "absent-or-string" and is_undefined(reason))
    return (kind, reason) if well_formed else (None, UNDEFINED)


def _denial(w: World, rec: Record, reason: JsValue) -> dict[str, Any]:
    """P33, P47: the denial for ``reason``, materialized (a throw here is a G-throw)."""
    candidate = {"content": [{"type": "text", "text": "Error: " + to_string(reason)}],
                 "isError": True, "error": {"message": reason}}
    return own_record(w, materialize(w, candidate), rec)


def _guards(w: World, rec: Record) -> JsValue:
    """P45, P46, P49, P50: the guard pass; returns the first non-undefined value."""
    w.obs(rec.callId, "guards", "start", None, None, ("P44",))
    for layer in w.guard_layers_for(rec.agent):
        i = 0
        while i < len(layer):  # read live: guards appended during the pass are reached
            entry = layer[i]
            i += 1
            if not entry.active:
                continue
            inv = Invocation(who=entry.guard.id, stage="guards", record=rec, rules=("P45", "P46", "P50"))
            try:
                v = perform_sync(w, inv, entry.guard.script)
            except Thrown as t:
                w.obs(rec.callId, "guards", "throw", None, t.value, ("P49",))
                raise
            if not is_undefined(v):
                w.obs(rec.callId, "guards", "end", None, v, ("P46",))
                return v
    w.obs(rec.callId, "guards", "end", None, UNDEFINED, ("P46",))
    return UNDEFINED


# ============================================================================ D: dispatch

async def dispatch(w: World, rec: Record) -> Route:
    """D1-D4: the ``tools/execute`` waterfall around the terminal, then normalization."""
    try:
        w.obs(rec.callId, "execute", "start", None, None, ("P54",))
        try:
            reached: list[bool] = []

            async def to_terminal() -> dict[str, Any]:
                reached.append(True)
                return await terminal(w, rec)
            r = await waterfall(w, "tools/execute", rec, {}, to_terminal, ("P5", "P62"), freeze_next=True)
        except Thrown as t:
            w.obs(rec.callId, "execute", "throw", None, t.value, ("P65",))
            raise
        if not reached:  # P66: a wrapper returned without next(): the body does not run
            w.obs(rec.callId, "dispatch", "outcome", None, "short-circuit", ("P66",))
        # P62: the first listener's return; the shipped timeout policy's own when it acts (P70)
        w.obs(rec.callId, "execute", "end", None, r, ("P62", "P70") if _times_out(w, rec) else ("P62",))
        n = normalize(w, rec, r)  # D2: P63, P64
    except Thrown as t:
        return _final(w, rec, fail(t.value), ("P64", "P65"))
    if rec.deferred:  # D3: P67
        w.obs(rec.callId, "execute", "defer", None, len(rec.deferred), ("P67",))
        contexts = get(n, "additionalContexts")
        n = own_record(w, {**n, "additionalContexts": [*rec.deferred, *(contexts if isinstance(contexts, list) else [])]}, rec)
    if not n["isError"] and rec.caller.aborted:  # D4: P68
        w.obs(rec.callId, "checkpoint", "abort", None, "after-execute", ("P68",))
        n = own_record(w, abort_a(n) if rec.body_invoked else abort_bd(n), rec)
    return _post(w, rec, handed(w, n), ("P62", "P76"))


async def terminal(w: World, rec: Record) -> dict[str, Any]:
    """D1's terminal T: one dispatch of the body (P55, P58, P59, P60, P61, P69)."""
    assert rec.caller is not None
    fused, detach = fuse(rec.caller, rec.signal, f"fused:{rec.callId}")
    if fused.aborted:  # P61 at launch
        w.obs(rec.callId, "dispatch", "abort", None, "at-launch", ("P61",))
        return own_record(w, abort_bd(), rec)
    prev = rec.signal
    rec.signal = fused
    try:
        collapsed = _collapses(w, rec)
        tool = w.view(rec.agent, rec.name) if not collapsed else None
        if tool is None:  # P56
            if not collapsed and (hidden := w.hidden(rec.agent, rec.name)) is not None:
                w.obs(rec.callId, "dispatch", "hide", None, hidden.ref, ("P56",))
            w.obs(rec.callId, "dispatch", "resolve", None, None, ("P56",))
            w.obs(rec.callId, "dispatch", "outcome", None, "unknown", ("P56", "P114") if rec.name == "run_code" else ("P56",))
            raise Thrown(unknown_tool_error(rec.name))
        w.obs(rec.callId, "dispatch", "resolve", None, tool.ref, ("P56",))
        rec.body_invoked = True  # P59
        v = await body(w, rec, tool)
        s = success(w, rec, tool, v)  # P72, P73
        res = abort_a() if fused.aborted else s  # P61 at return
        if fused.aborted:
            w.obs(rec.callId, "dispatch", "abort", None, "at-return", ("P61",))
    except Thrown as t:
        if rec.body_invoked:  # P55: the body's (or its output contract's) throw becomes a failure
            w.obs(rec.callId, "dispatch", "outcome", None, "failure", ("P55",))
        res = fail(t.value)
    finally:
        detach()
        rec.signal = prev  # P60: put back what was on the record before this terminal call
    return own_record(w, res, rec)


def _collapses(w: World, rec: Record) -> bool:
    return w.collapses(rec.agent, rec.name, rec.parent is not None)


async def body(w: World, rec: Record, tool: Tool) -> JsValue:
    """P58: the body, awaited to completion. ``defineTool`` validates arguments first (P75)."""
    inv = Invocation(who=tool.ref, stage="body", record=rec, rules=("P55", "P58"), args=rec.arguments,
                     fs_intent=body_waterfall)
    if tool.define:
        violations = schema_violations(tool.parameters, rec.arguments, "arguments")
        if violations:
            w.obs(rec.callId, "body", "throw", None, "INVALID_ARGS", ("P75",))  # before the script runs
            raise Thrown(harness_error("ToolArgsError", "INVALID_ARGS", texts.invalid_args(violations)))
    try:
        if code_mode.is_run_code(tool):  # P115: the reserved transport's body is the bridge
            return await code_mode.run_code(w, rec, STAGES)
        return await perform(w, inv, tool.body)
    finally:
        w.open_gate(rec.callId)


def success(w: World, rec: Record, tool: Tool, candidate: JsValue) -> dict[str, Any]:
    """P72, P73, P74: a value becomes a success through the output contract, or throws."""
    try:  # step 1
        value = snapshot(candidate)
    except NotLossless:
        w.obs(rec.callId, "materialize", "outcome", None, "output-contract", ("P72",))
        raise Thrown(output_error(tool.name, [texts.VALUE_NOT_LOSSLESS])) from None
    except Thrown as t:
        w.obs(rec.callId, "materialize", "outcome", None, "output-contract", ("P72",))
        raise Thrown(output_error(tool.name, [texts.value_snapshot_failed(message_of(t.value))])) from None
    violations = schema_violations(tool.output.schema_, value, "value")  # step 2
    if violations:
        w.obs(rec.callId, "materialize", "outcome", None, "output-contract", ("P72",))  # why a failure
        raise Thrown(output_error(tool.name, violations))
    w.freeze(value)  # step 3
    content = _project(w, rec, tool, "render", value)  # step 4
    out: dict[str, Any] = {"isError": False, "value": value, "content": content}
    if rec.parent is None and tool.output.presentationMeta is not None:  # step 5, P74
        out["meta"] = _project(w, rec, tool, "presentationMeta", value)
    if rec.concluded:  # P67
        out["concludesTurn"] = True
    return own_record(w, materialize(w, out), rec)


def _project(w: World, rec: Record, tool: Tool, which: str, value: JsValue) -> JsValue:
    if code_mode.is_run_code(tool):  # P128: run_code renders its logs and result
        return code_mode.render(value)
    behavior = getattr(tool.output, which)
    if behavior is None:  # the default render: the value's JSON text
        return [{"type": "text", "text": json_text(value)}]
    inv = Invocation(who=f"{tool.ref}.{which}", stage=which, record=rec, rules=("P73",))
    try:
        projected = perform_sync(w, inv, behavior)
    except Thrown as t:
        raise Thrown(output_error(tool.name, [f"output.{which} failed: {message_of(t.value)}"])) from None
    try:
        return snapshot(projected)
    except NotLossless:
        raise Thrown(output_error(tool.name, [f"output.{which} returned non-lossless JSON"])) from None
    except Thrown as t:
        raise Thrown(output_error(tool.name, [f"output.{which} failed: {message_of(t.value)}"])) from None


def normalize(w: World, rec: Record, r: JsValue) -> dict[str, Any]:
    """P63: normalize the waterfall's result. Throws are D-throws (final, P64)."""
    if canonical(w, rec, r):
        return r  # step 1: built by the registry for this very execution
    if r is None or is_undefined(r):
        w.obs(rec.callId, "materialize", "outcome", None, "nullish", ("P63",))  # why the call ends here
        raise Thrown(type_error(texts.NULLISH_WRAPPER_RESULT))
    if truthy(get(r, "isError")):  # step 2
        w.obs(rec.callId, "materialize", "outcome", None, "authored-failure", ("P63",))  # what it keeps
        n: dict[str, Any] = {"isError": True, "error": get(r, "error"), "content": get(r, "content")}
        meta = get(r, "meta")
        if not is_undefined(meta):
            n["meta"] = meta
        contexts = get(r, "additionalContexts")
        if not is_undefined(contexts):
            n["additionalContexts"] = contexts
        return own_record(w, n, rec)
    tool = w.view(rec.agent, rec.name) if not _collapses(w, rec) else None  # step 3
    if tool is None:
        raise Thrown(unknown_tool_error(rec.name))
    s = dict(success(w, rec, tool, get(r, "value")))
    contexts = get(r, "additionalContexts")
    if not is_undefined(contexts):
        s["additionalContexts"] = contexts
    return own_record(w, s, rec)


# ============================================================================ Q: post

class PostThrow(Thrown):
    """A throw of the post-execute stage that the registry itself raises, with its rules."""

    def __init__(self, value: JsValue, *rules: str) -> None:
        super().__init__(value)
        self.rules = rules


async def post(w: World, rec: Record, r: dict[str, Any]) -> dict[str, Any]:
    """Q1-Q5: ``tools/post-execute`` and its decision (P76..P89)."""
    try:
        return await _post_stage(w, rec, r)
    except Thrown as t:  # Q5: P86
        w.obs(rec.callId, "route", "to", None, "post-failed", getattr(t, "rules", ("P86",)))
        return fail(t.value)


async def _post_stage(w: World, rec: Record, r: dict[str, Any]) -> dict[str, Any]:
    handed(w, r)
    w.obs(rec.callId, "post-execute", "start", None, r, ("P76",))
    try:
        p = await waterfall(w, "tools/post-execute", rec, {"result": r}, _accept, ("P5", "P76"))
    except Thrown as t:
        w.obs(rec.callId, "post-execute", "throw", None, t.value, ("P86",))
        raise
    w.obs(rec.callId, "post-execute", "end", None, p, ("P77", "P78"))
    # Q2: P78, P79
    try:
        well_formed = is_object(p) and not isinstance(p, list) and get(p, "kind") in POST_KINDS
    except Thrown as t:
        raise PostThrow(t.value, "P79") from None
    if not well_formed:
        raise PostThrow(type_error(texts.INVALID_POST_DECISION), "P78", "P79")
    kind = get(p, "kind")
    dc_raw = get(p, "additionalContexts")
    dc = [] if is_undefined(dc_raw) or dc_raw is None else dc_raw
    # what the decision makes of the result: the rules an implementation breaks when it
    # makes something else of it
    decided = ("P83", "P84") if kind == "block" else ("P81",) if has_own(p, "value") else ("P80",)
    w.obs(rec.callId, "post-execute", "outcome", None, kind,
          decided + (("P85",) if isinstance(dc, list) and dc else ()))
    if kind == "block":  # P83, P84
        feedback = get(p, "feedback")
        try:
            message = block_message(feedback)
        except Thrown as t:
            raise PostThrow(t.value, "P84") from None
        out: dict[str, Any] = {"isError": True, "content": feedback, "error": {"message": message}}
        if isinstance(dc, list) and dc:
            out["additionalContexts"] = dc
        return own_record(w, out, rec)
    if has_own(p, "content") and has_own(p, "value"):  # P82.1
        raise PostThrow(type_error(texts.ACCEPT_BOTH), "P82")
    prior = r.get("additionalContexts", [])
    merged = [*(prior if isinstance(prior, list) else []), *(dc if isinstance(dc, list) else [])]  # P85
    if has_own(p, "value"):  # P81, P82
        if truthy(get(r, "isError")):  # a result handed out writable may have lost it (oracle.departures)
            raise PostThrow(type_error(texts.ACCEPT_VALUE_ON_FAILURE), "P81", "P82", "P87")
        tool = w.view(rec.agent, rec.name) if not _collapses(w, rec) else None
        if tool is None:
            raise PostThrow(unknown_tool_error(rec.name), "P82", "P56")
        try:
            out = dict(success(w, rec, tool, get(p, "value")))
        except Thrown as t:
            raise PostThrow(t.value, "P81", "P82", "P73") from None
        if merged:
            out["additionalContexts"] = merged
    else:  # P80: content only
        out = dict(r)
        content = get(p, "content")
        if not is_undefined(content):
            out["content"] = content
        if merged:
            out["additionalContexts"] = merged
    if not truthy(get(out, "isError")) and rec.caller.aborted:  # Q4: P88
        w.obs(rec.callId, "checkpoint", "abort", None, "after-post", ("P88",))
        out = abort_a(out) if rec.body_invoked else abort_bd(out)
    return own_record(w, out, rec)


async def _accept() -> JsValue:
    return {"kind": "accept"}


def block_message(feedback: JsValue) -> str:
    """P84: the block failure's message, derived from its feedback."""
    if not isinstance(feedback, list):
        raise Thrown(type_error(texts.FEEDBACK_NOT_ARRAY))
    parts = []
    for block in feedback:
        if block is None or is_undefined(block) or token(block) == "hole":
            # Reading a type off null or undefined throws, as in the reference release: the
            # post-execute stage throws, as for feedback that is not an array.
            what = "null" if block is None else "undefined"
            raise Thrown(type_error(nullish_read(what, "type")))
        kind = get(block, "type") if is_object(block) else UNDEFINED
        if kind == "text":
            text = get(block, "text")
            parts.append("" if text is None or is_undefined(text) else to_string(text))
        else:
            parts.append(f"[{to_string(kind)} content]")
    joined = "\n".join(parts)
    return joined if joined else texts.BLOCK_FALLBACK


# ============================================================================ F: finish

def materialize(w: World, r: JsValue) -> dict[str, Any]:
    """P90, P91: the outcome as a detached, deeply frozen lossless snapshot, or a throw."""
    content = get(r, "content")
    meta = get(r, "meta")
    contexts = get(r, "additionalContexts")
    presentation: dict[str, Any] = {"content": content}
    if not is_undefined(meta):
        presentation["meta"] = meta
    if not is_undefined(contexts):
        presentation["additionalContexts"] = contexts
    if truthy(get(r, "isError")):
        candidate = {"isError": True, "error": get(r, "error"), **presentation}
        value = NOTHING
    else:
        candidate = {"isError": False, **presentation}
        if get(r, "concludesTurn") is True:
            candidate["concludesTurn"] = True
        value = get(r, "value")
    try:
        out = snapshot(candidate)
    except NotLossless:
        raise Thrown(type_error(texts.RESULT_NOT_LOSSLESS)) from None
    if value is not NOTHING:
        out["value"] = value  # attached again without a second snapshot (P91)
    return w.freeze(out)


def finish(w: World, rec: Record, r: JsValue) -> dict[str, Any]:
    """F1-F4: materialize, finalizeContent, freeze the record, notify ``tools/result``."""
    try:  # F1
        m = materialize(w, r)
    except Thrown as t:
        w.obs(rec.callId, "materialize", "throw", None, t.value, ("P90", "P91"))
        m = materialize(w, fail(t.value))
    current = w.view(rec.agent, rec.name)
    if (current if current is not None and current.finalizeContent is not None else None) is not rec.finalizer:
        w.obs(rec.callId, "finalize", "resolve", None, None, ("P26",))  # not what is visible now
    if rec.finalizer is not None:  # F2: P93, P94, P95, P96
        behavior = rec.finalizer.finalizeContent
        assert behavior is not None
        w.obs(rec.callId, "finalize", "start", None, m, ("P93",))
        inv = Invocation(who=f"{rec.finalizer.ref}.finalizeContent", stage="finalize", record=rec,
                         rules=("P93", "P94"), result=m)
        try:
            c = perform_sync(w, inv, behavior)
            f = materialize(w, m if is_undefined(c) else {**m, "content": c})
        except Thrown as t:
            w.obs(rec.callId, "finalize", "throw", None, t.value, ("P95", "P96"))
            try:
                f = materialize(w, fail(t.value))
            except Thrown:
                # An Error whose message is not lossless (undefined, say): its canonical
                # failure cannot be materialized, and P95/P96 do not say what then (rc.8's
                # execute() rejects). Not a verdict: the scenario leaves the spec.
                raise ScenarioError(f"call {rec.callId}", "finalizeContent threw a value whose canonical failure is "
                                    "not lossless JSON; the spec does not say what the outcome is then") from None
        w.obs(rec.callId, "finalize", "end", None, f, ("P94",))
    else:
        f = m
    rec.frozen = True  # F3: P99
    w.obs(rec.callId, "result", "start", None, f, ("P98", "P99"))
    rejections = []
    for l in w.selected("tools/result", rec.agent):  # P100
        inv = Invocation(who=l.id, stage="result", record=rec, rules=("P100",), result=f)
        try:
            returned = perform_sync(w, inv, l.script or Behavior())
        except Thrown as t:
            w.trace.warnings.append(texts.observer_failed(rec.name, rec.current_call_id, message_of(t.value)))  # P101
            continue
        if token(returned) == "promise" and "rejects" in returned:
            rejections.append(returned["rejects"])
    # P101: a rejection is reported asynchronously, after the notification's synchronous part.
    for x in rejections:
        w.trace.warnings.append(texts.observer_failed(rec.name, rec.current_call_id, message_of(x)))
    w.obs(rec.callId, "result", "end", None, None, ("P98",))
    return f  # F4: the very object the observers received


# ============================================================================ the staged scheduler

async def prepare(w: World, inp: Input) -> tuple[Record, Route]:
    rec, route = entry(w, inp)
    if route is not None:
        return rec, route
    return rec, await gate(w, rec)


async def finalize(w: World, rec: Record, route: Route) -> dict[str, Any]:
    r = route.result
    if route.kind == "post":
        r = await post(w, rec, r)
    return finish(w, rec, r)


async def execute(w: World, inp: Input) -> dict[str, Any]:
    """``execute()``: prepare, dispatch, finalize back to back (section 3.6)."""
    rec, route = await prepare(w, inp)
    if route.kind == "dispatch":
        route = await dispatch(w, rec)
    return await finalize(w, rec, route)


STAGES = code_mode.Stages(prepare=prepare, dispatch=dispatch, finalize=finalize, waterfall=waterfall)
"""What the run_code bridge drives its sub-calls through (P120)."""
