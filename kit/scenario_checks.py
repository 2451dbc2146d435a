"""The scenario language's consistency checks: what a well-typed scenario document must
also hold to be run (references resolve, ids are unique, each step is where it may be,
signal names are the scenario's own, values are well formed, ...).

``kit.scenario`` holds the document's typed models and runs these checks as the
``Scenario`` model's last validation. This module reads a scenario only through its
attributes, so it needs nothing of ``kit.scenario`` at run time: the names below that the
models use as well (the reserved events and tool name) are defined here and re-exported there.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .value_refs import ValueRefError, check_value, definitions

if TYPE_CHECKING:  # annotations only
    from .scenario import Behavior, Scenario

RUN_CODE = "run_code"  # the reserved Code Mode transport (P114)
FS_INTENTS = ("fs/write-intent", "fs/edit-intent")
CODE_DISPATCH_LOG = "tools/code-dispatch-log"

MUTATION_ROOTS = ("record", "args", "result", "request", "input")  # what a mutate step may write into
ASYNC_ONLY = frozenset({"next", "return-next", "await-signal", "sleep", "gate", "dispatch"})  # steps a synchronous participant cannot take
LATE_STEPS = frozenset({"call", "await", "sleep"})  # what a program can still do once its run is over
BODY_ONLY = frozenset({"dispatch", "append"})  # the work of a body (P71), not of a hook


class ScenarioError(ValueError):
    """A scenario that does not parse or is inconsistent: ``path`` is a JSON path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


_OWN_SIGNALS = re.compile(r"(caller|deadline|fused):.*|turn-[0-9]+", re.S)


def _reserved_signal(do: str, name: str) -> bool:
    """Signal names the oracle keeps for its own signals (registry.World.signal holds them
    all): a scenario signal of that name would be one of them in the oracle and a fresh
    signal in another implementation. ``abort`` may name the call's ``caller`` and the
    loop's ``step``; ``set-signal`` makes a new signal and may name neither."""
    if _OWN_SIGNALS.fullmatch(name):
        return True
    return do == "set-signal" and name in ("caller", "step")


