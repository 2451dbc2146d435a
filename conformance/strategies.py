"""Hypothesis strategies for whole scenario documents, and the measured rule coverage.

``scenarios(profiles)`` draws plain JSON dicts that ``oracle.parse_scenario`` accepts,
from the full scenario language (``oracle/scenario.py``), weighted toward the cases that
break implementations: malformed decisions, throws of every kind in every participant,
JS-only values (spec section 3.11) at every boundary, identity and result mutation
attempts, aborts at every checkpoint, unknown and vanishing tools, invalid arguments,
approval in every state, scoped and global listeners and guards on agent chains, retries,
signal replacement, the timeout policy, direct multi-call runs and loop batches, the work a
body does (filesystem intent waterfalls it dispatches, session events it appends, P71) and
a client's view of a loop step through ``presentCall``/``presentResult`` (P14). A third of
the draws are swarm draws: a random subset of further foci turned on at once, so that rare
combinations meet; the wide strategy (``examples(wide=True)``) adds the values the spec
turns into text (the ``values`` focus, see ``WIDE_ONLY``).

Every drawn scenario

- parses;
- runs to an end in the oracle. Suspending steps are placed where something settles them
  (``await-signal`` after aborting every signal it could wait on, or under a deadline;
  ``gate`` only in loop bodies), on every path an implementation could take. A loop gate order or a wait that still never settles is repaired
  deterministically (see ``settle``), so no draw is ever rejected for it;
- cites the rules it exercises (``rules``), computed from the oracle's trace by ``cite``.

Shrinking gives small, readable scenarios: every choice is a ``one_of`` whose first branch
is the plain case (no listener, delegate, allow, abstain, return a small value), and every
list is short.

``measure_coverage(n, seed)`` counts, over ``n`` drawn examples, how many exercised each
rule of the requested profiles and each trace observation kind ``(stage, what)``.
"""

from __future__ import annotations

import copy
import json
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from hypothesis import strategies as st

from dsh_conformance.oracle import Scenario, ScenarioRunError, Trace, parse_scenario, run_scenario
from dsh_conformance.oracle.jsvalue import clone
from dsh_conformance.oracle.scenario import DELEGATE, FS_INTENTS, Behavior, CustomApproval, DirectRun, LoopRun

from . import code_mode_strategies
from .rules import rules_of
from .strategy_kit import UNDEF, edit_steps, err, message, reused, text, weighted
from .value_strategies import (ARGS_GETTER, ERROR_SHAPES, NAME_GETTER, ROOT_GETTER, getter_declarations, getter_values,
                               shared_values, unique_shared_ids)

ALL_PROFILES: frozenset[str] = frozenset({"core", "reference", "loop", "code-mode"})
DEFAULT_EXAMPLES = 300  # the default example budget of the coverage measurement
DEFAULT_SEED = 20240601

S = st.SearchStrategy


# ============================================================================ helpers

ABORT_CALLER = {"do": "abort", "signal": "caller"}
# Waiting for the participant's signal settles only if that signal aborts. Whatever path
# an implementation takes (it may run a body the oracle never reaches), the signal a
# participant waits on is the caller's, one fused with it, or "s1", the one named signal a
# participant can put on the record before an approval request or inside the body: abort
# both, then wait. (Waits under a timeout deadline are the other kind; see body_terminals.)
ABORT_AND_WAIT = [ABORT_CALLER, {"do": "abort", "signal": "s1"}, {"do": "await-signal"}]

# ============================================================================ values

# Lone surrogates are lossless (3.10, 3.11): strings and keys hold them now and then.
_STRINGS = st.sampled_from(["a", "", "hello", "Ünïcödé", "x y", "0", "\udc00x", "\ud800"])
_KEYS = st.sampled_from(["a", "b", "x", "__proto__", "10", "2", "k\udbff"])

scalars: S = weighted(
    (2, st.integers(0, 3)),
    (1, st.none()),
    (1, st.booleans()),
    (1, _STRINGS),
    (1, st.sampled_from([1.5, -2.25, 1e21, 1e-7, -7, 2**53 + 2])),
)

lossless_values: S = st.recursive(
    scalars,
    lambda inner: weighted(
        (2, st.dictionaries(_KEYS, inner, max_size=3)),
        (1, st.lists(inner, max_size=3)),
        # escapes that are still lossless (3.11): a null-prototype object, a literal "$js" key
        (1, st.builds(lambda e: {"$js": "null-proto", "entries": e}, st.dictionaries(_KEYS, inner, max_size=2))),
        (1, st.builds(lambda v: {"$js": "object", "entries": {"$js": "literal", "a": v}}, inner)),
    ),
    max_leaves=5,
)
"""Lossless JSON (section 3.10), including the escapes that snapshot to plain objects."""

JS_ONLY: list[Any] = [
    UNDEF, {"$js": "NaN"}, {"$js": "Infinity"}, {"$js": "-Infinity"}, {"$js": "-0"},
    {"$js": "bigint", "value": "12345678901234567890"}, {"$js": "function", "name": "f"},
    {"$js": "symbol", "description": "s"}, {"$js": "date", "value": "2020-01-01T00:00:00.000Z"},
    {"$js": "instance", "class": "Map"}, {"$js": "instance", "class": "Uint8Array"},
    {"$js": "promise", "resolves": 1}, err("as data"),
    [1, {"$js": "hole"}], {"$js": "array", "items": [1], "extra": {"k": 1}},
    {"$js": "object", "entries": {"a": 1}, "symbolKeys": 1},
    {"$js": "object", "entries": {}, "hidden": {"h": 1}},
    {"a": {"$js": "cycle", "up": 1}}, [[{"$js": "cycle", "up": 2}]],
    {"a": 1, "b": {"$js": "getter-throws", "message": "getter boom"}},
    {"g": {"$js": "getter-throws", "thrown": {"$js": "error", "class": "RangeError", "message": "deep getter",
                                               "name": "DeepError", "code": "DEEP", "harness": True}}},
    {"a": {"$js": "NaN"}, "b": {"$js": "getter-throws", "message": "second offender"}},
    {"$js": "hostile"},
]

js_only_values: S = st.sampled_from(JS_ONLY)
"""Values JSON cannot carry, as tokens: none of them is lossless (some throw when read)."""

boundary_values: S = weighted(
    (4, lossless_values),
    (2, js_only_values),
    (1, st.builds(lambda a, b: {"ok": a, "bad": b}, lossless_values, js_only_values)),
    # read once per reach by the snapshot (P13): getters, and one object reached twice
    (1, getter_values(lossless_values)),
    (1, shared_values(lossless_values)),
)
"""What a participant hands across a snapshot boundary: mostly lossless, often not."""

THROWN: list[Any] = [
    err("boom"),
    err("bad type", "TypeError"),
    err("lone \udfff surrogate"),
    {"$js": "error", "class": "PolicyError", "message": "policy refused", "name": "PolicyError", "code": "POLICY",
     "harness": True},
    {"$js": "error", "class": "QuotaError", "message": "no name given", "code": "QUOTA", "harness": True},
    "a thrown string", 42, None, UNDEF, {"message": "plain object"}, {"message": 5}, ["a", "b"], {"x": 1},
    {"$js": "hostile"}, {"$js": "symbol", "description": "thrown"}, {"$js": "null-proto", "entries": {}},
    {"message": {"$js": "getter-throws", "message": "message getter"}}, {"$js": "bigint", "value": "7"},
    *ERROR_SHAPES,
]
# Non-Error objects whose message P9 reads: weighted up, one entry of many otherwise.
MESSAGE_OBJECTS: list[Any] = [{"message": "plain object"}, {"$js": "null-proto", "entries": {"message": "null-proto"}},
                              {"message": "has a name", "name": "Named"}, {"message": ""}]
thrown_values: S = weighted((5, st.sampled_from(THROWN)), (1, st.sampled_from(MESSAGE_OBJECTS)))
"""Thrown values: Errors, HarnessErrors (with and without a name), non-Error values, and
values whose inspection throws (P9)."""

contents: S = weighted(
    (3, st.builds(lambda t: [text(t)], _STRINGS)),
    (1, st.just([])),
    (1, st.just([text("a"), {"type": "image", "attachment": {"id": "img"}}])),
    (1, st.just([{"type": "text", "text": {"$js": "NaN"}}])),
    (1, st.just([{"type": "text", "text": {"$js": "getter-throws", "message": "content getter"}}])),
    (1, st.just({"$js": "undefined"})),
)
"""Content arrays, some of which fail materialization."""


# Scripts refer to the scenario's participants and calls through placeholders, resolved
# once the scenario is drawn: "#r<n>" is the n-th participant id (modulo their number),
# "#c<n>" the n-th call id. So every strategy below is built once and reused (hypothesis
# validates a strategy object on first use: building them per draw would dominate).
REF_SLOTS = 6
CALL_SLOTS = 3
MESSAGE_IDS = ("m1", "m2", "m3", "m4", "m5")

messages: S = weighted(
    (6, st.builds(message, st.sampled_from(MESSAGE_IDS))),
    (1, st.builds(lambda m: message(m, "ctx \ud800"), st.sampled_from(MESSAGE_IDS))),
    (1, st.builds(lambda m: {**message(m), "extra": {"$js": "NaN"}}, st.sampled_from(MESSAGE_IDS))),
)
"""User messages (contexts, injections); a few ids only, so that duplicates happen (P113)."""

context_lists: S = weighted((3, st.lists(messages, min_size=1, max_size=2)), (1, st.just([])))

# The body's own work (P71). Intent targets stay lossless: what a waterfall does with a
# target JSON cannot carry is nobody's rule.
fs_targets: S = weighted((3, st.none()), (1, st.just({"path": "a.txt", "content": "hello"})), (1, lossless_values))


def dispatch(event: str, target: Any = None, catch: bool = False) -> dict[str, Any]:
    """A body's ``dispatch`` step; the target defaults to the language's (``notes.txt``)."""
    step: dict[str, Any] = {"do": "dispatch", "event": event}
    if target is not None:
        step["target"] = target
    if catch:
        step["catch"] = True
    return step


dispatch_steps: S = st.builds(dispatch, st.sampled_from(FS_INTENTS), fs_targets, weighted((3, False), (1, True)))
"""A body dispatching an intent waterfall; a listener's throw is the body's, unless caught."""

