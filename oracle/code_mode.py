"""Code Mode's ``run_code`` bridge (spec section 5.15, P114-P128).

The pipeline calls ``run_code`` here at the one point where its body runs (``oracle.pipeline
.body``), after ``defineTool``'s argument check (P115). The bridge:

- checks the description and the code runtime (P115);
- hands the runtime one binding per tool of the agent's schema list (P117);
- turns each accepted binding call into a sub-call with its own identity (P118, P119) and
  sends it through the whole pipeline by the staged scheduler (P120);
- schedules sub-calls in one ordered lane of starts and commits, bodies overlapping up to
  ``maxParallelSubCalls`` (P121): ``Bridge._turn`` is that lane's step;
- logs each started sub-call as ``tool/code-dispatch-start`` and ``tool/code-dispatch``
  through the ``tools/code-dispatch-log`` waterfall (P122, P123);
- settles bindings at commit, and ends the run when its signal aborts (P124, P125);
- defers image contents and contexts on the ``run_code`` record and forwards the conclusion
  mark (P126, P127);
- makes the value and its content (P128).

The pipeline's stages reach the bridge as a ``Stages`` value, so this module needs nothing
above it. The lane yields one turn after each start (``Scheduler.tick``), as JavaScript's
``await start()`` does: a program that was woken meanwhile submits its next calls before the
lane looks at the queue again. After a commit the lane goes on at once, as in JavaScript,
where the settled binding's program resumes only after the lane's next step has begun.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from . import texts
from .classify import classify
from ..kit.jsvalue import (clone, JsValue, NotLossless, Thrown, get, is_lossless, js_error, json_string, message_of, number_to_string,
                      snapshot, to_string, token)
from ..kit.program import RunRequest, run_program
from ..kit.record import Input, Record
from .registry import World
from ..kit.scheduler import Deferred, Lane, Signal, Task, settle_all
from .tool_definitions import RunCodeTool
from ..kit.trace import call_result

MAX_JSON_INDENT = 10  # P128: JSON.stringify caps indentation at ten characters


@dataclass(frozen=True)
class Stages:
    """The pipeline's staged scheduler (section 3.6) and its waterfall, as the bridge uses them."""
    prepare: Callable[[World, Input], Awaitable[tuple[Record, Any]]]
    dispatch: Callable[[World, Record], Awaitable[Any]]
    finalize: Callable[[World, Record, Any], Awaitable[dict[str, Any]]]
    waterfall: Callable[..., Awaitable[JsValue]]


# ============================================================================ the body

async def run_code(w: World, rec: Record, stages: Stages) -> JsValue:
    """The body of ``run_code`` (P115-P128). Returns the run's value or raises Thrown."""
    description = get(rec.arguments, "description")
    if js_trim(description) == "":  # P115
        w.obs(rec.callId, "body", "throw", None, "BLANK_DESCRIPTION", ("P115",))
        raise Thrown(js_error(texts.BLANK_DESCRIPTION))
    if not w.scenario.codeRuntime:  # P115: the deployment's configured mode is named
        w.obs(rec.callId, "body", "throw", None, "NO_CODE_RUNTIME", ("P115",))
        raise Thrown(js_error(texts.no_code_runtime(w.scenario.mode)))
    bridge = Bridge(w, rec, stages)
    detach = rec.signal.listen(lambda s: bridge.signal.abort(s.reason))  # P125
    try:
        bindings = {name: bridge.binding(name) for name in w.visible_names(rec.agent)}  # P117
        for name in w.hidden_names(rec.agent):  # P56: not bound because a restriction hides it
            w.obs(rec.callId, "code-mode", "hide", None, name, ("P56", "P117"))
        request = RunRequest(call=rec.callId, code=str(get(rec.arguments, "code")), bindings=bindings,
                             signal=bridge.signal)
        # P125: the run is over when run() settles, resolved or rejected (a crashed runtime):
        # queued sub-calls are abandoned, started ones commit before the body returns or its
        # rejection propagates (JavaScript's `finally`; not a Python `finally`, which would
        # also await while a stopped run closes this coroutine).
        try:
            result = await run_program(w, request)
        except Thrown:
            bridge.signal.abort(texts.RUN_SETTLED)
            await bridge.drain()
            raise
        bridge.signal.abort(texts.RUN_SETTLED)
        await bridge.drain()
        error = result.get("error")
        if error is not None:  # P128: CodeRunFailedError
            raise Thrown(js_error(texts.code_run_failed(error["kind"], error["message"], result["logs"]),
                                  "CodeRunFailedError", name="CodeRunFailedError", code="CODE_RUN_FAILED",
                                  harness=True))
        value: dict[str, Any] = {"logs": result["logs"]}
        if "value" in result:
            value["result"] = result["value"]
        return value
    finally:
        detach()