def check_references(s: Scenario) -> None:
    """Every check below, in order; raises ScenarioError at the first that fails."""
    agents = {a.id for a in s.agents}
    ids: dict[str, str] = {}

    def need_agent(path: str, agent: str | None) -> None:
        if agent is not None and agent not in agents:
            raise ScenarioError(path, f"unknown agent {agent!r}")

    for i, a in enumerate(s.agents):
        if a.parent is not None and a.parent not in agents:
            raise ScenarioError(f"$.agents[{i}].parent", f"unknown agent {a.parent!r}")
    _check_acyclic(s)
    for kind, items in (("tools", s.tools), ("listeners", s.listeners), ("guards", s.guards)):
        for i, item in enumerate(items):
            ref = item.ref if kind == "tools" else item.id
            if ref in ids:
                raise ScenarioError(f"$.{kind}[{i}]", f"duplicate participant id {ref!r} (also {ids[ref]})")
            ids[ref] = f"$.{kind}[{i}]"
            need_agent(f"$.{kind}[{i}].scope", item.scope)
    for i, l in enumerate(s.listeners):
        if l.event in FS_INTENTS and l.scope is not None:
            raise ScenarioError(f"$.listeners[{i}].scope", f"a listener on {l.event} cannot be scoped: the body dispatches it without an agent")
        if l.event == "agent/pre-step" and (l.scope is not None or l.global_):
            raise ScenarioError(f"$.listeners[{i}].scope", "an agent/pre-step listener cannot be scoped: which scopes the agent's own dispatch selects is outside the spec")
    getter_ids = _check_getters(s, ids)
    for path, behavior, sync in _behaviors(s):
        for where, step in behavior.all_steps():
            if step.do in BODY_ONLY and not (path.startswith("$.tools[") and path.endswith("].body")):
                raise ScenarioError(f"{path}.{where}", f"step {step.do!r} is the work of a tool body (P71); only a body's script may use it")
            if sync and step.do in ASYNC_ONLY:
                raise ScenarioError(f"{path}.{where}", f"step {step.do!r} needs an asynchronous participant; this one is synchronous")
            if step.do in ("register", "unregister") and step.ref not in ids:
                raise ScenarioError(f"{path}.{where}.ref", f"no tool, listener or guard has id {step.ref!r}")
            if step.do == "mutate" and step.target.split(".")[0] not in MUTATION_ROOTS:
                raise ScenarioError(f"{path}.{where}.target", f"a target starts with one of {', '.join(MUTATION_ROOTS)}")
            if step.do in ("set-signal", "abort") and _reserved_signal(step.do, step.signal):
                raise ScenarioError(f"{path}.{where}.signal", f"signal name {step.signal!r} is the pipeline's own "
                                    "(caller, step, caller:*, deadline:*, fused:*, turn-N): name a signal of the scenario")
            if step.do == "cancel" and s.run.kind != "loop":
                raise ScenarioError(f"{path}.{where}", "step 'cancel' is the agent's cancel(): it needs a loop run")
            _check_step_values(step, f"{path}.{where}", getter_ids)
    for i, l in enumerate(s.listeners):
        if l.event == CODE_DISPATCH_LOG and l.script is not None:
            for where, step in l.script.all_steps():
                if step.do == "mutate" and step.target.split(".")[0] in ("result", "args"):
                    # rc.8 hands the listener a plain object and logs whatever its `content`
                    # holds after the waterfall; whether that entry may be written is not said.
                    raise ScenarioError(f"$.listeners[{i}].script.{where}.target", (
                        "a write into the settled sub-call a tools/code-dispatch-log listener is handed "
                        "is outside the spec (P122 says only what the waterfall returns is logged)"))
    for i, t in enumerate(s.tools):
        if t.name == RUN_CODE and t.registered:
            raise ScenarioError(f"$.tools[{i}].name", (
                f"{RUN_CODE!r} is reserved (P114) and cannot be registered; declare it with "
                "\"registered\": false and register it from a participant to see the refusal"))
    _check_programs(s)
    run = s.run
    if run.kind == "direct":
        seen: set[str] = set()
        for i, c in enumerate(run.calls):
            need_agent(f"$.run.calls[{i}].agent", c.agent)
            _check_value(c.arguments, f"$.run.calls[{i}].arguments", getter_ids)
            for field, gid in c.getters.items():
                if gid not in getter_ids:
                    raise ScenarioError(f"$.run.calls[{i}].getters.{field}", f"no getter has id {gid!r}")
            if c.callId in seen:
                raise ScenarioError(f"$.run.calls[{i}].callId", f"duplicate call id {c.callId!r}")
            seen.add(c.callId)
    else:
        need_agent("$.run.agent", run.agent)
        _check_value(run.nextTurn, "$.run.nextTurn", getter_ids)
        block_ids = [b.id for b in run.blocks]
        for i, b in enumerate(run.blocks):
            if block_ids.count(b.id) > 1:
                raise ScenarioError(f"$.run.blocks[{i}].id", f"duplicate block id {b.id!r}")
        for i, r in enumerate(run.release):
            if r not in block_ids:
                raise ScenarioError(f"$.run.release[{i}]", f"no block has id {r!r}")
        if run.present and any(effective_mode(s, a) != "native" for a in (run.agent, *agents)):
            raise ScenarioError("$.run.present", (
                "the viewer (run.present) covers native presentation only: how a client presents "
                "run_code and its sub-calls is outside the pipeline (P14) and this suite"))
        if not s.codeRuntime and effective_mode(s, run.agent) != "native":
            raise ScenarioError("$.codeRuntime", (
                "a loop agent presenting in Code Mode needs a code runtime before the model is asked "
                "(the prompt's run_code section is assembled from it): outside the spec; use direct "
                "calls to check a missing runtime (P28, P115)"))
        if run.present:
            for i, t in enumerate(s.tools):
                for name in ("presentCall", "presentResult"):
                    if t.define and getattr(t, name) is not None:
                        raise ScenarioError(f"$.tools[{i}].{name}", (
                            "the viewer (run.present) presents raw definitions only: what a defineTool "
                            "presenter does with arguments that fail its parameters is outside the spec"))
    _check_shared_ids(s)


def _check_getters(s: Scenario, ids: dict[str, str]) -> set[str]:
    getter_ids: set[str] = set()
    for i, g in enumerate(s.getters):
        if g.id in ids or g.id in getter_ids:
            raise ScenarioError(f"$.getters[{i}].id", f"duplicate participant id {g.id!r}")
        getter_ids.add(g.id)
    return getter_ids


_VALUE_FIELDS = {"return": "value", "throw": "value", "mutate": "value", "abort": "reason", "defer-context": "message",
                 "inject": "message", "steer": "message", "dispatch": "target", "cancel": "reason"}


