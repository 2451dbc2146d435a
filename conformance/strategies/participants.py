"""The scenario's participants: tool definitions (section 3.4), listeners per event, guards,
the approval service and the agents; and the foci (``FOCI``) that say which of them a
scenario concentrates on."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import DELEGATE, FS_INTENTS

from dsh_conformance.strategies.decisions import approval_outcomes
from dsh_conformance.strategies.basics import S, err, message, reused, weighted
from dsh_conformance.strategies.roles import (
    ANSWER,
    APPROVAL,
    BODY,
    EXEC,
    FINALIZER,
    GUARD,
    INTENT,
    OBSERVER,
    POST,
    PRE,
    RENDER,
    Role,
    THROWS,
    behaviors,
    ret,
    then_return,
)
from dsh_conformance.strategies.terminals import (
    DELEGATES,
    HOT_PRE,
    answer_terminals,
    approval_terminals,
    body_terminals,
    classifier_behaviors,
    exec_terminals,
    finalizer_terminals,
    guard_terminals,
    hot_answer_terminals,
    hot_exec_terminals,
    hot_guard_terminals,
    hot_intent_terminals,
    hot_observer_terminals,
    hot_post_terminals,
    intent_terminals,
    meta_terminals,
    observer_terminals,
    post_terminals,
    pre_terminals,
    presenter_behaviors,
    render_terminals,
)
from dsh_conformance.strategies.values import ABORT_AND_WAIT, ABORT_CALLER


DEFINE_PARAMETERS = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
OUTPUT_SCHEMAS = [{}, {"type": "integer"}, {"type": "object", "properties": {"x": {}}, "required": ["x"]}]

FOCI = ("mixed", "entry", "pre", "approval", "guards", "execute", "body", "post", "finalize", "abort", "loop",
        "work", "values")
"""What a scenario concentrates on. Each focus guarantees its participant and weights its
interesting branches up, so that a modest budget reaches every rule; "mixed" (where
shrinking goes) weights nothing. "work" is the work a body does and what a client shows
of it (P71, P14): intent listeners on both events, a first call whose body dispatches an
intent or appends a session event, and, in a loop (likelier then), the step's view
through ``t1``'s presenters. "values" sends every call to ``t1`` and converts a value per
call where the spec turns one into text (``value_rounds``; only in the wide strategy)."""


@reused
def chance(hot: bool, cold: int, warm: int = 1) -> S:
    """A boolean: 1 in ``cold + 1`` normally, even odds when ``hot``."""
    return weighted((1, False), (1, True)) if hot else weighted((cold, False), (warm, True))


@reused
def output_schemas(hot: bool) -> S:
    """A tool's output schema: none mostly (its drawn ``{}`` is not written), or one of the others."""
    return weighted((2 if hot else 4, st.just({})), (1, st.sampled_from(OUTPUT_SCHEMAS[1:])))


@reused
@st.composite
def tool_defs(draw: Any, loop: bool, deadline: bool, name: str, ref: str | None, scope: str | None,
              focus: str = "mixed", present: bool = False, present_hot: bool = False) -> dict[str, Any]:
    """A tool definition (section 3.4) with scripted body, projections and finalizer.
    ``focus`` is the scenario's focus when this tool is the one it concentrates on.
    ``present``: the run's viewer calls the presenters (``run.present``), so a raw tool
    often has scripted ones and a ``defineTool`` tool none (the scenario check refuses
    them); ``present_hot`` makes the tool raw and gives it both."""
    body_hot, final_hot, loop_hot = focus == "body", focus == "finalize", focus == "loop"
    tool: dict[str, Any] = {"name": name}
    if ref is not None:
        tool["id"] = ref
    if scope is not None:
        tool["scope"] = scope
    if draw(weighted((1, False), (2, True)) if body_hot else weighted((4, False), (1, True))) and not present_hot:
        tool["define"] = True
        tool["parameters"] = DEFINE_PARAMETERS
    schema = draw(output_schemas(body_hot))
    output: dict[str, Any] = {"schema": schema} if schema else {}
    if draw(chance(body_hot, 3)):
        output["render"] = draw(behaviors(RENDER, loop, render_terminals))
    if draw(chance(body_hot, 3)):
        output["presentationMeta"] = draw(behaviors(RENDER, loop, meta_terminals))
    if output:
        tool["output"] = output
    if draw(chance(body_hot and deadline, 3)):
        tool["timeoutMs"] = draw(st.sampled_from([10, 40]))
    integer = schema.get("type") == "integer"
    terminal = body_terminals(integer, deadline and "timeoutMs" in tool, loop, body_hot or loop_hot)
    tool["body"] = draw(behaviors(BODY, loop, terminal))
    if final_hot or draw(weighted((2, False), (1, True))):
        tool["finalizeContent"] = draw(behaviors(FINALIZER, loop, finalizer_terminals))
    if loop and (loop_hot or draw(weighted((1, False), (2, True)))):
        tool["concurrencySafe"] = draw(classifier_behaviors)
    if present:
        if not tool.get("define") and (present_hot or draw(weighted((1, False), (2, True)))):
            tool["presentCall"] = draw(presenter_behaviors(False, present_hot))
            if present_hot or draw(weighted((1, False), (3, True))):
                tool["presentResult"] = draw(presenter_behaviors(True, present_hot))
    elif draw(chance(False, 8)):  # without a viewer, nothing may call them (P14)
        tool["presentCall"] = [{"do": "throw", "value": err("never called")}]
        tool["presentResult"] = [{"do": "throw", "value": err("never called")}]
    if draw(chance(False, 8)):
        tool["registered"] = False
    return tool