def js_trim(s: JsValue) -> str:
    """``String.prototype.trim``: JavaScript's white space and line terminators."""
    return str(s).strip(_JS_SPACE)


_JS_SPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
             "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")


# ============================================================================ the bridge

@dataclass
class SubCall:
    """One accepted binding call (P119) on its way through the lane."""
    n: int
    input: Input
    logged: JsValue  # an independent copy of the dispatched snapshot, for the log (P122)
    outcome: Deferred  # what the binding awaits: resolved at commit, rejected when abandoned
    mode: str = "exclusive"
    flight: Deferred = field(default_factory=Deferred)
    settled: bool = False
    parked: tuple[Record, Any] | None = None


class Bridge:
    """The state of one ``run_code`` run: its signal, the queue, the lane and the log work."""

    def __init__(self, w: World, rec: Record, stages: Stages) -> None:
        self.w, self.rec, self.stages = w, rec, stages
        self.signal = Signal(f"run:{rec.callId}")  # the run's signal (P119, P125): the bridge's own
        self.pending: deque[SubCall] = deque()
        self.commits: deque[SubCall] = deque()
        self.in_flight: set[int] = set()
        self.log_work: dict[int, Task] = {}
        self.exclusive_active = False
        self.lane = Lane(w.sched, self._turn)
        self.accepted = 0  # binding calls accepted by this run of the body

    def obs(self, call: str | None, what: str, value: Any, rules: tuple[str, ...]) -> None:
        self.w.obs(call, "code-mode", what, None, value, rules)

    def reason(self) -> str:
        return to_string(self.signal.reason)

    # ------------------------------------------------------------------ bindings (P118, P119)

    def binding(self, name: str) -> Callable[[JsValue], Deferred]:
        def call(raw: JsValue) -> Deferred:
            return self.w.sched.start(self.call(name, raw))
        return call

    async def call(self, name: str, raw: JsValue) -> JsValue:
        if self.signal.aborted:  # P118.1: a rejected call consumes no number
            raise Thrown(js_error(texts.run_over(self.reason(), name, texts.NOT_DISPATCHED)))
        dispatched = _binding_arguments(raw)  # P118.2
        logged = clone(dispatched)
        # P119: numbered per run_code execution: a second run of the body (a wrapper's retry,
        # P69) goes on counting, so that sub-call ids stay unique within the execution. The
        # reference's departure counts per run of the body (this bridge's own count).
        self.rec.sub_calls += 1
        self.accepted += 1
        n = self.accepted if "P119" in self.w.departures else self.rec.sub_calls
        # The record's callId as it is now (a write of it applies under the P24 departure).
        inp = Input(callId=f"{self.rec.current_call_id}:code:{n}", rootCallId=self.rec.rootCallId, name=name,
                    arguments=dispatched, agent=self.rec.agent, parent=self.rec.token, signal=self.signal,
                    abort_target=self.rec.abort_target)
        sub = SubCall(n, inp, logged, Deferred())
        # What a participant's write into "the caller's input" meets: the bridge's own object,
        # which nothing reads again (P23).
        self.w.sub_inputs[inp.callId] = {
            "callId": inp.callId, "rootCallId": inp.rootCallId, "name": name, "arguments": clone(dispatched),
            **({"agent": {}} if inp.agent is not None else {}),
            "parent": {"$js": "symbol", "description": "execution token"}, "signal": {}}
        self.obs(inp.callId, "submit", {"n": n, "name": name}, ("P119",))
        self.pending.append(sub)
        self.lane.wakeup()
        self.lane.drive()
        outcome = await sub.outcome
        if self.signal.aborted:  # P125: the run ended before the sub-call committed
            raise Thrown(js_error(texts.run_over(self.reason(), name, texts.DISCARDED)))
        if outcome["isError"]:  # P124: the outcome's error.message, not its content
            raise Thrown(js_error(to_string(outcome["error"]["message"])))
        return outcome["value"]

    # ------------------------------------------------------------------ the lane (P121)

    async def _turn(self) -> str:
        """One step of the lane: a settled head commits first, in submission order; else the
        next queued call starts when its mode allows it (Lane: "again", "sleep" or "done")."""
        head = self.commits[0] if self.commits else None
        if head is not None and head.settled:
            self.commits.popleft()
            await self.commit(head)
            if head.mode == "exclusive":
                self.exclusive_active = False
            return "again"
        if self.pending:
            head = self.pending[0]
            if self.signal.aborted:  # P125: queued, never started
                self.pending.popleft()
                self.abandon(head)
                return "again"
            mode = classify(self.w, head.input)  # re-read just before each start
            free = not self.in_flight if mode == "exclusive" else len(self.in_flight) < self.w.scenario.maxParallelSubCalls
            if not self.exclusive_active and free:
                self.exclusive_active = mode == "exclusive"
                head.mode = mode
                self.pending.popleft()
                self.commits.append(head)
                await self.start(head)
                self.in_flight.add(head.n)
                head.flight.on_settle(lambda _d, n=head.n: self._landed(n))
                await self.w.sched.tick()
                return "again"
        return "sleep" if self.pending or self.commits or self.in_flight else "done"

    def _landed(self, n: int) -> None:
        self.in_flight.discard(n)
        self.lane.wakeup()

    async def start(self, sub: SubCall) -> None:
        """A start: the start event, then entry, pre-execute, approval and guards (P121, P122)."""
        if self.w.forged(self.rec.agent):
            # The reference's P24 departure: a participant wrote run_code's agent. rc.8's lane
            # reads the forged value's session here (exec.agent?.session.append) and throws
            # inside its start: the sub-call never settles, nor does the run.
            await Deferred()
        if self.rec.agent is not None:
            self.w.append_event(self.rec.agent, "tool/code-dispatch-start", self._entry(sub))
            self.w.obs(self.rec.callId, "tool-event", "append", None, {"type": "tool/code-dispatch-start"}, ("P122",))
        self.obs(sub.input.callId, "start", {"mode": sub.mode}, ("P121",))
        sub_rec, route = await self.stages.prepare(self.w, sub.input)
        if route.kind == "dispatch":
            self.w.sched.spawn(self._dispatch(sub, sub_rec))  # bodies overlap (P121)
            return
        sub.parked, sub.settled = (sub_rec, route), True
        sub.flight.resolve(None)

    async def _dispatch(self, sub: SubCall, sub_rec: Record) -> None:
        route = await self.stages.dispatch(self.w, sub_rec)
        sub.parked, sub.settled = (sub_rec, route), True
        sub.flight.resolve(None)

    async def commit(self, sub: SubCall) -> None:
        """A commit: post-execute, finalizeContent, tools/result, the contexts ferried to the
        run_code record, the binding settled, then the dispatch log (P121, P124, P126, P127)."""
        assert sub.parked is not None
        sub_rec, route = sub.parked
        result = await self.stages.finalize(self.w, sub_rec, route)
        cid = sub.input.callId
        self.w.trace.results.append(call_result(cid, result, self.w.is_deeply_frozen(result), True))
        if not result["isError"] and any(get(b, "type") == "image" for b in result["content"]):  # P126.1
            self.w.generated_messages += 1
            image = {"content": result["content"], "source": {"kind": "plugin", "plugin": texts.CODE_MODE_PLUGIN},
                     "role": "user", "id": f"generated-{self.w.generated_messages}"}
            self.rec.deferred.append(self.w.freeze(image))
            self.obs(cid, "defer", "image", ("P126",))
        for context in result.get("additionalContexts", []):  # P126.2
            self.rec.deferred.append(context)
            self.obs(cid, "defer", "context", ("P126",))
        if result.get("concludesTurn") is True:  # P127
            self.rec.concluded = True
            self.obs(cid, "conclude", None, ("P127",))
        self.settle(sub, result)
        while len(self.log_work) > self.w.scenario.maxParallelSubCalls:
            await self.w.sched.any_of(*self.log_work.values())

    def settle(self, sub: SubCall, result: dict[str, Any]) -> None:
        """P124: the binding settles at commit; the dispatch log follows (P122)."""
        sub.outcome.resolve(result)
        if self.rec.agent is None:
            return
        key = sub.n
        task = self.w.sched.start(self._log(sub, result))
        if not task.done:
            self.log_work[key] = task
            task.on_settle(lambda _d: self.log_work.pop(key, None))

    def abandon(self, sub: SubCall) -> None:
        self.obs(sub.input.callId, "abandon", None, ("P125",))
        sub.outcome.reject(Thrown(js_error(texts.run_over(self.reason(), sub.input.name, texts.ABANDONED))))

    async def drain(self) -> None:
        """P125: every started sub-call committed and every dispatch log appended."""
        await self.lane.drive()
        await settle_all(self.log_work)

    # ------------------------------------------------------------------ dispatch logging (P122, P123)

    def _entry(self, sub: SubCall) -> dict[str, Any]:
        return {"rootCallId": self.rec.rootCallId, "parentCallId": self.rec.current_call_id,
                "subCallId": sub.input.callId, "name": sub.input.name, "arguments": clone(sub.logged)}

    async def _log(self, sub: SubCall, result: dict[str, Any]) -> None:
        content = result["content"]
        handed = {"subCallId": sub.input.callId, "name": sub.input.name, "isError": result["isError"],
                  "content": content}

        async def unchanged() -> JsValue:
            return content

        try:
            logged = await self.stages.waterfall(
                self.w, "tools/code-dispatch-log", self.rec, {"result": handed, "call_id": sub.input.callId},
                unchanged, ("P5", "P122"), agent=self.rec.agent)
        except Thrown as t:  # P123: contained; the unchanged content is logged
            self.w.trace.warnings.append(texts.dispatch_log_failed(sub.input.name, message_of(t.value)))
            logged = content
        assert self.rec.agent is not None
        if not is_lossless(logged):
            # A session takes lossless JSON only: its append throws, and the drain ignores it.
            self.obs(sub.input.callId, "append", "refused", ("P122",))
            return
        self.w.append_event(self.rec.agent, "tool/code-dispatch",
                            {**self._entry(sub), "isError": result["isError"], "content": logged})
        # The bridge's own session event, as the flow model's "Tool-owned session events" node
        # shows it (an internal observation of run_code's body).
        self.w.obs(self.rec.callId, "tool-event", "append", None, {"type": "tool/code-dispatch"}, ("P122",))


