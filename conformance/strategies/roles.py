"""Participant roles (what a script of each kind may do) and the steps every role draws
before its end: write attempts on identity fields and handed results (P11, P24), side
effects, and ``behaviors``, a script or a Behavior picking one by call or by invocation."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cache
from typing import Any

from hypothesis import strategies as st

from dsh_conformance.strategies.basics import S, message, reused, weighted
from dsh_conformance.strategies.values import (
    CALL_SLOTS,
    MESSAGE_IDS,
    REF_SLOTS,
    append_steps,
    dispatch_steps,
    messages,
    scalars,
    thrown_values,
)


@dataclass(frozen=True)
class Role:
    """A participant kind: what its script may do (kit.scenario's rules for steps)."""
    name: str
    sync: bool
    record: bool = True
    result: bool = False  # it is handed a result
    request: bool = False  # it is handed an approval request


PRE = Role("pre", sync=False)
EXEC = Role("exec", sync=False, result=True)
POST = Role("post", sync=False, result=True)
ANSWER = Role("answer", sync=False, request=True)
APPROVAL = Role("approval", sync=False, request=True)
GUARD = Role("guard", sync=True)
BODY = Role("body", sync=False)
RENDER = Role("render", sync=True)
FINALIZER = Role("finalizer", sync=True, result=True)
OBSERVER = Role("observer", sync=True, result=True)
INTENT = Role("fs-intent", sync=False)  # an fs/write-intent or fs/edit-intent listener: handed the target as args

IDENTITY_TARGETS = ("record.callId", "record.name", "record.arguments", "record.arguments.x", "record.rootCallId",
                    "record.token", "record.agent", "record.parent", "record")
RESULT_TARGETS = ("result.isError", "result.content", "result.value", "result.error.message",
                  "result.content.0.text", "result.additionalContexts")
# Deeper and stranger places in a handed result: past the end of a frozen array, an added
# property, through a primitive, inside the value (P11: deeply immutable).
DEEP_RESULT_TARGETS = ("result.content.7", "result.content.1", "result.value.x", "result.value.0",
                       "result.value.x.y", "result.meta", "result.concludesTurn", "result.error.info.code",
                       "result.content.0.text.x", "result.content.0.extra", "result.error",
                       "result.additionalContexts.0", "result.isError.x")


def result_writes() -> S:
    """A caught write attempt somewhere inside a handed result."""
    return st.builds(lambda t, op, v: {"do": "mutate", "target": t, "op": op, "value": v, "catch": True},
                     st.sampled_from(RESULT_TARGETS + DEEP_RESULT_TARGETS),
                     weighted((3, "set"), (1, "delete"), (1, "define")), weighted((3, st.just("forged")), (1, scalars)))
OTHER_TARGETS = ("record.custom", "record.callId.x", "args.x", "args", "input.name",
                 "input.arguments.x")
MUTATE_REQUEST = True
# Writes into record.agent / record.parent: refused when the call has none (undefined has
# no properties), applied to an agent object (not frozen, P24).
ABSENT_FIELD_TARGETS = ("record.agent.x", "record.parent.x")


@cache
def mutation_steps(role: Role) -> S:
    """A write attempt: identity fields, the record, arguments, handed results, the input."""
    targets = IDENTITY_TARGETS + RESULT_TARGETS + OTHER_TARGETS + ABSENT_FIELD_TARGETS + DEEP_RESULT_TARGETS
    if role is INTENT:
        # An intent listener's args are the dispatched target, not the body's arguments:
        # whether a waterfall hands its listeners a frozen target is not the spec's to say.
        targets = tuple(t for t in targets if t.split(".")[0] != "args")
    if role.request and MUTATE_REQUEST:
        targets += ("request.toolName", "request.reason")
    return st.builds(
        lambda target, op, value, catch: {"do": "mutate", "target": target, "op": op, "value": value, "catch": catch},
        st.sampled_from(targets),
        weighted((3, "set"), (1, "delete"), (1, "define")),
        weighted((3, st.just("forged")), (1, scalars)),
        weighted((4, True), (1, False)),
    )


@cache
def side_steps(role: Role, loop: bool) -> S:
    """One step with a side effect that never suspends for good."""
    options: list[tuple[int, Any]] = [(2, mutation_steps(role))]
    if role.record:
        options += [
            (2, {"do": "observe", "what": "record"}),
            (1, st.builds(lambda m: {"do": "defer-context", "message": m}, messages)),
            (1, {"do": "conclude-turn"}),
            (1, {"do": "abort", "signal": "caller"}),
            (1, {"do": "abort", "signal": "s1"}),
            (1, {"do": "set-signal", "signal": "s1"}),
        ]
    if role.result:
        options.append((2, {"do": "observe", "what": "result"}))
    if role.request:
        options.append((2, {"do": "observe", "what": "request"}))
    if role is BODY or role is INTENT:
        options.append((2, {"do": "observe", "what": "args"}))
    if role is BODY:  # the body's own work (P71): an intent waterfall, a session event
        options += [(1, dispatch_steps), (1, append_steps)]
    if not role.sync:
        options.append((1, st.builds(lambda ms: {"do": "sleep", "ms": ms}, st.sampled_from([0, 5, 30]))))
    options.append((1, st.builds(lambda do, n: {"do": do, "ref": f"#r{n}"},
                                 st.sampled_from(["unregister", "register"]), st.integers(0, REF_SLOTS - 1))))
    if loop:  # injected messages stay lossless: the session log refuses others (caller contract, section 1)
        options.append((1, st.builds(lambda do, m: {"do": do, "message": message(m)},
                                     st.sampled_from(["inject", "steer"]), st.sampled_from(MESSAGE_IDS))))
        if role.record:  # the agent's cancel(), keeping or clearing the queue (P112)
            options.append((1, st.builds(lambda keep: {"do": "cancel", "keepInbox": keep}, st.booleans())))
    return weighted(*options)


@cache
def prefixes(role: Role, loop: bool) -> S:
    return weighted((3, st.just([])), (3, st.lists(side_steps(role, loop), min_size=1, max_size=2)))


@reused
def ret(value: S) -> S:
    return st.builds(lambda v: [{"do": "return", "value": v}], value)


def then_return(steps: list[dict[str, Any]], value: S) -> S:
    return st.builds(lambda v: [*copy.deepcopy(steps), {"do": "return", "value": v}], value)


THROWS: S = st.builds(lambda v: [{"do": "throw", "value": v}], thrown_values)


@cache
def behaviors(role: Role, loop: bool, terminal: S) -> S:
    """A script (side effects, then ``terminal``), or a Behavior that picks one by call
    id or by invocation count."""
    one = st.builds(lambda pre, end: pre + end, prefixes(role, loop), terminal)
    return weighted(
        (6, one),
        (1, st.builds(lambda n, a, b: {"byCall": {f"#c{n}": a}, "steps": b}, st.integers(0, CALL_SLOTS - 1), one, one)),
        (1, st.builds(lambda a, b: {"perInvocation": [a, b]}, one, one)),
    )