EVENT_ROLES: dict[str, tuple[Role, S]] = {
    "tools/pre-execute": (PRE, pre_terminals),
    "tools/execute": (EXEC, exec_terminals),
    "tools/post-execute": (POST, post_terminals),
    "tools/result": (OBSERVER, observer_terminals),
    "approval/request": (ANSWER, answer_terminals),
    "fs/write-intent": (INTENT, intent_terminals),
    "fs/edit-intent": (INTENT, intent_terminals),
}

PRE_STEP = "agent/pre-step"
PRE_STEP_MESSAGE = message("pre-1", "rewritten at the boundary")
pre_step_behaviors: S = weighted(
    (3, DELEGATES),
    (2, st.just([{"do": "observe", "what": "request"}, *DELEGATE])),
    (1, st.just([{"do": "next"}, {"do": "return", "value": {"kind": "enter", "messages": []}}])),
    (1, st.just([{"do": "return", "value": {"kind": "enter", "messages": [PRE_STEP_MESSAGE]}}])),
    (1, st.just([{"do": "return", "value": {"kind": "reject"}}])),
    (1, st.just({"perInvocation": [list(DELEGATE), [{"do": "return", "value": {"kind": "reject"}}]]})),
)
"""An ``agent/pre-step`` listener (P110): delegate, look, rewrite the claimed messages
(away, or to another), or reject the step. Its payload is no record: no writes."""
# How many listeners each event gets, none first.
LISTENER_COUNTS: dict[str, S] = {
    "tools/pre-execute": weighted((2, st.just(0)), (3, st.just(1)), (1, st.just(2))),
    "tools/execute": weighted((3, st.just(0)), (2, st.just(1)), (1, st.just(2))),
    "tools/post-execute": weighted((2, st.just(0)), (3, st.just(1)), (1, st.just(2))),
    "tools/result": weighted((3, st.just(0)), (2, st.just(1)), (1, st.just(2))),
    "approval/request": weighted((1, st.just(0)), (2, st.just(1)), (1, st.just(2))),
    # invoked only when a body dispatches (P71): often none
    "fs/write-intent": weighted((5, st.just(0)), (2, st.just(1)), (1, st.just(2))),
    "fs/edit-intent": weighted((5, st.just(0)), (2, st.just(1)), (1, st.just(2))),
    PRE_STEP: weighted((3, st.just(0)), (2, st.just(1)), (1, st.just(2))),
}


def hot_terminals(event: str, focus: str) -> S | None:
    """The terminal steps of the listener a focus concentrates on, if it is on ``event``."""
    match event, focus:
        case "tools/pre-execute", ("pre" | "approval" | "guards"):
            return HOT_PRE[focus]
        case "tools/execute", "execute":
            return hot_exec_terminals
        case "tools/post-execute", "post":
            return hot_post_terminals
        case "tools/result", "finalize":
            return hot_observer_terminals
        case "approval/request", "approval":
            return hot_answer_terminals
        case ("fs/write-intent" | "fs/edit-intent"), "work":
            return hot_intent_terminals
    return None