def _check_step_values(step: Any, path: str, getter_ids: set[str]) -> None:
    field = _VALUE_FIELDS.get(step.do)
    if field is not None:
        _check_value(getattr(step, field), f"{path}.{field}", getter_ids)


def scenario_values(s: Scenario) -> list[Any]:
    """Every JS value the scenario authors (step values, call arguments, the next turn)."""
    out: list[Any] = []
    for _path, behavior, _sync in _behaviors(s):
        for _where, step in behavior.all_steps():
            field = _VALUE_FIELDS.get(step.do)
            if field is not None:
                out.append(getattr(step, field))
    if s.run.kind == "direct":
        out += [c.arguments for c in s.run.calls]
    elif s.run.nextTurn is not None:
        out.append(s.run.nextTurn)
    return out


def _check_shared_ids(s: Scenario) -> None:
    """A shared object's id names one object for the whole scenario: every value that
    defines it defines the same (a copied step may repeat a definition)."""
    seen: dict[str, Any] = {}
    for value in scenario_values(s):
        for sid, v in definitions(value).items():
            if sid in seen and seen[sid] != v:
                raise ScenarioError("$", f"shared object {sid!r} is defined twice, differently: give each its own id")
            seen[sid] = v


def _check_value(value: Any, path: str, getter_ids: set[str]) -> None:
    try:
        check_value(value, path, getter_ids)
    except ValueRefError as e:
        raise ScenarioError(e.path, e.message) from None


def effective_mode(s: Scenario, agent: str | None) -> str:
    """P28: the nearest scope's declared mode, else the deployment's."""
    parents = {a.id: a for a in s.agents}
    while agent is not None:  # every agent named is one of the scenario's (checked first)
        if parents[agent].mode is not None:
            return parents[agent].mode
        agent = parents[agent].parent
    return s.mode


def _check_programs(s: Scenario) -> None:
    seen: set[str] = set()
    for i, prog in enumerate(s.programs):
        path = f"$.programs[{i}]"
        if prog.id in seen:
            raise ScenarioError(f"{path}.id", f"duplicate program id {prog.id!r}")
        seen.add(prog.id)
        handles: set[str] = set()
        for part, steps in (("steps", prog.steps), ("afterSettle", prog.afterSettle)):
            for j, step in enumerate(steps):
                where = f"{path}.{part}[{j}]"
                if part == "afterSettle" and step.do not in LATE_STEPS:
                    raise ScenarioError(where, (
                        f"step {step.do!r} cannot run once the run is over: the run's result is settled "
                        f"(afterSettle takes {', '.join(sorted(LATE_STEPS))})"))
                if step.do == "call" and step.as_ is not None:
                    if step.as_ in handles:
                        raise ScenarioError(f"{where}.as", f"handle {step.as_!r} is already in use")
                    handles.add(step.as_)
                if step.do == "await" and step.handle not in handles:
                    raise ScenarioError(f"{where}.handle", f"no earlier call step keeps a handle {step.handle!r}")


def _check_acyclic(s: Scenario) -> None:
    parents = {a.id: a.parent for a in s.agents}
    for i, a in enumerate(s.agents):
        seen = {a.id}
        p = a.parent
        while p is not None:
            if p in seen:
                raise ScenarioError(f"$.agents[{i}].parent", "the agent parent chain has a cycle")
            seen.add(p)
            p = parents.get(p)


def _behaviors(s: Scenario) -> list[tuple[str, Behavior, bool]]:
    out: list[tuple[str, Behavior, bool]] = []
    for i, t in enumerate(s.tools):
        out.append((f"$.tools[{i}].body", t.body, False))
        for name in ("finalizeContent", "concurrencySafe", "presentCall", "presentResult"):
            b = getattr(t, name)
            if b is not None:
                out.append((f"$.tools[{i}].{name}", b, True))
        for name in ("render", "presentationMeta"):
            b = getattr(t.output, name)
            if b is not None:
                out.append((f"$.tools[{i}].output.{name}", b, True))
    for i, l in enumerate(s.listeners):
        if l.script is not None:
            out.append((f"$.listeners[{i}].script", l.script, l.event == "tools/result"))
    for i, g in enumerate(s.guards):
        out.append((f"$.guards[{i}].script", g.script, True))
    if s.approval is not None and s.approval.service == "custom":
        out.append(("$.approval.script", s.approval.script, False))
    for i, g in enumerate(s.getters):
        out.append((f"$.getters[{i}].script", g.script, True))
    return out