def _binding_arguments(raw: JsValue) -> JsValue:
    """P118.2: the argument's lossless snapshot, or the rejection."""
    try:
        return snapshot(raw)
    except NotLossless:
        raise Thrown(js_error(texts.BINDING_ARGS_NOT_LOSSLESS)) from None
    except Thrown as t:
        x = t.value
        m = str(x.get("message", "")) if token(x) == "error" else to_string(x)
        raise Thrown(js_error(texts.binding_args_failed(m))) from None


# ============================================================================ value and content (P128)

def render(value: JsValue) -> list[dict[str, Any]]:
    """run_code's content: the logs and the rendered result, one text block (P128)."""
    parts = ["\n".join(value["logs"])]
    if "result" in value:
        result = value["result"]
        parts.append(result if isinstance(result, str) else render_json(result))
    text = "\n".join(p for p in parts if p)
    return [{"type": "text", "text": text or texts.RUN_CODE_NO_OUTPUT}]


def render_json(v: JsValue, depth: int = 0, compact: bool = False) -> str:
    """``JSON.stringify(v, null, 2)``, except that a container whose children would be
    indented by more than ten spaces is written without white space, with all it holds."""
    if isinstance(v, str):
        return json_string(v)
    if v is None or isinstance(v, bool):
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return number_to_string(v)
    compact = compact or (depth + 1) * 2 > MAX_JSON_INDENT
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(v, list):
        if not v:
            return "[]"
        items = [render_json(x, depth + 1, compact) for x in v]
        return "[" + ",".join(items) + "]" if compact else "[\n" + ",\n".join(inner + i for i in items) + "\n" + pad + "]"
    entries = v.get("entries", {}) if token(v) == "object" else v  # a literal "$js" key is data
    if not entries:
        return "{}"
    keys = list(entries)  # a snapshot's own keys are already in JavaScript order
    if compact:
        return "{" + ",".join(json_string(k) + ":" + render_json(entries[k], depth + 1, True) for k in keys) + "}"
    return "{\n" + ",\n".join(inner + json_string(k) + ": " + render_json(entries[k], depth + 1) for k in keys) + "\n" + pad + "}"


def is_run_code(tool: Any) -> bool:
    return isinstance(tool, RunCodeTool)
