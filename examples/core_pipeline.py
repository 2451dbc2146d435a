"""A minimal Python implementation of the pipeline's ``core`` profile, written on the kit.

THIS IS AN EXAMPLE OF THE KIT (``dsh_conformance.kit``), NOT A SECOND ORACLE. It shows what
a port writes: its pipeline (the part between the two ``pipeline logic`` markers) and a few
lines that hand it to the kit. The kit builds every scripted participant of a scenario as a
callable, records their observations, drives the calls on virtual time and speaks the IUT
protocol. What is left out: the loop, Code Mode, the timeout policy and scoped listeners
beyond the chain test; the reference profile's texts are in (examples/core_pipeline.mjs is the
same pipeline on the JS kit: ``dsh-conformance kit agree`` compares the two).

    PYTHONPATH=examples dsh-conformance run --impl py:core_pipeline --profiles core
    dsh-conformance run --impl "python examples/core_pipeline.py" --profiles core
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from dsh_conformance import kit
from dsh_conformance.kit.decisions import GRANTED, OUTCOMES, POST_KINDS, PRE_REASONS
from dsh_conformance.kit.jsvalue import (
    UNDEFINED,
    NotLossless,
    Thrown,
    get,
    has_own,
    info_of,
    is_object,
    is_undefined,
    js_error,
    js_string,
    json_text,
    message_of,
    message_value,
    snapshot,
    to_string,
    token,
    truthy,
    type_error,
)
from dsh_conformance.kit.record import Input, Record
from dsh_conformance.kit.scheduler import ABORT_REASON, fuse

# ----------------------------------------------------------------------------- pipeline logic

FINAL, POST, DISPATCH = "final", "post", "dispatch"


def failure(message: str, name: str | None = None, code: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"message": message}
    if name is not None:
        error["info"] = {"name": name, "code": code}
    return {"isError": True, "error": error, "content": [{"type": "text", "text": "Error: " + message}]}


def fail(x: Any) -> dict[str, Any]:
    """The canonical failure of a thrown value (P8)."""
    info = info_of(x)
    m = message_value(x)
    error: dict[str, Any] = {"message": m} if info is None else {"message": m, "info": info}
    return {"isError": True, "error": error, "content": [{"type": "text", "text": "Error: " + to_string(m)}]}


def harness_error(cls: str, code: str, message: str) -> Any:
    return js_error(message, cls, name=cls, code=code, harness=True)


def aborted(before_dispatch: bool, prior: Any = None) -> dict[str, Any]:
    r = (failure("tool call aborted before dispatch", "AbortError", "ABORTED_BEFORE_DISPATCH") if before_dispatch
         else failure("tool call aborted", "AbortError", "ABORTED"))
    contexts = get(prior, "additionalContexts") if prior is not None else UNDEFINED
    if isinstance(contexts, list) and contexts:
        r["additionalContexts"] = contexts
    return r


def violations(schema: Any, value: Any, label: str) -> list[str]:
    """P73, P75: each violation as `<label><path>: <message>`, by path, then keyword."""
    if schema == {} or schema is True:
        return []
    text = json_text(value)
    errors = jsonschema.Draft202012Validator(schema).iter_errors(json.loads(text) if text else value)
    return [label + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path) + ": " + e.message
            for e in sorted(errors, key=lambda e: (list(e.absolute_path), e.validator))]


def output_error(name: str, why: str) -> Thrown:
    return Thrown(harness_error("ToolOutputError", "INVALID_TOOL_OUTPUT", f'tool "{name}" returned invalid output: {why}'))


DENIALS = {"rejected": 'the user rejected tool "{}"', "cancelled": 'approval for tool "{}" was cancelled',
           "unavailable": 'tool "{}" requires approval, but no approval channel is available'}  # P41


class CorePipeline:
    """The registry and the stages of one run: entry, gate, dispatch, post, finish."""

    def __init__(self, run: kit.PortRun) -> None:
        self.run = run
        self.agents = {a.id: a for a in run.scenario.agents}
        self.tools: dict[str | None, dict[str, kit.Tool]] = {}
        self.listeners: dict[str, list[kit.Listener]] = {}
        self.guards: dict[str | None, list[list[Any]]] = {}  # scope -> [[guard, active], ...]
        self.approvals = 0  # the shipped service's requests so far (their ids)

    # ------------------------------------------------------------- registry (P5, P26, P45, P56)

    def register(self, p: kit.Participant) -> None:
        if isinstance(p, kit.Tool):
            layer = self.tools.setdefault(p.decl.scope, {})
            if p.name in layer:
                where = "in this scope" if p.decl.scope else ("(for a per-agent variant, register through that "
                                                              "agent's `agent.ctx` instead)")
                raise Thrown(js_error(f'tool "{p.name}" is already registered {where}'))
            layer[p.name] = p
        elif isinstance(p, kit.Listener):
            table = self.listeners.setdefault(p.decl.event, [])
            table.insert(0, p) if p.decl.prepend else table.append(p)
        else:
            self.guards.setdefault(p.decl.scope, []).append([p, True])

    def unregister(self, p: kit.Participant) -> None:
        if isinstance(p, kit.Tool):
            layer = self.tools.get(p.decl.scope, {})
            if layer.get(p.name) is p:
                del layer[p.name]
        elif isinstance(p, kit.Listener):
            self.listeners[p.decl.event] = [l for l in self.listeners.get(p.decl.event, []) if l is not p]
        else:
            for entry in self.guards.get(p.decl.scope, []):  # stays in place: a pass keeps its position
                if entry[0] is p:
                    entry[1] = False

    def chain(self, agent: str | None) -> list[str]:
        out = []
        while agent is not None:
            out.append(agent)
            agent = self.agents[agent].parent
        return out

    def view(self, agent: str | None, name: str) -> kit.Tool | None:
        """P56: the agent's own definition; else the nearest inherited one (ancestors, then the
        global layer), which a restriction anywhere on the chain hides."""
        chain = self.chain(agent)
        if chain and name in self.tools.get(chain[0], {}):
            return self.tools[chain[0]][name]
        tool = next((self.tools[a][name] for a in chain[1:] if name in self.tools.get(a, {})),
                    self.tools.get(None, {}).get(name))
        for a in chain:
            r = self.agents[a].restrict
            if tool is not None and r is not None and ((r.allow is not None and name not in r.allow)
                                                       or (r.deny is not None and name in r.deny)):
                return None
        return tool

    def selected(self, event: str, agent: str | None) -> list[kit.Listener]:
        chain = self.chain(agent)
        return [l for l in self.listeners.get(event, []) if l.decl.scope is None or l.decl.global_
                or l.decl.scope in chain]

    async def waterfall(self, event: str, rec: Record, terminal: Any, freeze_next: bool = False,
                        **handed: Any) -> Any:
        """P5, P6: the listeners selected now share one consuming cursor down to the terminal."""
        listeners, position = self.selected(event, rec.agent), 0

        async def step() -> Any:
            nonlocal position
            position += 1
            if position <= len(listeners):
                return await listeners[position - 1].waterfall(rec, next_, **handed)
            return await terminal()

        async def next_() -> Any:
            value = await step()
            return self.run.freeze(value) if freeze_next else value
        return await step()

    # ------------------------------------------------------------- execute()

    async def execute(self, inp: Input) -> Any:
        rec, route, r = self.entry(inp)
        if route is None:
            route, r = await self.gate(rec)
        if route == DISPATCH:
            route, r = await self.dispatch(rec)
        if route == POST:
            r = await self.post(rec, r)
        return self.finish(rec, r)

    def own(self, rec: Record, r: dict[str, Any]) -> dict[str, Any]:
        rec.built[id(r)] = r  # P63: a result the registry built for this execution
        return r

    def entry(self, inp: Input) -> tuple[Record, str | None, Any]:
        """P22-P25: one record per call, a frozen lossless snapshot of the arguments."""
        visible = self.view(inp.agent, inp.name)
        rec = Record(token=self.run.mint_token(), callId=inp.callId, rootCallId=inp.callId if inp.rootCallId is None else inp.rootCallId,
                     name=inp.name, agent=inp.agent, parent=inp.parent, arguments=UNDEFINED, signal=inp.signal,
                     caller=inp.signal, abort_target=inp.signal,
                     finalizer=visible.decl if visible and visible.decl.finalizeContent is not None else None)
        try:
            try:
                rec.arguments = self.run.freeze(snapshot(inp.arguments))
            except NotLossless:
                raise Thrown(type_error("tool execution arguments must be losslessly JSON-serializable")) from None
        except Thrown as t:
            return rec, FINAL, fail(t.value)
        if inp.signal.aborted:  # P29
            return rec, FINAL, aborted(True)
        return rec, None, None

    async def gate(self, rec: Record) -> tuple[str, Any]:
        try:
            return await self._gate(rec)
        except Thrown as t:  # P8: any throw of the gate is a final failure
            return FINAL, fail(t.value)

    async def _gate(self, rec: Record) -> tuple[str, Any]:
        self.run.boundary(rec.callId, "pre-execute", "start")
        try:
            d = await self.waterfall("tools/pre-execute", rec, _allow)
        except Thrown as t:  # P34
            self.run.boundary(rec.callId, "pre-execute", "throw", t.value)
            return FINAL, fail(t.value)
        self.run.boundary(rec.callId, "pre-execute", "end", d)
        kind = get(d, "kind")  # P31: a well-formed decision
        rule = PRE_REASONS.get(kind) if isinstance(kind, str) else None
        reason = get(d, "reason") if rule in ("string", "absent-or-string") else UNDEFINED
        if not (rule == "ignored" or isinstance(reason, str) or (rule == "absent-or-string" and is_undefined(reason))):
            return FINAL, fail(type_error("invalid tools/pre-execute decision"))
        cancelled = False
        if kind == "ask":  # P36-P41
            kind, reason, cancelled = await self.ask(rec, reason)
            if cancelled and rec.caller.aborted:
                return POST, self.own(rec, self.run.freeze(aborted(True)))
        if kind == "allow":  # P44, P46: guards only after an allow
            reason = self.guard_pass(rec)
        if not is_undefined(reason):  # P32, P33, P47: the denial
            candidate = {"content": [{"type": "text", "text": "Error: " + to_string(reason)}],
                         "isError": True, "error": {"message": reason}}
            return POST, self.own(rec, self.materialize(candidate))
        if rec.caller.aborted:  # P53
            return POST, self.own(rec, self.run.freeze(aborted(True)))
        return DISPATCH, None

    async def ask(self, rec: Record, reason: Any) -> tuple[str, Any, bool]:
        service = self.run.approval
        if service is None:  # P37, P38: no service denies, with the ask's reason when it has one
            return "deny", reason if isinstance(reason, str) else f'tool "{rec.name}" requires approval (not yet supported)', False
        if rec.agent is None:  # P37, P38: nor can a call without an agent be asked about
            return "deny", f'tool "{rec.name}" requires approval, but the call has no agent to route it through', False
        request: dict[str, Any] = {"agent": rec.agent, "toolName": rec.name, "callId": rec.callId}
        if isinstance(reason, str):
            request["reason"] = reason
        signal = rec.signal
        self.run.boundary(rec.callId, "approval", "request", request)
        try:
            if isinstance(service, kit.ApprovalService):
                outcome = await service(rec, request, signal)
            else:
                outcome = await self.shipped_approval(rec, request, signal, service.policy)
        except Thrown as t:
            self.run.boundary(rec.callId, "approval", "throw", t.value)
            raise
        self.run.boundary(rec.callId, "approval", "outcome", outcome)
        if not isinstance(outcome, str) or outcome not in OUTCOMES:  # P41: JSON.stringify(o) ?? String(o)
            text = json_text(outcome)
            raise Thrown(js_error(f"unreachable variant in ApprovalOutcome: {js_string(outcome) if text is None else text}"))
        return ("allow" if outcome == GRANTED else "deny",
                UNDEFINED if outcome == GRANTED else DENIALS[outcome].format(rec.name), outcome == "cancelled")

    async def shipped_approval(self, rec: Record, request: dict[str, Any], signal: Any, policy: str) -> str:
        """P43: the shipped service asks the approval/request answerers, with its audit pair."""
        if not self.agents[rec.agent].openTurn:
            raise Thrown(js_error("no open turn"))
        self.approvals += 1
        approval_id = f"approval-{self.approvals}"
        self.run.append_event(rec.agent, "approval/asked", {"id": approval_id, **{k: request[k] for k in request
                                                                                  if k != "agent"}})
        outcome = "cancelled" if signal.aborted else "rejected" if policy == "never" else None
        if outcome is None:
            async def answered() -> Any:
                try:
                    o = await self.waterfall("approval/request", rec, _unavailable, request=request,
                                             request_signal=signal)
                except Thrown:
                    return "unavailable"
                return o if isinstance(o, str) and o in OUTCOMES else "unavailable"
            task = self.run.sched.spawn(answered())
            first = await self.run.sched.any_of(task, signal.on_abort)
            outcome = "cancelled" if first == 1 else task.value
        self.run.append_event(rec.agent, "approval/decided", {"id": approval_id, "outcome": outcome})
        return outcome

    def guard_pass(self, rec: Record) -> Any:
        """P45-P50: the global layer, then each scope from the farthest; read live."""
        for scope in [None, *reversed(self.chain(rec.agent))]:
            layer, i = self.guards.setdefault(scope, []), 0
            while i < len(layer):
                guard, active = layer[i]
                i += 1
                if active and not is_undefined(v := guard(rec)):
                    return v
        return UNDEFINED

    async def dispatch(self, rec: Record) -> tuple[str, Any]:
        """P54-P68: tools/execute around the terminal, then normalization."""
        try:
            self.run.boundary(rec.callId, "execute", "start")
            try:
                r = await self.waterfall("tools/execute", rec, lambda: self.terminal(rec), freeze_next=True)
            except Thrown as t:
                self.run.boundary(rec.callId, "execute", "throw", t.value)
                raise
            self.run.boundary(rec.callId, "execute", "end", r)
            n = self.normalize(rec, r)
        except Thrown as t:
            return FINAL, fail(t.value)
        if rec.deferred:  # P67
            contexts = get(n, "additionalContexts")
            n = self.own(rec, {**n, "additionalContexts": [*rec.deferred, *(contexts if isinstance(contexts, list)
                                                                              else [])]})
        if not n["isError"] and rec.caller.aborted:  # P68
            n = self.own(rec, aborted(not rec.body_invoked, n))
        return POST, self.run.freeze(n)

    async def terminal(self, rec: Record) -> dict[str, Any]:
        """P55, P58-P61: one dispatch of the body; the terminal never throws."""
        fused, detach = fuse(rec.caller, rec.signal, f"fused:{rec.callId}")
        if fused.aborted:
            return self.own(rec, aborted(True))
        prev, rec.signal = rec.signal, fused
        try:
            tool = self.view(rec.agent, rec.name)
            if tool is None:
                raise Thrown(harness_error("ToolNotFoundError", "UNKNOWN_TOOL", f'unknown tool "{rec.name}"'))
            rec.body_invoked = True
            if tool.decl.define and (bad := violations(tool.decl.parameters, rec.arguments, "arguments")):  # P75
                raise Thrown(harness_error("ToolArgsError", "INVALID_ARGS", "invalid arguments: " + "; ".join(bad)))
            try:
                v = await tool.body(rec, rec.arguments, self.fs_intent)
            finally:
                self.run.open_gate(rec.callId)
            s = self.success(rec, tool, v)  # P72, P73: the output contract runs before the abort check
            res = aborted(False) if fused.aborted else s  # P61
        except Thrown as t:
            res = fail(t.value)
        finally:
            detach()
            rec.signal = prev
        return self.own(rec, res)

    async def fs_intent(self, run: Any, rec: Record, event: str, target: Any) -> Any:
        """P71: a filesystem intent a body dispatches; its listeners decide, by default nothing."""
        return await self.waterfall(event, rec, _undefined, args=target)

    def success(self, rec: Record, tool: kit.Tool, candidate: Any) -> dict[str, Any]:
        """P72-P74: a value becomes a success through the output contract, or throws."""
        try:
            value = snapshot(candidate)
        except NotLossless:
            raise output_error(tool.name, "value is not lossless JSON") from None
        except Thrown as t:
            raise output_error(tool.name, f"value snapshot failed: {message_of(t.value)}") from None
        if bad := violations(tool.decl.output.schema_, value, "value"):
            raise output_error(tool.name, "; ".join(bad))
        self.run.freeze(value)
        out: dict[str, Any] = {"isError": False, "value": value}
        for key, which, project in (("content", "render", tool.render), ("meta", "presentationMeta",
                                                                          tool.presentation_meta)):
            if getattr(tool.decl.output, which) is None:
                if key == "content":
                    out["content"] = [{"type": "text", "text": json_text(value)}]
                continue
            if key == "meta" and rec.parent is not None:
                continue
            try:
                out[key] = snapshot(project(rec, value))
            except NotLossless:
                raise output_error(tool.name, f"output.{which} returned non-lossless JSON") from None
            except Thrown as t:
                raise output_error(tool.name, f"output.{which} failed: {message_of(t.value)}") from None
        if rec.concluded:
            out["concludesTurn"] = True
        return self.own(rec, self.materialize(out))

    def normalize(self, rec: Record, r: Any) -> dict[str, Any]:
        """P63: a wrapper's return value becomes the dispatch result."""
        if isinstance(r, dict) and id(r) in rec.built:
            return r
        if r is None or is_undefined(r):
            raise Thrown(type_error("tools/execute returned no result"))
        if truthy(get(r, "isError")):
            n = {"isError": True, "error": get(r, "error"), "content": get(r, "content")}
        else:
            tool = self.view(rec.agent, rec.name)
            if tool is None:
                raise Thrown(harness_error("ToolNotFoundError", "UNKNOWN_TOOL", f'unknown tool "{rec.name}"'))
            n = dict(self.success(rec, tool, get(r, "value")))
        for key in ("meta", "additionalContexts") if n["isError"] else ("additionalContexts",):
            if not is_undefined(v := get(r, key)):
                n[key] = v
        return self.own(rec, n)

    async def post(self, rec: Record, r: dict[str, Any]) -> Any:
        try:
            return await self._post(rec, r)
        except Thrown as t:  # P86
            return fail(t.value)

    async def _post(self, rec: Record, r: dict[str, Any]) -> Any:
        """P76-P88: tools/post-execute and its decision."""
        self.run.freeze(r)
        self.run.boundary(rec.callId, "post-execute", "start", r)
        try:
            p = await self.waterfall("tools/post-execute", rec, _accept, result=r)
        except Thrown as t:
            self.run.boundary(rec.callId, "post-execute", "throw", t.value)
            raise
        self.run.boundary(rec.callId, "post-execute", "end", p)
        if not (is_object(p) and not isinstance(p, list) and get(p, "kind") in POST_KINDS):
            raise Thrown(type_error("invalid tools/post-execute decision"))
        dc = get(p, "additionalContexts")
        dc = dc if isinstance(dc, list) else []
        if get(p, "kind") == "block":  # P83, P84
            feedback = get(p, "feedback")
            out: dict[str, Any] = {"isError": True, "content": feedback, "error": {"message": block_message(feedback)}}
            if dc:
                out["additionalContexts"] = dc
            return self.own(rec, out)
        if has_own(p, "content") and has_own(p, "value"):
            raise Thrown(type_error("tools/post-execute accept decision cannot replace both value and content"))
        prior = r.get("additionalContexts", [])
        merged = [*(prior if isinstance(prior, list) else []), *dc]  # P85
        if has_own(p, "value"):  # P81, P87
            if r["isError"]:
                raise Thrown(type_error("tools/post-execute cannot replace the value of a failed result"))
            tool = self.view(rec.agent, rec.name)
            if tool is None:  # the value goes through the output contract of a tool that is gone
                raise Thrown(harness_error("ToolNotFoundError", "UNKNOWN_TOOL", f'unknown tool "{rec.name}"'))
            out = dict(self.success(rec, tool, get(p, "value")))
        else:  # P80
            out = dict(r)
            if not is_undefined(content := get(p, "content")):
                out["content"] = content
        if merged:
            out["additionalContexts"] = merged
        if not out["isError"] and rec.caller.aborted:  # P88
            out = aborted(not rec.body_invoked, out)
        return self.own(rec, out)

    def materialize(self, r: Any) -> dict[str, Any]:
        """P90, P91: a detached, deeply frozen lossless snapshot of the outcome, or a throw."""
        candidate: dict[str, Any] = {"isError": truthy(get(r, "isError"))}
        if candidate["isError"]:
            candidate["error"] = get(r, "error")
        for key in ("content", "meta", "additionalContexts"):
            if key == "content" or not is_undefined(get(r, key)):
                candidate[key] = get(r, key)
        if not candidate["isError"] and get(r, "concludesTurn") is True:
            candidate["concludesTurn"] = True
        value = get(r, "value")
        try:
            out = snapshot(candidate)
        except NotLossless:
            raise Thrown(type_error("tool result must be losslessly JSON-serializable")) from None
        if not out["isError"]:
            out["value"] = value
        return self.run.freeze(out)

    def finish(self, rec: Record, r: Any) -> Any:
        """P93-P102: materialize, finalizeContent, freeze the record, notify tools/result."""
        try:
            f = self.materialize(r)
        except Thrown as t:
            f = self.materialize(fail(t.value))
        if rec.finalizer is not None:  # P26: the definition captured at entry
            try:
                c = self.run.participants[rec.finalizer.ref].finalize(rec, f)  # type: ignore[union-attr]
                f = self.materialize(f if is_undefined(c) else {**f, "content": c})
            except Thrown as t:
                f = self.materialize(fail(t.value))
        rec.frozen = True  # P99
        self.run.notifying(rec.callId, f)
        rejections = []
        for listener in self.selected("tools/result", rec.agent):  # P100: synchronous, contained
            try:
                returned = listener.notify(rec, f)
            except Thrown as t:
                self.run.trace.warnings.append(f'tool "{rec.name}" ({rec.callId}): tools/result observer failed: '
                                               f"{message_of(t.value)}")
                continue
            if token(returned) == "promise" and "rejects" in returned:
                rejections.append(returned["rejects"])
        for x in rejections:
            self.run.trace.warnings.append(f'tool "{rec.name}" ({rec.callId}): tools/result observer failed: '
                                           f"{message_of(x)}")
        return f


