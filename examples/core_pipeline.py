"""A minimal Python implementation of the pipeline's ``core``, ``reference`` and ``code-mode``
profiles, written on the kit.

THIS IS AN EXAMPLE OF THE KIT (``dsh_conformance.kit``), NOT A SECOND ORACLE. It shows what
a port writes: its pipeline (the part between the two ``pipeline logic`` markers) and a few
lines that hand it to the kit. The kit builds every scripted participant of a scenario as a
callable, records their observations, runs Code Mode's programs (``kit.program``), drives the
calls on virtual time and speaks the IUT protocol. What is left out: the loop, the timeout
policy and scoped listeners beyond the chain test; the reference profile's texts are in
(examples/core_pipeline.mjs is the same pipeline on the JS kit: ``dsh-conformance kit agree``
compares the two).

    PYTHONPATH=examples dsh-conformance run --impl py:core_pipeline --profiles core
    dsh-conformance run --impl "python examples/core_pipeline.py" --profiles core,reference
    dsh-conformance run --impl "python examples/core_pipeline.py" --profiles code-mode
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import jsonschema

from dsh_conformance import kit
from dsh_conformance.kit.decisions import GRANTED, OUTCOMES, POST_KINDS, PRE_REASONS
from dsh_conformance.kit.jsvalue import (UNDEFINED, NotLossless, Thrown, clone, get, has_own, info_of, is_lossless,
                                         is_object, is_undefined, js_error, js_string, json_string, json_text, message_of,
                                         message_value, snapshot, to_string, token, truthy, type_error)
from dsh_conformance.kit.program import RunRequest, run_program
from dsh_conformance.kit.record import Input, Record
from dsh_conformance.kit.scenario import Output, Tool as ToolDecl
from dsh_conformance.kit.scenario_checks import effective_mode
from dsh_conformance.kit.scheduler import Deferred, Lane, Signal, fuse, settle_all
from dsh_conformance.kit.trace import call_result

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
        self.run_code = RunCodeTool(self)
        self.generated = 0  # user messages made for image-bearing sub-calls (P126)

    # ------------------------------------------------------------- registry (P5, P26, P45, P56)

    def register(self, p: kit.Participant) -> None:
        if isinstance(p, kit.Tool):
            if p.name == RUN_CODE:  # P114: reserved, in every scope
                raise Thrown(js_error("run_code is reserved for the Code Mode transport and cannot be registered"))
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

    def view(self, agent: str | None, name: str) -> kit.Tool | RunCodeTool | None:
        """P56: the agent's own definition; else the nearest inherited one (ancestors, then the
        global layer), which a restriction anywhere on the chain hides. P114: ``run_code`` is
        outside the layers, for agents presenting in ``code`` or ``both``."""
        if name == RUN_CODE:
            return self.run_code if effective_mode(self.run.scenario, agent) != "native" else None
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
        rec, route, r = await self.prepare(inp)
        if route == DISPATCH:
            route, r = await self.dispatch(rec)
        return await self.finalize(rec, route, r)

    async def prepare(self, inp: Input) -> tuple[Record, str, Any]:  # the staged scheduler (3.6)
        rec, route, r = self.entry(inp)
        if route is None:
            route, r = await self.gate(rec)
        return rec, route, r

    async def finalize(self, rec: Record, route: str, r: Any) -> Any:
        if route == POST:
            r = await self.post(rec, r)
        return self.finish(rec, r)

    def collapses(self, agent: str | None, name: str, nested: bool) -> bool:
        """P28: a model-direct call of an agent presenting in ``code`` mode, to any tool but
        ``run_code``, never runs."""
        return not nested and effective_mode(self.run.scenario, agent) == "code" and name != RUN_CODE

    def own(self, rec: Record, r: dict[str, Any]) -> dict[str, Any]:
        rec.built[id(r)] = r  # P63: a result the registry built for this execution
        return r

    def entry(self, inp: Input) -> tuple[Record, str | None, Any]:
        """P22-P25: one record per call, a frozen lossless snapshot of the arguments."""
        visible = self.view(inp.agent, inp.name)
        collapsed = visible is not None and self.collapses(inp.agent, inp.name, inp.parent is not None)  # P28
        rec = Record(token=self.run.mint_token(), callId=inp.callId, rootCallId=inp.callId if inp.rootCallId is None else inp.rootCallId,
                     name=inp.name, agent=inp.agent, parent=inp.parent, arguments=UNDEFINED, signal=inp.signal,
                     caller=inp.signal, abort_target=inp.abort_target or inp.signal,
                     finalizer=visible.decl if visible and visible.decl.finalizeContent is not None else None)
        try:
            try:
                rec.arguments = self.run.freeze(snapshot(inp.arguments))
            except NotLossless:
                raise Thrown(type_error("tool execution arguments must be losslessly JSON-serializable")) from None
        except Thrown as t:
            if collapsed and not inp.signal.aborted:
                rec.finalizer = None  # P28: a collapsed call that could never run keeps no finalizer
            return rec, FINAL, fail(t.value)
        if collapsed and not inp.signal.aborted:  # P28
            rec.finalizer = None
            return rec, FINAL, fail(harness_error("ToolNotFoundError", "UNKNOWN_TOOL", (
                f'unknown tool "{inp.name}": only `run_code` is callable directly \u2014 '
                f"call `{inp.name}` from inside a `run_code` program instead")))
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
                v = await (CodeRun(self, rec).body() if tool is self.run_code else tool.body(rec, rec.arguments, self.fs_intent))
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

    def success(self, rec: Record, tool: kit.Tool | RunCodeTool, candidate: Any) -> dict[str, Any]:
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
            if getattr(tool.decl.output, which) is None and not (key == "content" and tool is self.run_code):
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

# ----------------------------------------------------------------------------- Code Mode (5.15)

RUN_CODE = "run_code"
RUN_SETTLED = "run_code settled"  # P125: the run signal's abort reason once the program settled
JS_SPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
            "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")  # what String.prototype.trim removes


class RunCodeTool:
    """P114, P115: the reserved transport, a defineTool tool whose body is the bridge."""

    name = RUN_CODE
    decl = ToolDecl(name=RUN_CODE, define=True, parameters={
        "type": "object", "properties": {"code": {"type": "string"}, "description": {"type": "string"}},
        "required": ["code", "description"]}, output=Output(schema={
            "type": "object", "additionalProperties": False, "required": ["logs"],
            "properties": {"logs": {"type": "array", "items": {"type": "string"}}, "result": {}}}))

    def __init__(self, pipeline: CorePipeline) -> None:
        self.pipeline = pipeline

    def render(self, rec: Record, value: Any) -> Any:  # P128
        return render(value)

    presentation_meta = None


def run_over(reason: Any, name: str, what: str) -> Thrown:  # P118, P125
    return Thrown(js_error(f"run_code run is over ({to_string(reason)}); {name} {what}"))


class SubCall:
    def __init__(self, n: int, inp: Input) -> None:
        self.n, self.input, self.logged = n, inp, clone(inp.arguments)  # P122: the log's own copy
        self.outcome, self.flight = Deferred(), Deferred()
        self.mode, self.parked = "exclusive", None


class CodeRun:
    """One run of run_code's body: the run's signal, its queue, its lane of starts and commits
    (P121) and its dispatch logs (P122)."""

    def __init__(self, p: CorePipeline, rec: Record) -> None:
        self.p, self.rec, self.run = p, rec, p.run
        self.signal = Signal(f"run:{rec.callId}")  # P119, P125: the run's own signal
        self.pending: deque[SubCall] = deque()
        self.commits: deque[SubCall] = deque()
        self.in_flight: set[int] = set()
        self.logs: dict[int, Any] = {}
        self.exclusive = False
        self.lane = Lane(self.run.sched, self.step)

    async def body(self) -> Any:
        rec, scenario = self.rec, self.run.scenario
        if to_string(get(rec.arguments, "description")).strip(JS_SPACE) == "":  # P115
            raise Thrown(js_error("invalid description: expected a non-empty string"))
        if not scenario.codeRuntime:  # P115
            raise Thrown(js_error(f'dsh-tools: mode "{scenario.mode}" requires a code runtime \u2014 load a '
                                  "ctx.codeRuntime implementation (e.g. @deepseek-ai/dsh-code-runtime-worker-thread) "
                                  'or set tools mode to "native"'))
        detach = rec.signal.listen(lambda s: self.signal.abort(s.reason))  # P125
        try:
            names = set(self.p.tools.get(None, {})).union(*(self.p.tools.get(a, {}) for a in self.p.chain(rec.agent)))
            bindings = {n: self.binding(n) for n in sorted(names) if self.p.view(rec.agent, n) is not None}  # P117
            request = RunRequest(call=rec.callId, code=str(get(rec.arguments, "code")), bindings=bindings,
                                 signal=self.signal)
            try:
                result = await run_program(self.run, request)
            except Thrown:  # a crashed runtime: run() rejected
                await self.drain()
                raise
            await self.drain()
            if "error" in result:  # P128
                e = result["error"]
                captured = "\nCaptured output:\n" + "\n".join(result["logs"]) if result["logs"] else ""
                raise Thrown(harness_error("CodeRunFailedError", "CODE_RUN_FAILED",
                                           f"code run failed ({e['kind']}): {e['message']}{captured}"))
            return {"logs": result["logs"], **({"result": result["value"]} if "value" in result else {})}
        finally:
            detach()

    def binding(self, name: str) -> Any:
        return lambda raw: self.run.sched.start(self.call(name, raw))

    async def call(self, name: str, raw: Any) -> Any:
        """P118, P119: an accepted call becomes a sub-call with its own identity."""
        rec = self.rec
        if self.signal.aborted:
            raise run_over(self.signal.reason, name, "not dispatched")
        try:
            dispatched = snapshot(raw)
        except NotLossless:
            raise Thrown(js_error("tool arguments must be lossless JSON (call the tool with an arguments object, "
                                  "e.g. `{}`)")) from None
        except Thrown as t:
            raise Thrown(js_error(f"tool arguments must be lossless JSON: {message_of(t.value)}")) from None
        rec.sub_calls += 1
        n = rec.sub_calls
        inp = Input(callId=f"{rec.callId}:code:{n}", rootCallId=rec.rootCallId, name=name, arguments=dispatched,
                    agent=rec.agent, parent=rec.token, signal=self.signal, abort_target=rec.abort_target)
        self.run.inputs[inp.callId] = {  # what a write into "the caller's input" meets (P23)
            "callId": inp.callId, "rootCallId": inp.rootCallId, "name": name, "arguments": clone(dispatched),
            **({"agent": {}} if rec.agent is not None else {}),
            "parent": {"$js": "symbol", "description": "execution token"}, "signal": {}}
        sub = SubCall(n, inp)
        self.pending.append(sub)
        self.lane.wakeup()
        self.lane.drive()
        outcome = await sub.outcome
        if self.signal.aborted:  # P125: the run ended before the sub-call committed
            raise run_over(self.signal.reason, name, "result discarded")
        if not outcome["isError"]:
            return outcome["value"]
        raise Thrown(js_error(to_string(outcome["error"]["message"])))  # P124

    async def step(self) -> str:
        """P121: commits in submission order first; a start when the head's mode allows it."""
        if self.commits and self.commits[0].parked is not None:
            head = self.commits.popleft()
            await self.commit(head)
            self.exclusive = self.exclusive and head.mode != "exclusive"
            return "again"
        if not self.pending:
            return "sleep" if self.commits or self.in_flight else "done"
        head = self.pending[0]
        if self.signal.aborted:  # P125: queued, never started
            self.pending.popleft()
            head.outcome.reject(run_over(self.signal.reason, head.input.name, "tool call abandoned"))
            return "again"
        mode = self.classify(head.input)
        limit = 1 if mode == "exclusive" else self.run.scenario.maxParallelSubCalls
        if self.exclusive or len(self.in_flight) >= limit:
            return "sleep"
        self.exclusive, head.mode = mode == "exclusive", mode
        self.commits.append(self.pending.popleft())
        await self.start(head)
        self.in_flight.add(head.n)
        head.flight.on_settle(lambda _d, n=head.n: (self.in_flight.discard(n), self.lane.wakeup()))
        await self.run.sched.tick()  # JavaScript's `await start()`
        return "again"

    def classify(self, inp: Input) -> str:
        """P19: "parallel" only when the definition's isConcurrencySafe says exactly true."""
        tool = self.p.view(inp.agent, inp.name)
        if not isinstance(tool, kit.Tool) or tool.decl.concurrencySafe is None or (
                tool.decl.define and violations(tool.decl.parameters, inp.arguments, "arguments")):
            return "exclusive"
        try:
            return "parallel" if tool.is_concurrency_safe(inp.arguments, inp.callId) is True else "exclusive"
        except Thrown:
            return "exclusive"

    def entry(self, sub: SubCall) -> dict[str, Any]:
        return {"rootCallId": self.rec.rootCallId, "parentCallId": self.rec.callId, "subCallId": sub.input.callId,
                "name": sub.input.name, "arguments": clone(sub.logged)}

    async def start(self, sub: SubCall) -> None:
        """P121, P122: the start event, then entry, pre-execute, approval and guards."""
        if self.rec.agent is not None:
            self.run.append_event(self.rec.agent, "tool/code-dispatch-start", self.entry(sub))
        rec, route, r = await self.p.prepare(sub.input)
        if route == DISPATCH:
            self.run.sched.spawn(self.dispatch(sub, rec))  # bodies overlap (P121)
        else:
            sub.parked = (rec, route, r)
            sub.flight.resolve(None)

    async def dispatch(self, sub: SubCall, rec: Record) -> None:
        sub.parked = (rec, *await self.p.dispatch(rec))
        sub.flight.resolve(None)

    async def commit(self, sub: SubCall) -> None:
        """P121, P124, P126, P127: post-execute, finalizeContent, tools/result, the contexts
        carried to run_code's record, the binding settled, then the dispatch log."""
        result = await self.p.finalize(*sub.parked)
        cid = sub.input.callId
        self.run.trace.results.append(call_result(cid, result, self.run.is_deeply_frozen(result),
                                                  result is self.run.notified.get(cid)))
        if not result["isError"] and any(get(b, "type") == "image" for b in result["content"]):  # P126
            self.p.generated += 1
            self.rec.deferred.append(self.run.freeze({
                "content": result["content"], "source": {"kind": "plugin", "plugin": "tools-code-mode"},
                "role": "user", "id": f"generated-{self.p.generated}"}))
        self.rec.deferred.extend(result.get("additionalContexts", []))
        if result.get("concludesTurn") is True:  # P127
            self.rec.concluded = True
        sub.outcome.resolve(result)  # P124
        if self.rec.agent is not None:
            task = self.run.sched.start(self.log(sub, result))
            if not task.done:
                self.logs[sub.n] = task
                task.on_settle(lambda _d, n=sub.n: self.logs.pop(n, None))
        while len(self.logs) > self.run.scenario.maxParallelSubCalls:
            await self.run.sched.any_of(*self.logs.values())

    async def log(self, sub: SubCall, result: dict[str, Any]) -> None:
        """P122, P123: the tools/code-dispatch-log waterfall, then the tool/code-dispatch event."""
        content = result["content"]
        handed = {"subCallId": sub.input.callId, "name": sub.input.name, "isError": result["isError"],
                  "content": content}

        async def unchanged() -> Any:
            return content
        try:
            logged = await self.p.waterfall("tools/code-dispatch-log", self.rec, unchanged, result=handed,
                                            call_id=sub.input.callId)
        except Thrown as t:  # P123: contained
            self.run.trace.warnings.append(f"tools: code-dispatch-log listener failed for {sub.input.name}: "
                                           f"{message_of(t.value)}; logging the original settled content")
            logged = content
        if is_lossless(logged):  # a session's append refuses anything else
            self.run.append_event(self.rec.agent, "tool/code-dispatch",
                                  {**self.entry(sub), "isError": result["isError"], "content": logged})

    async def drain(self) -> None:
        """P125: once run() settled, queued sub-calls are abandoned and started ones commit,
        every dispatch log appended, before the body returns (not a Python ``finally``: a
        stopped run closes this coroutine)."""
        self.signal.abort(RUN_SETTLED)
        await self.lane.drive()
        await settle_all(self.logs)