TODO_STATUSES = ("pending", "in_progress", "completed")
todo_lists: S = st.lists(st.builds(lambda c, s: {"content": c, "status": s},
                                   st.sampled_from(["read the spec", "write the oracle", "", "Ünïcödé", "fix \udc00"]),
                                   st.sampled_from(TODO_STATUSES)), max_size=3)
append_steps: S = st.builds(lambda todos: {"do": "append", "type": "todo/write", "data": {"todos": todos}},
                            todo_lists)
"""A body appending ``todo/write`` to its call's agent session (a call without an agent:
the step throws)."""


# ============================================================================ roles

@dataclass(frozen=True)
class Role:
    """A participant kind: what its script may do (oracle.scenario's rules for steps)."""
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


# ============================================================================ decisions and outcomes

PRE_ALLOW = [{"kind": "allow"}, {"kind": "allow", "arguments": {"x": 99}, "name": "forged", "callId": "forged"}]
PRE_DENY = [{"kind": "deny", "reason": "policy says no"}, {"kind": "deny", "reason": ""}]
PRE_ASK = [{"kind": "ask"}, {"kind": "ask", "reason": "please confirm"}, {"kind": "ask", "reason": UNDEF}]
PRE_MALFORMED = [
    UNDEF, None, 0, "allow", [], {"kind": "deny"}, {"kind": "deny", "reason": 5}, {"kind": "ask", "reason": 1},
    {"kind": "maybe"}, {"kind": {"$js": "getter-throws", "message": "kind getter"}},
    {"kind": "deny", "reason": {"$js": "getter-throws", "message": "reason getter"}},
    {"$js": "promise", "resolves": {"kind": "deny", "reason": "decided later"}},
    {"$js": "null-proto", "entries": {"kind": "allow"}},
]
# A deny is well formed only with a string reason (P31); these are contract violations, drawn
# on every pre-execute listener (not only a focused one), so that 100 draws meet them.
PRE_DENY_NO_REASON = [{"kind": "deny"}, {"kind": "deny", "reason": 5}, {"kind": "deny", "reason": None}]
pre_decisions: S = weighted((2, st.sampled_from(PRE_ALLOW)), (2, st.sampled_from(PRE_DENY)),
                            (4, st.sampled_from(PRE_ASK)), (2, st.sampled_from(PRE_MALFORMED)),
                            (1, st.sampled_from(PRE_DENY_NO_REASON)))
"""Pre-execute decisions (P31): well formed, asks often, and not well formed."""

FEEDBACKS = [[text("blocked")], [], [text("a"), {"type": "image", "attachment": {}}],
             [{"type": "text", "text": 5}, {"type": "text"}], "not an array"]
post_decisions: S = weighted(
    (2, st.just({"kind": "accept"})),
    # decisions in every object form (P78: any non-null object): null-prototype ones
    (1, st.sampled_from([{"$js": "null-proto", "entries": {"kind": "accept", "value": {"np": 1}}},
                         {"$js": "null-proto", "entries": {"kind": "accept", "content": [text("np")]}},
                         {"$js": "null-proto", "entries": {"kind": "block", "feedback": [text("np")]}}])),
    (2, st.builds(lambda c: {"kind": "accept", "content": c}, contents)),
    (2, st.builds(lambda v: {"kind": "accept", "value": v}, boundary_values)),
    (2, st.builds(lambda f: {"kind": "block", "feedback": f}, st.sampled_from(FEEDBACKS))),
    (1, st.builds(lambda cs: {"kind": "accept", "additionalContexts": cs}, context_lists)),
    (1, st.builds(lambda cs: {"kind": "block", "feedback": [text("blocked")], "additionalContexts": cs},
                  context_lists)),
    (1, st.sampled_from([{"kind": "accept", "content": [text("c")], "value": 1},
                         {"kind": "accept", "value": UNDEF}, {"kind": "accept", "content": UNDEF}])),
    (1, st.sampled_from([UNDEF, None, "accept", {"kind": "reject"},
                         {"kind": {"$js": "getter-throws", "message": "kind getter"}},
                         {"$js": "promise", "resolves": {"kind": "accept"}}])),
)
"""Post-execute decisions (P78): accept with content, value or contexts; block; both;
not well formed."""

authored_results: S = weighted(
    (2, st.builds(lambda v: {"isError": False, "value": v}, boundary_values)),
    (1, st.sampled_from([{"$js": "null-proto", "entries": {"isError": False, "value": {"np": 1}}},
                         {"$js": "null-proto", "entries": {"isError": True, "error": {"message": "np"},
                                                           "content": [text("Error: np")]}}])),
    (1, st.builds(lambda v, cs: {"isError": False, "value": v, "content": [text("ignored")],
                                 "additionalContexts": cs}, lossless_values, context_lists)),
    (2, st.builds(lambda c: {"isError": True, "error": {"message": "wrapper failed"}, "content": c}, contents)),
    (1, st.just({"isError": True, "error": {"message": "w", "info": {"name": "WrapError", "code": "W"}},
                 "content": [text("Error: w")], "meta": {"m": 1}, "additionalContexts": []})),
    (1, st.sampled_from([{"isError": True, "content": [text("no error field")]},
                         {"isError": 1, "error": {"message": "truthy"}, "content": []},
                         {"isError": True, "error": {"message": {"$js": "NaN"}}, "content": []},
                         {"value": 3}, 42, "text", None, UNDEF,
                         {"$js": "promise", "resolves": {"isError": False, "value": 5}}])),
)
"""What a ``tools/execute`` wrapper returns instead of ``next()``'s result (P62, P63)."""

OUTCOMES = ["allowed-once", "rejected", "cancelled", "unavailable"]
approval_outcomes: S = weighted(
    (6, st.sampled_from(OUTCOMES)),
    (1, st.sampled_from(["maybe", 7, UNDEF, {"o": 1}, {"$js": "bigint", "value": "9"},
                         {"$js": "promise", "resolves": "allowed-once"},
                         # P41 (revision 2026-12-01): String of a symbol; JSON.stringify's own throw
                         {"$js": "symbol", "description": "q"}, {"o": {"$js": "bigint", "value": "1"}}])),
)

GUARD_DENIALS = ["guard says no", "", None, False, 0, 7, {"why": "x"}, ["a", 1], {"$js": "NaN"},
                 {"$js": "promise", "resolves": UNDEF}, {"$js": "bigint", "value": "3"},
                 {"$js": "symbol", "description": "deny"}, {"$js": "function", "name": "g"}]

# ============================================================================ terminal steps per role

DELEGATES = st.just(list(DELEGATE))

pre_terminals: S = weighted(
    (3, DELEGATES),
    (5, ret(pre_decisions)),
    (1, then_return([{"do": "next"}], pre_decisions)),
    (1, st.just([{"do": "next", "catch": True}, {"do": "return-next"}])),
    (1, st.just([{"do": "next"}, {"do": "next"}, {"do": "return-next"}])),
    (2, THROWS),
)

exec_terminals: S = weighted(
    (3, DELEGATES),
    (2, ret(authored_results)),
    (1, then_return([{"do": "next"}], authored_results)),
    (1, st.just([{"do": "next"}, {"do": "observe", "what": "result"}, {"do": "next"}, {"do": "return-next"}])),
    (1, st.just([{"do": "set-signal", "signal": "w1"}, {"do": "next"}, {"do": "observe", "what": "record"},
                 {"do": "return-next"}])),
    (1, st.just([{"do": "set-signal", "signal": "w1"}, {"do": "abort", "signal": "w1"}, {"do": "next"},
                 {"do": "return-next"}])),
    (1, st.just([{"do": "set-signal", "signal": "w1"}, {"do": "next"}, {"do": "set-signal", "signal": "restore"},
                 {"do": "return-next"}])),
    (1, st.builds(lambda x: [{"do": "next", "catch": True}, {"do": "throw", "value": x}], thrown_values)),
    (1, THROWS),
    # P63: a result built for one execution, kept and handed back by another call's wrapper
    (1, st.just([{"do": "next"}, {"do": "keep", "what": "next", "name": "k1"}, {"do": "return-next"}])),
    (1, st.builds(lambda name: [{"do": "next"}, {"do": "return-kept", "name": name}], st.sampled_from(["k1", "k2"]))),
)

post_terminals: S = weighted(
    (2, DELEGATES),
    (5, ret(post_decisions)),
    (1, then_return([{"do": "next"}], post_decisions)),
    (1, st.just([{"do": "next"}, {"do": "next"}, {"do": "return-next"}])),
    (1, THROWS),
)

answer_terminals: S = weighted(
    (2, DELEGATES),
    (4, ret(approval_outcomes)),
    (1, THROWS),
    (1, then_return(ABORT_AND_WAIT, approval_outcomes)),
    (1, then_return([{"do": "sleep", "ms": 5}], approval_outcomes)),
)

approval_terminals: S = weighted(
    (4, ret(approval_outcomes)),
    (1, THROWS),
    (1, st.just([{"do": "abort", "signal": "caller"}, {"do": "return", "value": "cancelled"}])),
    (1, then_return(ABORT_AND_WAIT, approval_outcomes)),
)

guard_terminals: S = weighted((5, ret(st.just(UNDEF))), (3, ret(st.sampled_from(GUARD_DENIALS))), (1, THROWS))

finalizer_terminals: S = st.builds(
    lambda observe, end: observe + end,
    weighted((3, st.just([{"do": "observe", "what": "result"}])), (1, st.just([]))),
    weighted((3, ret(st.just(UNDEF))), (3, ret(contents)),
             (1, ret(st.just({"$js": "promise", "resolves": [text("async")]}))), (1, THROWS)),
)

render_terminals: S = weighted((3, ret(contents)), (1, ret(js_only_values)), (2, THROWS))
meta_terminals: S = weighted((3, ret(st.sampled_from([{"summary": 1}, {"title": "t"}, "m"]))),
                             (1, ret(js_only_values)), (2, THROWS))

