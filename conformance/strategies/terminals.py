"""How each role's script ends, plain and "hot" (for the participant a scenario's focus is
on: no plain delegation, the interesting branches weighted up), and the body's end, which
depends on the output schema, the timeout policy and the loop's gates."""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import DELEGATE

from dsh_conformance.strategies.decisions import (
    GUARD_DENIALS,
    PRE_ALLOW,
    PRE_ASK,
    PRE_DENY,
    PRE_DENY_NO_REASON,
    PRE_MALFORMED,
    approval_outcomes,
    authored_results,
    post_decisions,
    pre_decisions,
)
from dsh_conformance.strategies.basics import S, UNDEF, message, text, weighted
from dsh_conformance.strategies.roles import THROWS, result_writes, ret, then_return
from dsh_conformance.strategies.values import (
    ABORT_AND_WAIT,
    ABORT_CALLER,
    CALL_SLOTS,
    REF_SLOTS,
    boundary_values,
    contents,
    context_lists,
    js_only_values,
    lossless_values,
    messages,
    thrown_values,
)


DELEGATES = st.just(list(DELEGATE))
BODY_SIGNAL = "body-signal"  # the signal a body keeps for a wrapper to look at after it (P60)

pre_terminals: S = weighted(
    (3, DELEGATES),
    (5, ret(pre_decisions)),
    (1, then_return([{"do": "next"}], pre_decisions)),
    (1, st.just([{"do": "next", "catch": True}, {"do": "return-next"}])),
    (1, st.just([{"do": "next"}, {"do": "next"}, {"do": "return-next"}])),
    (2, THROWS),
)

# P60: after the body, an abort of the wrapper's replacement no longer reaches the fused signal
# the body kept (every drawn body keeps it: body_terminals)
AFTER_THE_BODY: S = st.just([{"do": "set-signal", "signal": "w1"}, {"do": "next"}, {"do": "abort", "signal": "w1"},
                             {"do": "observe", "what": "kept", "name": BODY_SIGNAL}, {"do": "return-next"}])

exec_terminals: S = weighted(
    (3, DELEGATES),
    (2, ret(authored_results)),
    (1, then_return([{"do": "next"}], authored_results)),
    (1, st.just([{"do": "next"}, {"do": "observe", "what": "result"}, {"do": "next"}, {"do": "return-next"}])),
    (1, st.just([{"do": "set-signal", "signal": "w1"}, {"do": "next"}, {"do": "observe", "what": "record"},
                 {"do": "return-next"}])),
    # P60, P61: at launch the fused signal aborted by the caller's side alone (the record's replaced
    # by a live one), then by the record's side
    (1, st.just([{"do": "set-signal", "signal": "w1"}, ABORT_CALLER, {"do": "next"}, {"do": "return-next"}])),
    (1, st.just([{"do": "set-signal", "signal": "w1"}, {"do": "abort", "signal": "w1"}, {"do": "next"},
                 {"do": "return-next"}])),
    (1, st.just([{"do": "set-signal", "signal": "w1"}, {"do": "next"}, {"do": "set-signal", "signal": "restore"},
                 {"do": "return-next"}])),
    (1, AFTER_THE_BODY),
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
    (2, AFTER_THE_BODY),
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
    # Every body keeps its signal first (no observation of its own): a wrapper drawn to look
    # at it after the body (P60) then always has it.
    end = weighted(*options).map(lambda steps: [{"do": "keep", "what": "signal", "name": BODY_SIGNAL}, *steps])
    if loop:
        end = st.builds(lambda g, t: g + t, weighted((3, st.just([])), (1, st.just([{"do": "gate"}]))), end)
    return end