@reused
@st.composite
def listener_defs(draw: Any, loop: bool, agents: tuple[str, ...], lid: str, event: str,
                  hot: S | None = None) -> dict[str, Any]:
    """A listener on ``event``: unscoped, scoped to an agent, or global; maybe prepended
    or registered only later by a step. ``hot`` replaces its terminal steps. An intent
    listener is never scoped (the scenario check refuses it: a body dispatches without
    naming an agent)."""
    out: dict[str, Any] = {"id": lid, "event": event}
    if event == PRE_STEP:  # never scoped (the scenario check refuses it)
        out["script"] = draw(pre_step_behaviors)
        return out
    if agents and event not in FS_INTENTS and draw(weighted((3, False), (1, True))):
        out["scope"] = agents[draw(st.integers(0, len(agents) - 1))]
        if draw(weighted((3, False), (1, True))):
            out["global"] = True
    if draw(weighted((4, False), (1, True))):
        out["prepend"] = True
    if hot is None and draw(weighted((8, False), (1, True))):
        out["registered"] = False
    role, terminals = EVENT_ROLES[event]
    if hot is not None:
        out["script"] = draw(behaviors(role, loop, hot))
    elif draw(weighted((1, False), (5, True))):
        out["script"] = draw(behaviors(role, loop, terminals))
    return out


@reused
@st.composite
def guard_defs(draw: Any, loop: bool, agents: tuple[str, ...], gid: str, hot: bool = False) -> dict[str, Any]:
    """A guard of the global layer or of an agent's scope, maybe registered later."""
    out: dict[str, Any] = {"id": gid}
    if agents and draw(weighted((2, False), (1, True))):
        out["scope"] = agents[draw(st.integers(0, len(agents) - 1))]
    if draw(chance(False, 8)):
        out["registered"] = False
    out["script"] = draw(behaviors(GUARD, loop, hot_guard_terminals if hot else guard_terminals))
    return out


hot_approval_terminals: S = weighted(
    (3, ret(approval_outcomes)),
    (2, st.just([ABORT_CALLER, {"do": "return", "value": "cancelled"}])),
    (1, THROWS),
    (1, then_return(ABORT_AND_WAIT, approval_outcomes)),
)


@cache
def approvals(loop: bool, hot: bool = False) -> S:
    """Approval in every state: absent, the shipped service (ask or never), a custom one."""
    return weighted(
        (1 if hot else 2, st.none()),
        (2, st.just({"service": "shipped"})),
        (1, st.just({"service": "shipped", "policy": "never"})),
        (2, st.builds(lambda s: {"service": "custom", "script": s},
                      behaviors(APPROVAL, loop, hot_approval_terminals if hot else approval_terminals))),
    )


AGENT_SHAPES: list[list[dict[str, Any]]] = [
    [],
    [{"id": "a1"}],
    [{"id": "a1"}, {"id": "a2", "parent": "a1"}],
    [{"id": "a1"}, {"id": "a2", "parent": "a1"}, {"id": "a3", "parent": "a2"}],
    [{"id": "a1"}, {"id": "b1"}],
]


AGENT_SHAPE_CHOICES: S = weighted((1, st.just(0)), (2, st.just(1)), (3, st.integers(2, 4)))


@reused
@st.composite
def agent_lists(draw: Any, loop: bool, n_tools: int = 1, need: bool = False) -> list[dict[str, Any]]:
    """No agent, one, a parent chain, or siblings; rarely without an open turn (direct
    runs: the loop's agent is inside the turn it opened) or with a restriction naming
    tools that exist (a restriction of unknown tools is refused at registration, which is
    out of scope, section 1.3)."""
    shape = draw(AGENT_SHAPE_CHOICES)
    if (loop or need) and shape == 0:
        shape = 1
    agents = copy.deepcopy(AGENT_SHAPES[shape])
    for a in agents:
        if not loop and draw(weighted((8, False), (1, True))):
            a["openTurn"] = False
        if draw(weighted((12, False), (1, True))):
            a["restrict"] = draw(st.sampled_from([{"allow": ["t1"]}, {"deny": [f"t{n_tools}"]}]))
    return agents