observer_terminals: S = weighted(
    (3, st.just([])),
    (2, st.just([{"do": "observe", "what": "result"}, {"do": "observe", "what": "record"}])),
    (1, THROWS),
    (1, st.builds(lambda x: [{"do": "return", "value": {"$js": "promise", "rejects": x}}], thrown_values)),
    (1, st.just([{"do": "set-signal", "signal": "late"}])),
    (1, st.just([{"do": "keep", "name": "k2"}])),  # the final outcome, for a later call's wrapper (P63)
)

classifier_behaviors: S = weighted(
    (5, st.just([{"do": "return", "value": True}])),
    (1, ret(st.sampled_from([False, 1, "true", UNDEF]))),
    (1, THROWS),
    (1, st.just({"perInvocation": [[{"do": "return", "value": True}], [{"do": "return", "value": False}]]})),
)
"""``isConcurrencySafe``: exactly true, something else, a throw, or true then false (P19, P20)."""

INTENT_DECISIONS = [{"createIfAbsent": True}, {"replaceIfVersion": 3}, UNDEF, None, "deny", {"path": "other.txt"}]
intent_decisions: S = weighted((3, st.sampled_from(INTENT_DECISIONS)), (1, boundary_values))
"""What an intent listener resolves the waterfall to: the body sees it, nothing else reads it."""

intent_terminals: S = weighted(
    (3, DELEGATES),
    (3, ret(intent_decisions)),
    (1, then_return([{"do": "next"}], intent_decisions)),
    (1, st.just([{"do": "next", "catch": True}, {"do": "return-next"}])),
    (1, st.just([{"do": "next"}, {"do": "next"}, {"do": "return-next"}])),
    (1, THROWS),
)
"""An ``fs/write-intent`` / ``fs/edit-intent`` listener's end (P5, P6, P71)."""

hot_intent_terminals: S = weighted(
    (3, ret(intent_decisions)),
    (2, THROWS),
    (2, then_return([{"do": "observe", "what": "args"}, {"do": "next"}], intent_decisions)),
    (1, st.just([{"do": "next"}, {"do": "next"}, {"do": "return-next"}])),
    (1, st.just([{"do": "next", "catch": True}, {"do": "return-next"}])),
    (1, st.builds(lambda x: [{"do": "next"}, {"do": "throw", "value": x}], thrown_values)),
)

PRESENTATIONS = [{"title": "t"}, {"summary": 1}, "shown", UNDEF]


@cache
def presenter_behaviors(result: bool, hot: bool = False) -> S:
    """A ``presentCall`` (``result`` False) or ``presentResult`` script for the viewer of
    ``run.present`` (P14): synchronous and handed no record, so it observes what it is
    handed (the parsed arguments; the result view), returns a presentation or throws.
    It neither writes nor touches tables: the step is over when it runs."""
    observe = [(2, st.just([])), (2, st.just([{"do": "observe", "what": "args"}]))]
    if result:
        observe += [(2, st.just([{"do": "observe", "what": "result"}])),
                    (1, st.just([{"do": "observe", "what": "args"}, {"do": "observe", "what": "result"}]))]
    end = weighted((1 if hot else 3, ret(st.sampled_from(PRESENTATIONS))), (1, ret(contents)),
                   (1, ret(js_only_values)), (2 if hot else 1, THROWS), (1, st.just([])))
    one = st.builds(lambda pre, e: pre + e, weighted(*observe), end)
    return weighted(
        (6, one),
        (1, st.builds(lambda n, a, b: {"byCall": {f"#c{n}": a}, "steps": b}, st.integers(0, CALL_SLOTS - 1), one, one)),
        (1, st.builds(lambda a, b: {"perInvocation": [a, b]}, one, one)),
    )


# Terminals for the participant a scenario's focus is on: no plain delegation, the
# interesting branches weighted up.

hot_pre_decisions: S = weighted((1, st.sampled_from(PRE_ALLOW)), (2, st.sampled_from(PRE_DENY)),
                                (1, st.sampled_from(PRE_ASK)), (3, st.sampled_from(PRE_MALFORMED)),
                                (2, st.sampled_from(PRE_DENY_NO_REASON)))

# The record's signal replaced by one that is aborted: the caller's is not, and every
# checkpoint reads the caller's (P52).
ABORT_REPLACED = [{"do": "set-signal", "signal": "s1"}, {"do": "abort", "signal": "s1"}]
FRESH_SIGNAL = {"do": "set-signal", "signal": "s2"}  # the record's signal replaced, never aborted

HOT_PRE: dict[str, S] = {
    "pre": weighted(
        (4, ret(hot_pre_decisions)),
        (2, then_return(ABORT_REPLACED, st.sampled_from([{"kind": "allow"}, *PRE_ASK]))),
        (1, then_return([ABORT_CALLER], pre_decisions)),
        (1, then_return([FRESH_SIGNAL, ABORT_CALLER], st.sampled_from([{"kind": "allow"}, *PRE_ASK]))),
        (2, THROWS),
        (1, st.just([{"do": "next"}, {"do": "next"}, {"do": "return-next"}])),
        (1, st.just([{"do": "next", "catch": True}, {"do": "return-next"}])),
    ),
    "approval": weighted((3, ret(st.sampled_from(PRE_ASK))),
                         (1, then_return([ABORT_CALLER], st.sampled_from(PRE_ASK)))),
    "guards": weighted((2, DELEGATES), (2, then_return([ABORT_CALLER], st.just({"kind": "allow"}))),
                       (2, then_return([FRESH_SIGNAL, ABORT_CALLER], st.just({"kind": "allow"}))),
                       (1, ret(st.sampled_from(PRE_ASK))), (1, then_return(ABORT_REPLACED, st.just({"kind": "allow"})))),
}

hot_exec_terminals: S = weighted(
    (4, ret(authored_results)),
    (2, ret(st.just({"isError": False, "value": 1, "additionalContexts": [message("m5", "from the wrapper")]}))),
    (2, st.builds(lambda ws: [{"do": "next"}, *ws, {"do": "observe", "what": "result"}, {"do": "return-next"}],
                  st.lists(result_writes(), min_size=1, max_size=3))),
    (2, then_return([{"do": "next"}], authored_results)),
    (1, st.just([{"do": "next"}, {"do": "next"}, {"do": "return-next"}])),
    (2, st.just([{"do": "next"}, ABORT_CALLER, {"do": "return-next"}])),
    (1, then_return([ABORT_CALLER], authored_results)),
    (1, st.just([{"do": "set-signal", "signal": "w1"}, {"do": "abort", "signal": "w1"}, {"do": "next"},
                 {"do": "return-next"}])),
    (1, st.just([{"do": "set-signal", "signal": "w1"}, {"do": "next"}, {"do": "observe", "what": "record"},
                 {"do": "return-next"}])),
    (2, THROWS),
    (1, st.builds(lambda x: [{"do": "next"}, {"do": "throw", "value": x}], thrown_values)),
)

hot_post_decisions: S = weighted(
    (3, post_decisions),
    # an accept with a value: a failure's turns into a violation (P87), a success's is replaced
    (1, st.builds(lambda v: {"kind": "accept", "value": v}, lossless_values)),
    (1, st.builds(lambda c: {"kind": "accept", "content": c}, contents)),
    (1, st.builds(lambda cs: {"kind": "accept", "additionalContexts": cs}, context_lists)),
    (1, st.sampled_from([UNDEF, None, "accept", {"kind": "reject"}, [],
                         {"kind": {"$js": "getter-throws", "message": "kind getter"}}])),
)

hot_post_terminals: S = weighted(
    (5, ret(hot_post_decisions)),
    (1, then_return([{"do": "next"}], post_decisions)),
    (3, then_return([ABORT_CALLER], st.sampled_from([{"kind": "accept"}, {"kind": "accept", "content": [text("c")]}]))),
    (1, then_return([{"do": "observe", "what": "result"}], post_decisions)),
    (2, THROWS),
)

hot_observer_terminals: S = weighted(
    (2, THROWS),
    (2, st.builds(lambda x: [{"do": "return", "value": {"$js": "promise", "rejects": x}}], thrown_values)),
    (1, st.just([{"do": "observe", "what": "result"}, {"do": "observe", "what": "record"},
                 {"do": "mutate", "target": "record.custom", "value": 1, "catch": True}])),
    (1, st.builds(lambda n: [{"do": "unregister", "ref": f"#r{n}"}], st.integers(0, REF_SLOTS - 1))),
)

hot_answer_terminals: S = weighted(
    (3, ret(approval_outcomes)),
    (1, THROWS),
    (2, then_return(ABORT_AND_WAIT, approval_outcomes)),
    (1, then_return([{"do": "observe", "what": "request"}], approval_outcomes)),
)

hot_guard_terminals: S = weighted((2, ret(st.just(UNDEF))), (3, ret(st.sampled_from(GUARD_DENIALS))), (2, THROWS),
                                  (2, ret(st.sampled_from([None, "", 0, False]))),
                                  (1, st.builds(lambda n: [{"do": "register", "ref": f"#r{n}"},
                                                           {"do": "return", "value": UNDEF}],
                                                st.integers(0, REF_SLOTS - 1))))


@cache
def body_terminals(integer_output: bool, deadline: bool, loop: bool, hot: bool = False) -> S:
    """A body's end: return (a value valid for the output schema, mostly), throw, sleep,
    abort its own caller, wait for its signal (only where something aborts it), or, in
    a loop, wait at the gate first."""
    value = weighted((4, st.integers(0, 9)), (1, boundary_values)) if integer_output else boundary_values
    options: list[tuple[int, Any]] = [
        (5, ret(value)),
        (2, THROWS),
        (1, then_return([{"do": "sleep", "ms": 30}], value)),
        (1, then_return([{"do": "abort", "signal": "caller"}], value)),
        (1, then_return(ABORT_AND_WAIT, value)),
        (1, ret(st.builds(lambda v: {"$js": "promise", "resolves": v}, value))),
    ]
    if deadline:  # the timeout policy's deadline aborts the signal the body waits on
        options.append((2, then_return([{"do": "await-signal"}, {"do": "observe", "what": "record"}], value)))
    if hot:
        options = [(w if i else 2, o) for i, (w, o) in enumerate(options)]  # the plain return less often
        options += [
            (2, st.builds(lambda m, v: [{"do": "defer-context", "message": m}, {"do": "conclude-turn"},
                                        {"do": "return", "value": v}], messages, value)),
            (1, then_return([{"do": "observe", "what": "args"}, {"do": "mutate", "target": "args.x", "value": 2},
                             {"do": "observe", "what": "record"}], value)),
            (1, ret(js_only_values)),
        ]
    end = weighted(*options)
    if loop:
        end = st.builds(lambda g, t: g + t, weighted((3, st.just([])), (1, st.just([{"do": "gate"}]))), end)
    return end


