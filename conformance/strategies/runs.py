"""The run a scenario makes: direct ``execute()`` calls or one loop tool step with raw
argument texts (P16 at its boundaries)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from dsh_conformance.strategies.basics import S, reused, weighted
from dsh_conformance.strategies.participants import chance
from dsh_conformance.strategies.value_shapes import ARGS_GETTER, NAME_GETTER, ROOT_GETTER
from dsh_conformance.strategies.values import boundary_values, js_only_values


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
# What JSON.parse and a sloppy parse tell apart most often (P16): empty, duplicate keys, -0,
# a model's own "$js" key (data, not a token of the wire form: 3.11).
RAW_PARSES = ["", '{"x":1,"x":2}', '{"n":-0}', "-0", '{"$js":"undefined","x":1}']
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