def block_message(feedback: Any) -> str:
    if not isinstance(feedback, list):
        raise Thrown(type_error("block feedback is not an array"))
    parts = []
    for block in feedback:
        if block is None or is_undefined(block) or token(block) == "hole":  # a hole reads undefined
            raise Thrown(type_error(f"Cannot read properties of {'null' if block is None else 'undefined'} (reading 'type')"))
        kind = get(block, "type") if is_object(block) else UNDEFINED
        text = get(block, "text") if kind == "text" else UNDEFINED
        parts.append(("" if text is None or is_undefined(text) else to_string(text)) if kind == "text"
                     else f"[{to_string(kind)} content]")
    return "\n".join(parts) or "tool result blocked by post-execute policy"


async def _allow() -> Any:
    return {"kind": "allow"}


async def _accept() -> Any:
    return {"kind": "accept"}


async def _unavailable() -> Any:
    return "unavailable"


async def _undefined() -> Any:
    return UNDEFINED

# ----------------------------------------------------------------------------- end of pipeline logic


class CorePort:
    """The port as the kit sees it: who it is, what it supports, a pipeline per scenario."""

    name = "core-pipeline-example"
    version = kit.KIT_VERSION
    profiles = ("core", "reference")

    def pipeline(self, run: kit.PortRun) -> CorePipeline:
        s = run.scenario
        if s.mode != "native" or any(a.mode not in (None, "native") for a in s.agents) or s.timeoutPolicy:
            raise kit.Unsupported("Code Mode and the timeout policy are outside this example")
        return CorePipeline(run)


started, answer = kit.implementation_module(CorePort())

if __name__ == "__main__":
    raise SystemExit(kit.serve_stdio(CorePort()))