# ============================================================================ participants

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


# ============================================================================ runs

RAW_ARGUMENTS = ['{"x":1}', "", "{}", '{"x":"s"}', "not json", '{"x":1,"x":2}', "[1,2]", '"text"', '{"n":-0}',
                 '{"n":1e999}', "null", '{"$js":"undefined","x":1}', '{"x":', '{"x":1,"s":"\\udc00"}']
# P16 at its boundaries: number texts JSON.parse reads one way and a sloppy parser another
# (-0 written every way, thresholds of the shortest form, beyond 2**53, out of range),
# NaN/Infinity literals (not JSON: the raw string), array-index keys at their limits.
RAW_BOUNDARIES = ['-0', '[-0]', '{"n":-0.0}', '{"n":-0e0}', '{"n":-0E+2}', '{"n":1e21}', '{"n":1E21}',
                  '{"n":1e-7}', '{"n":0.0000001}', '{"n":-1.5}', '{"n":9007199254740993}', '{"n":-1e999}',
                  '{"n":1.7976931348623157e308}', '{"n":NaN}', '{"n":Infinity}', '-Infinity',
                  '{"4294967294":1,"4294967295":2,"a":0,"1":3}', '{"x":1,"x":{"y":2},"z":[]}', ' {"x":1} ',
                  '{"x":1}x', "[]", '{"__proto__":{"x":1}}']
raw_arguments: S = weighted((4, st.just('{"x":1}')), (2, st.sampled_from(RAW_ARGUMENTS)),
                            (1, st.sampled_from(RAW_BOUNDARIES)))
# What JSON.parse and a sloppy parse tell apart most often (P16): empty, duplicate keys, -0.
RAW_PARSES = ["", '{"x":1,"x":2}', '{"n":-0}', "-0"]
hot_raw_arguments: S = weighted((2, st.sampled_from(RAW_ARGUMENTS)), (2, st.sampled_from(RAW_BOUNDARIES)),
                                (1, st.sampled_from(RAW_PARSES)))
call_arguments: S = weighted((5, st.just({"x": 1})), (1, st.just({})), (2, boundary_values))
hot_call_arguments: S = weighted((1, st.just({"x": 1})), (2, js_only_values), (2, boundary_values))
body_call_arguments: S = weighted((3, st.just({"x": 1})), (2, st.just({})), (1, st.just({"x": "s"})))


@reused
def names_for(n_tools: int) -> S:
    return weighted((6, st.sampled_from([f"t{i + 1}" for i in range(n_tools)])), (1, st.just("ghost")))


@reused
@st.composite
def direct_runs(draw: Any, agents: tuple[str, ...], n_tools: int, calls: tuple[str, ...],
                focus: str = "mixed") -> dict[str, Any]:
    """Direct ``execute()`` calls, one after another (unknown names, JS-only arguments,
    agents or none, root ids, nested calls, callers aborted before entry)."""
    entry = focus == "entry"
    out = []
    for cid in calls:
        call: dict[str, Any] = {"callId": cid, "name": draw(names_for(n_tools)),
                                "arguments": draw(hot_call_arguments if entry else
                                                  body_call_arguments if focus == "body" else call_arguments)}
        if agents and draw(weighted((1, False), (5 if focus == "approval" else 3, True))):
            call["agent"] = agents[draw(st.integers(0, len(agents) - 1))]
        if draw(chance(False, 6)):
            call["rootCallId"] = "root-1"
        if draw(chance(False, 6)):
            call["parent"] = True
        if draw(chance(entry, 10)):
            call["aborted"] = True
        if draw(chance(False, 8)):  # the caller aborts from outside, at a chosen virtual time
            call["abortAt"] = draw(st.sampled_from([0, 5, 20]))
        if draw(chance(entry, 10)):  # input fields that would read otherwise later (P23)
            fields = draw(st.lists(st.sampled_from(["name", "rootCallId", "arguments"]), min_size=1, max_size=3,
                                   unique=True))
            call["getters"] = {f: {"name": NAME_GETTER, "rootCallId": ROOT_GETTER, "arguments": ARGS_GETTER}[f]
                               for f in fields}
        out.append(call)
    return {"kind": "direct", "calls": out}


@reused
@st.composite
def loop_runs(draw: Any, agents: tuple[str, ...], n_tools: int, calls: tuple[str, ...],
              focus: str = "mixed", present: bool = False) -> dict[str, Any]:
    """One loop tool step: blocks with raw argument strings, maybe max-tokens, a small
    pool, an already aborted step, and a release order for the bodies' gates; with
    ``present`` a viewer projects the step's log afterwards (P14)."""
    args = hot_raw_arguments if focus == "entry" else raw_arguments
    blocks = [{"id": bid, "name": draw(names_for(n_tools)), "arguments": draw(args)} for bid in calls]
    run: dict[str, Any] = {"kind": "loop", "agent": agents[draw(st.integers(0, len(agents) - 1))], "blocks": blocks}
    if draw(chance(False, 7)):
        run["finish"] = "max-tokens"
    # One dispatch in flight at a time: how overlapping bodies interleave with the starts
    # and commits of other calls is left free by the spec (P21: a later tool/call *may*
    # follow an earlier tool/result), so generated scenarios must not depend on it. Pools,
    # classification and re-classification still happen; overlap itself is the business
    # of the corpus's gated cases.
    run["maxParallelToolCalls"] = 1
    if draw(chance(focus == "entry", 14)):
        run["aborted"] = True
    if present:
        run["present"] = True
    if draw(chance(False, 8)):  # the caller cancels at a chosen virtual time (P112)
        run["cancelAt"] = {"ms": draw(st.sampled_from([0, 5, 20])), "keepInbox": draw(st.booleans())}
    if draw(chance(focus == "loop", 4)):  # a later turn shows what stayed queued (P112)
        run["nextTurn"] = NEXT_TURN
    return run


NEXT_TURN = {"id": "next-turn", "role": "user", "content": [{"type": "text", "text": "again"}], "source": {"kind": "user"}}


# ============================================================================ scenarios

LISTENER_EVENTS = ["tools/pre-execute", "tools/execute", "tools/post-execute", "tools/result", "approval/request",
                   *FS_INTENTS, PRE_STEP]
DUPLICATE_CONTEXT = {"do": "defer-context", "message": message("m1", "same id every time")}


ABORT_POINTS = ("entry", "approval-cancelled", "guard-denial", "after-guards", "at-launch", "in-body",
                "after-execute", "after-post", "timeout", "failure-kept", "timed", "replaced")
"""Where the ``abort`` focus aborts the caller (P29, P42, P51, P53, P61, P68, P88, P70, P89)."""


SWARM: S = weighted((2, False), (1, True))
# Foci only the wide strategy (``examples(wide=True)``: the plugin's test_property, which
# HypoFuzz drives for hours) turns on, and only in swarm draws. "values" takes over every
# call of a draw: in the 100 draws of the default run it reached some 20 more oracle
# branches but cost 8 of the fault catalogue's 62 generated-only catches (seed 0; 61 -> 55
# at seed 1), so the default run leaves it out.
WIDE_ONLY = ("values",)
GUARD_COUNTS: S = weighted((2, st.just(0)), (2, st.just(1)), (1, st.integers(2, 3)))


@reused
def call_counts(loop: bool) -> S:
    return weighted((2, st.just(1)), (2, st.integers(2, 3 if not loop else 4)))


@reused
def second_foci(focus: str, pool: tuple[str, ...]) -> S:
    """The second focus: the first again, or another (not "mixed")."""
    return weighted((1, st.just(focus)), (1, st.sampled_from(pool[1:])))