def render(value: Any) -> list[dict[str, Any]]:
    """P128: the logs and the result (a string as it is, else JSON.stringify(result, null, 2))."""
    shown = "" if "result" not in value else (
        value["result"] if isinstance(value["result"], str) else render_json(value["result"]))
    text = "\n".join(piece for piece in ("\n".join(value["logs"]), shown) if piece)
    return [{"type": "text", "text": text or "(run_code completed with no output)"}]


def render_json(v: Any, depth: int = 0, compact: bool = False) -> str:
    """JSON.stringify(v, null, 2), but a container whose children would be indented by more
    than ten spaces (JSON.stringify's cap) is written without white space (P128)."""
    if not isinstance(v, (dict, list)) or (not v and isinstance(v, list)):
        return json_text(v)  # type: ignore[return-value]
    compact = compact or (depth + 1) * 2 > 10
    pad, inner = "  " * depth, "  " * (depth + 1)
    entries = v.get("entries", {}) if token(v) == "object" else v  # a literal "$js" key is data
    if not entries:
        return "{}"
    items = ([render_json(x, depth + 1, compact) for x in entries] if isinstance(v, list) else
             [json_string(k) + (":" if compact else ": ") + render_json(x, depth + 1, compact) for k, x in entries.items()])
    brackets = "[]" if isinstance(v, list) else "{}"
    if compact:
        return brackets[0] + ",".join(items) + brackets[1]
    return brackets[0] + "\n" + ",\n".join(inner + i for i in items) + "\n" + pad + brackets[1]

# ----------------------------------------------------------------------------- end of pipeline logic


class CorePort:
    """The port as the kit sees it: who it is, what it supports, a pipeline per scenario."""

    name = "core-pipeline-example"
    version = kit.KIT_VERSION
    profiles = ("core", "reference", "code-mode")

    def pipeline(self, run: kit.PortRun) -> CorePipeline:
        s = run.scenario
        if s.timeoutPolicy:
            raise kit.Unsupported("the timeout policy is outside this example")
        return CorePipeline(run)


started, answer = kit.implementation_module(CorePort())

if __name__ == "__main__":
    raise SystemExit(kit.serve_stdio(CorePort()))