@st.composite
def scenario_docs(draw: Any, profiles: frozenset[str] = ALL_PROFILES, wide: bool = False) -> dict[str, Any]:
    """A scenario document before it is run (no ``rules`` yet). See ``scenarios``; ``wide``
    lets swarm draws turn on the ``WIDE_ONLY`` foci too."""
    can_loop = "loop" in profiles
    foci_pool = FOCI if can_loop else tuple(f for f in FOCI if f != "loop")
    if code_mode_strategies.PROFILE in profiles:
        foci_pool = (*foci_pool, code_mode_strategies.FOCUS)
    if not wide:
        foci_pool = tuple(f for f in foci_pool if f not in WIDE_ONLY)
    primary = tuple(f for f in foci_pool if f not in WIDE_ONLY)
    focus = draw(st.sampled_from(primary))
    second = draw(second_foci(focus, primary))
    foci = {focus, second} - ({"mixed"} if focus != second else set())
    if draw(SWARM):
        # swarm: a third of the draws turn on a random subset of further features, so that
        # situations needing three or four participants' rare branches meet in one scenario
        foci = (foci - {"mixed"}) | draw(st.sets(st.sampled_from(foci_pool[1:]), min_size=1, max_size=4))
    abort_at = draw(weighted(*((2 if p in ("after-execute", "after-post") else 1, p) for p in ABORT_POINTS))) \
        if "abort" in foci else None
    work = "work" in foci
    loop = can_loop and ("loop" in foci or draw(weighted((1 if work else 3, False), (1, True))))
    # the step's view (P14): always when the focus is on it, else now and then
    present = loop and (work or draw(chance(False, 3)))
    n_tools = draw(st.integers(1, 3))
    agents = draw(agent_lists(loop, n_tools, "approval" in foci))
    agent_ids = tuple(a["id"] for a in agents)
    # (id, name, scope): a global definition per name, maybe a scoped variant of t1
    plan: list[tuple[str | None, str, str | None]] = [(None, f"t{i + 1}", None) for i in range(n_tools)]
    if agent_ids and not foci - {"entry"} and draw(weighted((2, False), (1, True))):
        # a scoped variant shadows t1 for that scope (P56); not where a focus aims at t1
        scope = agent_ids[draw(st.integers(0, len(agent_ids) - 1))]
        plan.append((f"t1@{scope}", "t1", scope))
    timeout_policy = draw(chance("body" in foci, 3))
    title = f"generated; focus: {', '.join(sorted(foci)) or 'mixed'}" + (f" (abort {abort_at})" if abort_at else "")
    doc: dict[str, Any] = {"$format": "dsh-conformance/scenario/v1", "title": title}
    if agents:
        doc["agents"] = agents
    tool_focus = next((f for f in ("body", "finalize", "loop") if f in foci), "mixed")
    doc["tools"] = [draw(tool_defs(loop, timeout_policy, n, r, s, tool_focus if i == 0 else "mixed",
                                   present, present and work and i == 0))
                    for i, (r, n, s) in enumerate(plan)]
    approval = draw(approvals(loop, "approval" in foci))
    listeners: list[dict[str, Any]] = []
    hot_ids: set[str] = set()
    # intent listeners run only when a body dispatches: drawn where one may (P71)
    dispatches = work or _has_step(doc["tools"], "dispatch")
    for event in LISTENER_EVENTS:
        if event == "approval/request" and (approval is None or approval.get("service") != "shipped"):
            continue
        if event in FS_INTENTS and not dispatches:
            continue
        if event == PRE_STEP and not loop:
            continue
        hot = next((h for f in sorted(foci) if (h := hot_terminals(event, f)) is not None), None)
        count = max(draw(LISTENER_COUNTS[event]), 1 if hot is not None else 0)
        for k in range(count):
            listeners.append(draw(listener_defs(loop, agent_ids, f"L{len(listeners) + 1}", event,
                                                hot if k == 0 else None)))
            if hot is not None and k == 0:
                hot_ids.add(listeners[-1]["id"])
    n_guards = draw(GUARD_COUNTS)
    if "guards" in foci:
        n_guards = max(n_guards, 1)
    guards = [draw(guard_defs(loop, agent_ids, f"G{i + 1}", "guards" in foci)) for i in range(n_guards)]
    n_calls = draw(call_counts(loop))
    if "loop" in foci:
        n_calls = max(n_calls, 2)
    calls = [("A" if loop else "c") + str(i + 1) for i in range(n_calls)]
    run = (loop_runs(agent_ids, n_tools, tuple(calls), focus, present) if loop
           else direct_runs(agent_ids, n_tools, tuple(calls), focus))
    doc["run"] = draw(run)
    extra: list[dict[str, Any]] = []
    if "loop" in foci:
        # every call of t1 defers a context with the same id, so that the second acceptance
        # fails (P113); or it concludes the turn (P106); or it injects (P111)
        extra = draw(weighted((1, st.just([])), (2, st.just([DUPLICATE_CONTEXT])),
                              (3, st.just([{"do": "conclude-turn"}])),
                              (1, st.just([{"do": "inject", "message": message("m2", "injected")}]))))
    if foci & {"execute", "post"} and draw(weighted((1, False), (1, True))):
        # the body defers a context, and the focused wrapper's result (P67: deferred first) or
        # post-execute decision (P85: the result's first) may carry its own
        extra = extra + [{"do": "defer-context", "message": message("m4", "deferred by the body")}]
        own = {"tools/execute": [{"do": "next"}, {"do": "return", "value": {
                   "isError": False, "value": 1, "additionalContexts": [message("m5", "from the wrapper")]}}],
               "tools/post-execute": [{"do": "return", "value": {
                   "kind": "accept", "additionalContexts": [message("m6", "from post-execute")]}}]}
        for l in listeners:
            if l["id"] in hot_ids and l["event"] in own and draw(weighted((1, False), (2, True))):
                l["script"] = copy.deepcopy(own[l["event"]])
    if "finalize" in foci and draw(weighted((2, False), (1, True))):
        # the tool goes away while its call runs: the finalizer captured at entry still applies (P26)
        extra = extra + [{"do": "unregister", "ref": doc["tools"][0].get("id", "t1")}]
    if work:
        # t1's body does its work first: an intent the focused listeners decide (their
        # throw is the body's unless caught, P55), a session event (a call without an
        # agent: the append throws), or both intents in turn
        extra = extra + draw(weighted(
            (3, st.builds(lambda e, c: [dispatch(e, catch=c)], st.sampled_from(FS_INTENTS), st.booleans())),
            (1, st.builds(lambda a: [a], append_steps)),
            (1, st.builds(lambda d, a: [d, a], dispatch_steps, append_steps)),
            (1, st.builds(lambda c: [dispatch(FS_INTENTS[0], catch=c), dispatch(FS_INTENTS[1])], st.booleans())),
        ))
        doc["run"].pop("finish", None)  # a max-tokens step runs no call: nothing to do, nothing to view
    if foci - {"entry"}:
        aim_first_call(doc, loop, keep_arguments="body" in foci)
        if DUPLICATE_CONTEXT in extra:  # two quiet calls of t1
            doc["run"]["blocks"][1].update(name="t1", arguments='{"x":1}')
            quiet_calls(doc, calls[:2], foci, hot_ids, listeners, guards)
        elif work or draw(weighted((1, False), (1, True))):  # the body's work needs a body that runs
            quiet_calls(doc, calls[:1], foci, hot_ids, listeners, guards, draw(weighted((2, False), (1, True))))
    if extra:
        doc["tools"][0]["body"] = prepend_steps(doc["tools"][0]["body"], extra)
    if not loop and len(plan) == n_tools and foci >= {"entry", "guards"} and code_mode_strategies.FOCUS not in foci:
        spared_by_restriction(doc)  # not with run_code: its bindings show the same view (P117), blamed there
    if loop:
        observed_raw_arguments(draw, doc, listeners, guards)
    if "guards" in foci:
        layered_guards(draw, doc, guards, loop)
    if abort_at is not None:
        timeout_policy = abort_recipe(doc, abort_at, listeners, guards, loop) or timeout_policy
    if "values" in foci and abort_at is None:
        approval = value_rounds(draw, doc, loop, calls, foci, hot_ids, listeners, guards) or approval
    if listeners:
        # registration order across events is free: interleave them as drawn
        doc["listeners"] = draw(st.permutations(listeners)) if len(listeners) > 1 else listeners
    if guards:
        doc["guards"] = guards
    if approval is not None or abort_at == "approval-cancelled":
        doc["approval"] = approval if abort_at != "approval-cancelled" else {
            "service": "custom", "script": [ABORT_CALLER, {"do": "return", "value": "cancelled"}]}
    if timeout_policy:
        doc["timeoutPolicy"] = True
    unique_shared_ids(doc)
    getters = draw(getter_declarations(doc))
    if getters:
        doc["getters"] = getters
    refs = [r or n for r, n, _ in plan] + [l["id"] for l in listeners] + [g["id"] for g in guards]
    doc = resolve(doc, refs, calls)
    registered = {t["name"] for t in doc["tools"] if "scope" not in t and t.get("registered", True)}
    for a in doc.get("agents", []):
        if "restrict" in a:  # name only tools registered at the start (see agent_lists)
            kept = {k: [n for n in names if n in registered] for k, names in a["restrict"].items()}
            a["restrict"] = {k: names for k, names in kept.items() if names}
            if not a["restrict"]:
                del a["restrict"]
    for i, g in enumerate(doc.get("guards", [])):
        # A guard that registers a guard is reached again in the same pass (P45): guards
        # registering one another in a circle would never finish, in JavaScript as in the
        # oracle. A guard may register only guards after it, and only ones that start
        # unregistered (each registration appends another entry to its layer).
        later = {x["id"] for x in doc["guards"][i + 1:] if x.get("registered") is False}
        g["script"] = _no_guard_registration(g["script"], {x["id"] for x in guards} - later)
    if code_mode_strategies.FOCUS in foci:
        code_mode_strategies.code_mode(draw, doc, loop)
    return doc


# Values the spec turns into text (P9's String of a thrown value, JSON text of an approval
# outcome, the message a block derives from its feedback), one per kind of conversion:
# numbers in every notation, wrappers and instances, errors without a name or message. Not
# a function or a Date: String of one is its source text or local time, which the spec
# leaves to the engine and the adapter (rc.8: "function () {}", "Wed Jan 01 2020 ...").
TO_MESSAGE: list[Any] = [
    {"$js": "-0"}, 0, 1e21, 123456789012, 0.000123, -0.5, 1.5e-7, True, False, None, UNDEF, {},
    {"$js": "promise", "resolves": 1}, {"$js": "instance", "class": "Promise"}, {"$js": "instance", "class": "Map"},
    {"$js": "instance", "class": "URL"}, {"$js": "instance", "class": "Point"}, {"$js": "instance", "class": "RegExp"},
    {"$js": "instance", "class": "String"}, {"$js": "symbol", "description": "v"}, [1, None, [2, UNDEF], "z"],
    [{"$js": "promise", "resolves": 1}, 0.25], ["a"], err("", "TypeError"),
    {"$js": "error", "class": "Error", "message": "m", "name": "Custom", "code": "C1"},
    {"$js": "error", "class": "Error", "message": "nameless", "name": ""}, {"message": 5}, "a",
]
TO_JSON_TEXT: list[Any] = [
    {"zero": 0.0, "negative-zero": -0.0, "list": [-0.0, 1.5]}, {"a": {"$js": "cycle", "up": 1}},
    {"u": {"$js": "instance", "class": "URL"}, "m": {"$js": "instance", "class": "Map"}},
    {"f": {"$js": "function", "name": "f"}, "s": {"$js": "symbol", "description": "s"}, "n": 1},
    {"p": {"$js": "promise", "resolves": 1}, "e": err("in data")}, True, [UNDEF, 1], {"o": 1}, "allowed-once",
]
FEEDBACK_BLOCKS: list[Any] = [["s", 3, True], [text("why"), None], [UNDEF], [text("a")], [text("")]]
value_post_decisions: S = weighted(
    (4, st.none()),
    (2, st.builds(lambda v: {"kind": "accept", "value": v}, st.sampled_from([1, {"n": 2}, "a", [0]]))),
    (2, st.builds(lambda f: {"kind": "block", "feedback": f}, st.sampled_from(FEEDBACK_BLOCKS))),
    (1, st.just({"kind": "accept", "value": {"n": 1}, "additionalContexts": [message("m7", "from the decision")]})),
)


def value_rounds(draw: Any, doc: dict[str, Any], loop: bool, calls: list[str], foci: set[str],
                 hot_ids: set[str], listeners: list[dict[str, Any]],
                 guards: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The "values" focus: every call goes to ``t1`` with valid arguments, the participants
    outside the focus quieted for them, and ``t1``'s body throws a drawn value per
    invocation (P9: the failure's message is String of it); every other participant,
    focused or not, delegates for these calls. Now and then the last call is
    asked about instead (an approval whose outcome is outside the vocabulary is rendered as
    JSON text, P41), and a post-execute listener decides each call's failure (P81: accept
    with a value on a failure; P83: a block's feedback of null or primitive blocks).
    Returns the approval service it asks, if it does."""
    run = doc["run"]
    if not loop:  # more conversions a draw: up to five calls, each its own value
        wanted = draw(st.integers(len(calls), 5))
        while len(calls) < wanted:
            calls.append(f"c{len(calls) + 1}")
            run["calls"].append({**run["calls"][0], "callId": calls[-1]})
    for item in run["blocks"] if loop else run["calls"]:
        item["name"] = "t1"
        item["arguments"] = '{"x":1}' if loop else {"x": 1}
        for k in ("aborted", "parent", "abortAt"):
            item.pop(k, None)
    for k in ("aborted", "cancelAt"):
        run.pop(k, None)
    # the conversions are the focus: every other participant delegates for these calls
    quiet_calls(doc, calls, {"values"}, set(), listeners, guards)
    thrown = draw(st.lists(st.sampled_from(TO_MESSAGE), min_size=len(calls), max_size=len(calls)))
    t1 = doc["tools"][0]
    t1.pop("registered", None)
    t1["body"] = {"perInvocation": [[{"do": "throw", "value": v}] for v in thrown]}
    if draw(weighted((2, False), (1, True))) and "approval/request" not in {l["event"] for l in listeners}:
        outcomes = draw(st.lists(st.sampled_from(TO_JSON_TEXT), min_size=1, max_size=2))
        approval = {"service": "custom", "script": {"perInvocation": [[ret_step(v)] for v in outcomes]}}
        if not loop:  # only a call with an agent is asked (P37)
            doc.setdefault("agents", [{"id": "a1"}])
            run["calls"][-1]["agent"] = doc["agents"][0]["id"]
        listeners.append({"id": f"L{len(listeners) + 1}", "event": "tools/pre-execute", "prepend": True,
                          "script": {"steps": list(DELEGATE), "byCall": {calls[-1]: [ret_step({"kind": "ask"})]}}})
        hot_ids.add(listeners[-1]["id"])
    else:
        approval = None
    decision = draw(value_post_decisions)
    if decision is not None:
        listeners.append({"id": f"L{len(listeners) + 1}", "event": "tools/post-execute", "prepend": True,
                          "script": [ret_step(decision)]})
        hot_ids.add(listeners[-1]["id"])
    return approval


def ret_step(value: Any) -> dict[str, Any]:
    return {"do": "return", "value": value}


def spared_by_restriction(doc: dict[str, Any]) -> None:
    """An agent that restricts ``t1`` registers its own ``t1``, and its child calls it: a
    restriction hides inherited global tools only, so the ancestor's scoped definition
    runs (P56). Without a finalizeContent of its own: rc.8 departs here (it hides the
    scoped definition too, listed under P56), and a finalizer the call would capture makes
    the first divergence a later stage's, blamed on whatever decided the call's fate there
    (P80, P81, ...) instead of on P56."""
    child = next((a for a in doc.get("agents", []) if "parent" in a), None)
    if child is None:
        return
    parent = next(a for a in doc["agents"] if a["id"] == child["parent"])
    parent["restrict"] = {"deny": ["t1"]}
    doc["tools"].append({"name": "t1", "id": "t1@spared", "scope": parent["id"],
                         "body": [{"do": "return", "value": "scoped"}]})
    first = doc["run"]["calls"][0]
    first.update(name="t1", agent=child["id"])
    first.pop("aborted", None)


def observed_raw_arguments(draw: Any, doc: dict[str, Any], listeners: list[dict[str, Any]],
                           guards: list[dict[str, Any]]) -> None:
    """A later block carries a raw argument text at P16's boundaries (the focus aims the
    first block at valid arguments), and every tool a block with unusual arguments calls
    observes them first: a parse that differs shows only where something reads it. Or an
    extra block calls a tool of its own that every participant lets through, so that its
    body reads what the loop parsed."""
    blocks = doc["run"]["blocks"]
    if len(blocks) > 1 and draw(weighted((1, False), (1, True))):
        k = draw(st.integers(1, len(blocks) - 1))
        blocks[k]["arguments"] = draw(hot_raw_arguments)
    elif doc["run"].get("finish") != "max-tokens" and draw(weighted((1, False), (2, True))):
        bid = f"A{len(blocks) + 1}"
        blocks.append({"id": bid, "name": "parse", "arguments": draw(weighted((2, st.sampled_from(RAW_PARSES)),
                                                                              (1, st.sampled_from(RAW_BOUNDARIES))))})
        doc["tools"].append({"name": "parse", "body": [{"do": "observe", "what": "args"}, {"do": "return", "value": 1}]})
        for holder, plain in [*((l, [] if l["event"] == "tools/result" else list(DELEGATE)) for l in listeners),
                              *((g, [{"do": "return", "value": UNDEF}]) for g in guards)]:
            script = holder.get("script")
            if script is None:
                continue
            b = {"steps": script} if isinstance(script, list) else dict(script)
            b["byCall"] = {**b.get("byCall", {}), bid: copy.deepcopy(plain)}
            holder["script"] = b
    unusual = {b["name"] for b in blocks if b["arguments"] != '{"x":1}'}
    for tool in doc["tools"]:
        if tool["name"] in unusual and not _has_step(tool["body"], "observe"):
            tool["body"] = prepend_steps(tool["body"], [{"do": "observe", "what": "args"}])


def layered_guards(draw: Any, doc: dict[str, Any], guards: list[dict[str, Any]], loop: bool) -> None:
    """The guards focus, where the agents form a chain: the first call's agent is the
    innermost, with a denying guard in an ancestor's layer and another in its own (P45:
    the farthest ancestor's layer first); or a guard that registers a later, unregistered
    one during the pass, which then denies, and maybe unregisters one not reached yet (P45:
    tables are read live)."""
    chain = [a["id"] for a in doc.get("agents", []) if "parent" in a]
    run = doc["run"]
    if chain and draw(weighted((1, False), (2, True))):
        inner = chain[-1]
        outer = next(a["parent"] for a in doc["agents"] if a["id"] == inner)
        n = len(guards)
        guards += [{"id": f"G{n + 1}", "scope": inner, "script": [{"do": "return", "value": "inner layer says no"}]},
                   {"id": f"G{n + 2}", "scope": outer, "script": [{"do": "return", "value": "outer layer says no"}]}]
        if loop:
            run["agent"] = inner
        else:
            run["calls"][0]["agent"] = inner
    elif draw(weighted((1, False), (1, True))):
        n = len(guards)
        late = {"id": f"G{n + 2}", "registered": False, "script": [{"do": "return", "value": "registered late"}]}
        first = [{"do": "register", "ref": late["id"]}, {"do": "return", "value": UNDEF}]
        guards += [{"id": f"G{n + 1}", "script": first}, late]
        if draw(weighted((1, False), (1, True))):
            # and unregisters a guard the pass has not reached yet, which is then never asked (P45)
            doomed = {"id": f"G{n + 3}", "script": [{"do": "return", "value": "should never be asked"}]}
            if doc.get("agents"):
                doomed["scope"] = doc["agents"][0]["id"]
            first.insert(1, {"do": "unregister", "ref": doomed["id"]})
            guards.append(doomed)


def _has_step(v: Any, do: str) -> bool:
    """Whether any script inside ``v`` (a part of a scenario document) has a ``do`` step."""
    if isinstance(v, list):
        return any(_has_step(x, do) for x in v)
    if isinstance(v, dict):
        return v.get("do") == do or any(_has_step(x, do) for x in v.values())
    return False


def _no_guard_registration(v: Any, guard_ids: set[str]) -> Any:
    if isinstance(v, list):
        return [_no_guard_registration(x, guard_ids) for x in v]
    if isinstance(v, dict):
        if v.get("do") == "register" and v.get("ref") in guard_ids:
            return {**v, "do": "unregister"}
        return {k: _no_guard_registration(x, guard_ids) for k, x in v.items()}
    return v


def prepend_steps(behavior: Any, steps: list[dict[str, Any]]) -> Any:
    """``behavior`` with ``steps`` in front of each of its scripts."""
    if isinstance(behavior, list):
        return [*steps, *behavior]
    out = dict(behavior)
    if "steps" in out:
        out["steps"] = [*steps, *out["steps"]]
    if "byCall" in out:
        out["byCall"] = {k: [*steps, *v] for k, v in out["byCall"].items()}
    if "perInvocation" in out:
        out["perInvocation"] = [[*steps, *v] for v in out["perInvocation"]]
    return out


def aim_first_call(doc: dict[str, Any], loop: bool, keep_arguments: bool = False) -> None:
    """Point the first call at a registered ``t1`` with valid arguments and a live caller,
    so that a focused scenario's participants actually get to act on it."""
    doc["tools"][0].pop("registered", None)
    run = doc["run"]
    if loop:
        run["blocks"][0]["name"] = "t1"
        if not keep_arguments:
            run["blocks"][0]["arguments"] = '{"x":1}'
        run.pop("aborted", None)
    else:
        first = run["calls"][0]
        first["name"] = "t1"
        if not keep_arguments:
            first["arguments"] = {"x": 1}
        first.pop("aborted", None)
        first.pop("parent", None)


def quiet_calls(doc: dict[str, Any], quieted: list[str], foci: set[str], hot_ids: set[str],
                listeners: list[dict[str, Any]], guards: list[dict[str, Any]], loud_output: bool = False) -> None:
    """Give every participant outside the focus plain behavior for the ``quieted`` calls
    only (delegate, abstain, succeed), so that the focused participants decide their fate.
    The other calls keep the drawn behaviors; with ``loud_output`` so do the output
    projections of the quieted body's success (a render that throws meets the focus)."""
    def quiet(holder: dict[str, Any], key: str, steps: list[dict[str, Any]]) -> None:
        b = holder.get(key)
        if b is None:
            return
        b = {"steps": b} if isinstance(b, list) else dict(b)
        b["byCall"] = {**b.get("byCall", {}), **{cid: copy.deepcopy(steps) for cid in quieted}}
        holder[key] = b

    for l in listeners:
        if l["id"] not in hot_ids:
            quiet(l, "script", [] if l["event"] == "tools/result" else list(DELEGATE))
    if "guards" not in foci:
        for g in guards:
            quiet(g, "script", [{"do": "return", "value": UNDEF}])
    t1 = doc["tools"][0]
    if "body" not in foci:
        quiet(t1, "body", [{"do": "return", "value": 1}])
        t1.pop("define", None)
        t1.get("output", {}).pop("schema", None)
    if "body" not in foci and not loud_output:
        quiet(t1.get("output", {}), "render", [{"do": "return", "value": [text("ok")]}])
        quiet(t1.get("output", {}), "presentationMeta", [{"do": "return", "value": {"summary": 1}}])
    if "finalize" not in foci:
        quiet(t1, "finalizeContent", [{"do": "return", "value": UNDEF}])


def abort_recipe(doc: dict[str, Any], at: str, listeners: list[dict[str, Any]], guards: list[dict[str, Any]],
                 loop: bool) -> bool:
    """Abort the first call's caller at checkpoint ``at``: prepend the participant that
    does it (so it runs first), and give ``t1`` a body that succeeds. Returns whether the
    timeout policy is needed."""
    t1 = doc["tools"][0]
    run = doc["run"]

    def listener(event: str, steps: list[dict[str, Any]]) -> None:
        listeners.append({"id": f"L{len(listeners) + 1}", "event": event, "prepend": True, "script": steps})

    if at not in ("entry", "failure-kept"):
        t1["body"] = [{"do": "return", "value": 1}]
        t1.pop("define", None)
        t1.get("output", {}).pop("schema", None)
    match at:
        case "entry":
            if loop:
                run["aborted"] = True
            else:
                run["calls"][0]["aborted"] = True
        case "approval-cancelled":
            listener("tools/pre-execute", [{"do": "return", "value": {"kind": "ask"}}])
            first = run["blocks"][0] if loop else run["calls"][0]
            if not loop and doc.get("agents"):
                first["agent"] = doc["agents"][0]["id"]
        case "guard-denial":
            listener("tools/pre-execute", [FRESH_SIGNAL, ABORT_CALLER, {"do": "return", "value": {"kind": "allow"}}])
            guards.insert(0, {"id": f"G{len(guards) + 1}", "script": [{"do": "return", "value": "guard says no"}]})
        case "after-guards":  # with the record's signal replaced: the checkpoint reads the caller's (P52)
            listener("tools/pre-execute", [FRESH_SIGNAL, ABORT_CALLER, *DELEGATE])
        case "replaced":  # the record's signal replaced and aborted, the caller's not (P52)
            listener("tools/pre-execute", [*ABORT_REPLACED, *DELEGATE])
        case "at-launch":
            listener("tools/execute", [{"do": "set-signal", "signal": "w1"}, {"do": "abort", "signal": "w1"},
                                       *DELEGATE])
        case "in-body":
            t1["body"] = [ABORT_CALLER, {"do": "return", "value": 1}]
        case "after-execute":
            listener("tools/execute", [{"do": "next"}, ABORT_CALLER, {"do": "return-next"}])
        case "after-post":
            listener("tools/post-execute", [ABORT_CALLER, *DELEGATE])
        case "timeout":
            t1["timeoutMs"] = 10
            t1["body"] = [{"do": "sleep", "ms": 30}, {"do": "return", "value": 1}]
            return True
        case "failure-kept":
            t1["body"] = [{"do": "throw", "value": err("body failed")}]
            listener("tools/execute", [{"do": "next"}, ABORT_CALLER, {"do": "return-next"}])
        case "timed":  # from outside every participant, while the body runs (P58, P61, P112)
            t1["body"] = [{"do": "sleep", "ms": 30}, {"do": "return", "value": 1}]
            if loop:
                run["cancelAt"] = {"ms": 5, "keepInbox": True}
            else:
                run["calls"][0]["abortAt"] = 5
    return False


def resolve(doc: dict[str, Any], refs: list[str], calls: list[str]) -> dict[str, Any]:
    """Replace the placeholders ``#r<n>`` (participant ids) and ``#c<n>`` (call ids)."""
    def walk(v: Any) -> Any:
        if isinstance(v, list):
            return [walk(x) for x in v]
        if not isinstance(v, dict):
            return v
        out = {}
        for k, x in v.items():
            if k == "byCall":
                out[k] = {(calls[int(c[2:]) % len(calls)] if c.startswith("#c") else c): walk(s) for c, s in x.items()}
            elif k == "ref" and isinstance(x, str) and x.startswith("#r"):
                out[k] = refs[int(x[2:]) % len(refs)]
            else:
                out[k] = walk(x)
        return out
    return walk(doc)


def scenarios(profiles: frozenset[str] = ALL_PROFILES) -> S:
    """Whole scenario documents (plain JSON dicts) that parse, run to an end in the
    oracle, and cite the rules of ``profiles`` they exercise. Loop runs only when
    ``"loop"`` is in ``profiles``."""
    return examples(profiles).map(lambda e: e.doc)


@dataclass(frozen=True)
class Example:
    """A drawn scenario with its oracle trace (kept so that nothing runs twice)."""
    doc: dict[str, Any]
    scenario: Scenario
    trace: Trace


def examples(profiles: frozenset[str] = ALL_PROFILES, wide: bool = False) -> S:
    """Drawn scenarios together with their parsed form and oracle trace (``wide``: see
    ``WIDE_ONLY``)."""
    profiles = frozenset(profiles)
    return scenario_docs(profiles, wide).map(lambda d: cited(d, profiles))


# ============================================================================ running and citing

def settle(doc: dict[str, Any]) -> tuple[dict[str, Any], Scenario, Trace]:
    """Run ``doc`` in the oracle; when it never settles, repair it and run again.

    The strategies place suspending steps where something settles them, but a loop gate
    order can still wait on a call that never starts (an exclusive call, a full pool, an
    abort), and a replaced signal can hide the deadline an ``await-signal`` counts on.
    The repairs, in order: drop the gate order (gates then pass at once); turn every
    ``await-signal`` into a short sleep. Any other run error is a strategy bug: raised."""
    doc = clone(doc)
    repairs = [_drop_release, _no_await]
    while True:
        scenario = parse_scenario(doc)
        try:
            return doc, scenario, run_scenario(scenario)
        except ScenarioRunError as e:
            if "never settles" not in str(e) or not repairs:
                raise
            repairs.pop(0)(doc)


def _drop_release(doc: dict[str, Any]) -> None:
    doc["run"].pop("release", None)


def _no_await(doc: dict[str, Any]) -> None:
    edit_steps(doc, lambda x: [{"do": "sleep", "ms": 1}] if isinstance(x, dict) and x.get("do") == "await-signal" else [x])


def cited(doc: dict[str, Any], profiles: frozenset[str] = ALL_PROFILES) -> Example:
    doc, scenario, trace = settle(doc)
    wanted = {r.id for r in rules_of(*profiles)} | {r.id for r in rules_of("core")}
    doc["rules"] = sort_rules(exercised_rules(scenario, trace) & wanted)
    # The document parsed already; only its rules are new (not parsed again).
    return Example(doc, scenario.model_copy(update={"rules": list(doc["rules"])}), trace)


def cite(doc: dict[str, Any], profiles: frozenset[str] = ALL_PROFILES) -> dict[str, Any]:
    """``doc`` (settled, see ``settle``) with ``rules`` set to the rules of ``profiles``
    its oracle trace exercises."""
    return cited(doc, frozenset(profiles)).doc


def sort_rules(ids: Iterable[str]) -> list[str]:
    return sorted(set(ids), key=lambda r: int(r[1:]))


# ============================================================================ which rules a run exercises

def invocations(scenario: Scenario, trace: Trace) -> list[tuple[Any, list[Any]]]:
    """Each scripted participant invocation of the trace (its ``call`` observation) with
    the steps its script had for that invocation."""
    scripts: dict[str, Behavior] = {}
    delegate = Behavior.model_validate(DELEGATE)
    for t in scenario.tools:
        scripts[t.ref] = t.body
        for name, b in (("render", t.output.render), ("presentationMeta", t.output.presentationMeta),
                        ("finalizeContent", t.finalizeContent), ("isConcurrencySafe", t.concurrencySafe),
                        ("presentCall", t.presentCall), ("presentResult", t.presentResult)):
            if b is not None:
                scripts[f"{t.ref}.{name}"] = b
    for l in scenario.listeners:
        scripts[l.id] = l.script or (delegate if l.event != "tools/result" else Behavior())
    for g in scenario.guards:
        scripts[g.id] = g.script
    if isinstance(scenario.approval, CustomApproval):
        scripts["approval"] = scenario.approval.script
    count: Counter[str] = Counter()
    out = []
    for o in trace.observations:
        if o.what == "call" and o.who in scripts:
            out.append((o, scripts[o.who].script_for(o.call, count[o.who])))
            count[o.who] += 1
    return out


def _decision_kind(d: Any) -> Any:
    if isinstance(d, dict) and d.get("$js") in ("object", "null-proto"):
        d = d.get("entries", {})
    return d.get("kind") if isinstance(d, dict) and "$js" not in d else None


def _has_tokens(v: Any) -> bool:
    if isinstance(v, dict):
        return "$js" in v or any(_has_tokens(x) for x in v.values()) or "__proto__" in v
    if isinstance(v, list):
        return any(_has_tokens(x) for x in v)
    return False


def exercised_rules(scenario: Scenario, trace: Trace) -> set[str]:
    """The rules a run exercises: those its observations name, plus those whose situation
    the trace shows although no single observation names them (derived here)."""
    out = set(trace.rules())
    obs = trace.observations
    kinds = {(o.stage, o.what) for o in obs}
    results = [r.result for r in trace.results]
    failures = [r for r in results if isinstance(r, dict) and r.get("isError")]
    run = scenario.run
    invoked = invocations(scenario, trace)

    def did(stage: str, pred: Any) -> bool:
        return any(o.stage == stage and pred(steps) for o, steps in invoked)

    def has_step(steps: list[Any], do: str) -> bool:
        return any(s.do == do for s in steps)

    if ("result", "start") in kinds:
        out |= {"P1", "P2", "P4"}  # stage order, transitions and outcome shape hold on every outcome
    if any(did(stage, lambda s: sum(x.do == "next" for x in s) >= 2)
           for stage in ("pre-execute", "execute", "post-execute", "fs-intent")):
        out.add("P6")
    if any(l.scope is not None or l.global_ for l in scenario.listeners) and ("pre-execute", "start") in kinds:
        out.add("P7")
    if any(o.what == "throw" and o.who is not None and o.stage != "classify" for o in obs):
        out |= {"P9", "P10"}
    if any("lossless" in str(r.get("error", {}).get("message", "")) for r in failures) \
            or ("materialize", "throw") in kinds:
        out.add("P12")
    if isinstance(run, DirectRun) and any(_has_tokens(c.arguments) for c in run.calls):
        out.add("P13")
    if any(t.presentCall is not None or t.presentResult is not None for t in scenario.tools) \
            and ("body", "call") in kinds:
        out.add("P14")
    if isinstance(run, LoopRun) and any(e.type == "tool/call" for e in trace.events):
        out |= {"P16", "P18"}
        if ("pre-execute", "start") in kinds:
            out.add("P17")
        started = {o.call for o in obs if o.stage == "entry"}
        if len(started) >= 2:
            out.add("P20")
            if any(o.stage == "classify" and o.what == "end" and o.value == "parallel" for o in obs):
                out.add("P21")
        if ("loop", "commit") in kinds:
            out.add("P103")
    pre_ends = [o for o in obs if o.stage == "pre-execute" and o.what == "end"]
    if pre_ends:
        out.add("P31")
    if any(o.stage == "route" and o.value == "denied" for o in obs):
        out.add("P33")
    if any(o.stage == "approval" and o.what == "outcome" and o.value != "allowed-once" for o in obs):
        out.add("P41")
    guard_denied = {o.call for o in obs if o.stage == "guards" and o.what == "end" and o.value != {"$js": "undefined"}}
    if guard_denied:
        out.add("P48")
        aborted_before = {o.call for o in obs if o.what == "abort" and o.value == "caller"
                          and o.stage in ("pre-execute", "approval")}
        if guard_denied & aborted_before:
            out.add("P51")
    unknown_at_entry = {o.call for o in obs if o.stage == "entry" and o.what == "start"
                        and isinstance(o.value, dict) and not o.value.get("visible")}
    if any(o.stage == "dispatch" and o.what == "resolve" and o.value is None for o in obs) or any(
            o.stage == "pre-execute" and o.what == "start" and o.call in unknown_at_entry for o in obs):
        out.add("P57")  # policy ran for a name that does not resolve
    if any(o.stage == "checkpoint" and o.value in ("after-execute", "after-post") for o in obs) or any(
            o.stage == "dispatch" and o.value == "at-return" for o in obs):
        out.add("P59")
    if did("execute", lambda s: has_step(s, "return")):
        out.add("P63")
    if did("execute", lambda s: not has_step(s, "next") and not has_step(s, "throw")):
        out.add("P66")
    resolves = Counter(o.call for o in obs if o.stage == "dispatch")
    if any(n >= 2 for n in resolves.values()):
        out.add("P69")
    if any(o.stage == "body" and o.what in ("inject", "register", "unregister", "defer", "abort", "conclude")
           for o in obs):
        out.add("P71")
    if any(o.stage == "body" and o.what == "return" for o in obs):
        out.add("P72")
    if ("presentationMeta", "call") in kinds or any(isinstance(r, dict) and "meta" in r for r in results):
        out.add("P74")
    post_starts = {o.call: o.value for o in obs if o.stage == "post-execute" and o.what == "start"}
    for o in obs:
        if o.stage != "post-execute" or o.what != "end":
            continue
        d = o.value
        kind = _decision_kind(d)
        entries = d.get("entries", d) if isinstance(d, dict) else {}
        if kind not in ("accept", "block"):
            out.add("P79")
        elif kind == "block":
            out |= {"P83", "P84"}
        else:
            if "value" in entries:
                out.add("P81")
                handed = post_starts.get(o.call)
                if "content" in entries or (isinstance(handed, dict) and handed.get("isError")):
                    out.add("P82")
            elif "content" in entries:
                out.add("P80")
            if "additionalContexts" in entries:
                out.add("P85")
        if isinstance(post_starts.get(o.call), dict) and post_starts[o.call].get("isError"):
            out.add("P87")
    aborted_calls = {o.call for o in obs if o.what == "abort" and o.value == "caller"}
    if isinstance(run, DirectRun):
        aborted_calls |= {c.callId for c in run.calls if c.aborted}
    for r in trace.results:
        res = r.result
        if r.callId in aborted_calls and isinstance(res, dict) and res.get("isError"):
            info = res.get("error", {}).get("info") or {}
            if info.get("code") not in ("ABORTED", "ABORTED_BEFORE_DISPATCH"):
                out.add("P89")
    if any(isinstance(r, dict) and ({"meta", "additionalContexts", "concludesTurn"} & set(r)) for r in results):
        out.add("P92")
    if any(o.stage == "entry" and o.what == "start" and isinstance(o.value, dict) and not o.value.get("visible")
           for o in obs) or ("loop", "synthetic") in kinds:
        out.add("P97")
    if trace.warnings:
        out.add("P101")
    if not isinstance(scenario.approval, CustomApproval) and scenario.approval is not None and any(
            o.stage == "approval" and o.what == "request" for o in obs):
        out.add("P43")  # the shipped service handled a request
    if isinstance(run, LoopRun) and any(isinstance(r, dict) and r.get("concludesTurn") for r in results):
        out.add("P106")
    if isinstance(run, DirectRun) and any(isinstance(r, dict) and r.get("additionalContexts") for r in results):
        out.add("P102")
    return out | code_mode_strategies.exercised(scenario, trace)


def observation_kinds(trace: Trace) -> set[str]:
    return {f"{o.stage}/{o.what}" for o in trace.observations}


# ============================================================================ measured coverage

def draw_examples(n_examples: int, seed: int, profiles: frozenset[str] = ALL_PROFILES) -> Iterator[Example]:
    """``n_examples`` independent draws of ``examples(profiles)``, the same for the same
    seed.

    Hypothesis' own generate phase mutates each novel example several times, so 300 of its
    examples hold only some 45 independent draws; a measurement of what the strategies
    reach wants independent ones. They come from hypothesis' choice sequence driven by a
    seeded ``random.Random`` (an internal API of the pinned hypothesis release); should
    that API move, the draws fall back to a ``@given`` run with the same seed."""
    draws = independent_draws(n_examples, seed, profiles)
    if draws is None:
        yield from _given_examples(examples(frozenset(profiles)), n_examples, seed)
        return
    for example, _choices in draws:
        yield example


def independent_draws(n_examples: int, seed: int,
                      profiles: frozenset[str] = ALL_PROFILES) -> Iterator[tuple[Example, tuple[Any, ...]]] | None:
    """``draw_examples`` with each draw's hypothesis choice sequence, from which
    hypothesis can replay and shrink it; None where the internal API is not there."""
    strategy = examples(frozenset(profiles))
    try:
        from hypothesis.control import BuildContext
        from hypothesis.errors import StopTest
        from hypothesis.internal.conjecture.data import ConjectureData

        def one(rnd: random.Random) -> tuple[Example, tuple[Any, ...]] | None:
            data = ConjectureData(random=rnd, max_choices=8192)
            try:
                with BuildContext(data, is_final=False, wrapped_test=draw_examples):
                    return data.draw(strategy), tuple(data.choices)
            except StopTest:  # ran out of choices: a draw too large, skipped
                return None
        one(random.Random(seed))
    except (ImportError, TypeError, AttributeError):
        return None

    def draws() -> Iterator[tuple[Example, tuple[Any, ...]]]:
        rnd = random.Random(seed)
        drawn = attempts = 0
        while drawn < n_examples and attempts < 4 * n_examples:
            attempts += 1
            got = one(random.Random(rnd.getrandbits(64)))
            if got is not None:
                drawn += 1
                yield got
    return draws()


def _given_examples(strategy: S, n_examples: int, seed: int) -> Iterator[Example]:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seed_

    out: list[Example] = []

    @settings(max_examples=n_examples, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @seed_(seed)
    @given(strategy)
    def collect(example: Example) -> None:
        out.append(example)

    collect()
    yield from out


def measure_coverage(n_examples: int = DEFAULT_EXAMPLES, seed: int = DEFAULT_SEED,
                     profiles: frozenset[str] = ALL_PROFILES) -> dict[str, Any]:
    """Draw ``n_examples`` scenarios (``draw_examples``: deterministic for a given
    ``seed``) and count, for each rule of ``profiles`` and each observation kind
    ``stage/what``, how many of the examples' oracle traces exercised it.

    Returns ``{"examples", "seed", "profiles", "rules": {id: n}, "kinds": {kind: n},
    "missing": [rule ids never exercised]}``; ``rules`` lists every rule of the profiles,
    zero counts included, in rule order."""
    profiles = frozenset(profiles)
    wanted = sort_rules(r.id for r in rules_of(*profiles))
    rule_counts: Counter[str] = Counter()
    kind_counts: Counter[str] = Counter()
    drawn = 0
    for example in draw_examples(n_examples, seed, profiles):
        drawn += 1
        rule_counts.update(exercised_rules(example.scenario, example.trace))
        kind_counts.update(observation_kinds(example.trace))
    return {
        "examples": drawn,
        "seed": seed,
        "profiles": sorted(profiles),
        "rules": {r: rule_counts.get(r, 0) for r in wanted},
        "kinds": dict(sorted(kind_counts.items())),
        "missing": [r for r in wanted if not rule_counts.get(r)],
    }


def dumps_coverage(coverage: dict[str, Any]) -> str:
    return json.dumps(coverage, indent=1)
