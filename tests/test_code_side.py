"""Code Mode side runs (conformance/strategies/code_side.py): run_code calls of their own
drawn last in a direct Code Mode scenario. Over the default run's own draws they come after
every drawn call, and each run meets what it is there for, as the oracle runs it."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_conformance.strategies.code_side import CALL_PREFIX, EXCLUSIVE_TOOL, NOT_LOSSLESS, SAFE_TOOL, SIDE_AGENT


@pytest.fixture(scope="module")
def side_docs(default_draws: list[Any]) -> list[Any]:
    cases = default_draws
    return [c for c in cases if c.doc["run"]["kind"] == "direct" and any(t.get("id") == SAFE_TOOL for t in c.doc["tools"])]


def _runs(example: Any, program: str) -> list[str]:
    """The side run_code calls of ``example`` running ``program``."""
    return [c["callId"] for c in example.doc["run"]["calls"]
            if c["callId"].startswith(CALL_PREFIX) and c["name"] == "run_code" and c["arguments"]["code"] == program]


def _obs(example: Any, call: str, stage: str, what: str | None = None) -> list[Any]:
    return [o for o in example.trace.observations if o.call == call and o.stage == stage and (what is None or o.what == what)]


def _result(example: Any, call: str) -> dict[str, Any]:
    return next(r.result for r in example.trace.results if r.callId == call)


def _names(v: Any) -> set[str]:
    """Every tool or participant a step, a call or a program names."""
    if isinstance(v, list):
        return set().union(*map(_names, v)) if v else set()
    if not isinstance(v, dict):
        return set()
    own = {x for k, x in v.items() if k in ("ref", "tool", "name") and isinstance(x, str)}
    return own.union(*map(_names, v.values()))


def _ran(example: Any, call: str) -> bool:
    return bool(_obs(example, call, "program", "start"))


def test_side_runs_come_after_every_drawn_call_and_nothing_drawn_names_them(side_docs):
    assert len(side_docs) >= 8, len(side_docs)  # the direct Code Mode draws of the default run
    for c in side_docs:
        ids = [x["callId"] for x in c.doc["run"]["calls"]]
        side = [i for i in ids if i.startswith(CALL_PREFIX)]
        assert side and ids[-len(side):] == side, ids
        ours = {SAFE_TOOL, f"{SAFE_TOOL}@{SIDE_AGENT}", EXCLUSIVE_TOOL}
        drawn = [t for t in c.doc["tools"] if t.get("id") not in ours]
        drawn += [p for p in c.doc["programs"] if not p["id"].startswith("pv-")]
        drawn += [x for x in c.doc["run"]["calls"] if x["callId"] not in side]
        assert not _names(drawn) & ours, _names(drawn) & ours  # no drawn step or call names them


@pytest.mark.rules("P121")
def test_the_cap_run_never_overlaps_more_than_the_cap(side_docs):
    seen = 0
    for c in side_docs:
        cap = c.doc.get("maxParallelSubCalls", 10)
        for run in filter(lambda r: _ran(c, r), _runs(c, "pv-cap")):
            in_flight: set[str] = set()
            most = 0
            for o in c.trace.observations:
                if o.call is None or not o.call.startswith(f"{run}:code:"):
                    continue
                if o.stage == "code-mode" and o.what == "start":
                    assert len(in_flight) < cap, (run, o.call, in_flight)  # started only with room
                if o.stage == "execute" and o.what == "start":
                    in_flight.add(o.call)
                    most = max(most, len(in_flight))
                if o.stage == "execute" and o.what == "end":
                    in_flight.discard(o.call)
            assert most == cap, (run, most, cap)  # and the bodies did overlap up to it
            seen += 1
    assert seen >= 2, seen


@pytest.mark.rules("P128")
def test_the_cap_runs_value_is_written_as_json_with_deep_nesting_compacted(side_docs):
    seen = 0
    for c in side_docs:
        for run in _runs(c, "pv-cap"):
            result = _result(c, run)
            if result["isError"]:
                continue
            text = result["content"][0]["text"]
            for piece in ('"s": "q\\"b\\\\s\\n\\u0001"', '"n": -1.5e-7', '"e": []', '"o": {}', '"z": null',
                          '"l": [\n    1,\n    "two",\n    [],\n    {}\n  ]', '"d": {"e":{"f":[1,{"g":"h"}]}}'):
                assert piece in text, (piece, text)
            seen += 1
    assert seen >= 2, seen


@pytest.mark.rules("P116", "P125", "P118")
def test_an_abort_mid_run_abandons_the_queue_and_stops_the_program(side_docs):
    seen = 0
    for c in side_docs:
        for run in filter(lambda r: _ran(c, r), _runs(c, "pv-abort")):
            abandoned = {o.call for o in c.trace.observations if o.stage == "code-mode" and o.what == "abandon"}
            assert {f"{run}:code:2", f"{run}:code:3"} <= abandoned  # queued behind the exclusive one, never started
            assert not _obs(c, f"{run}:code:2", "entry")
            assert _result(c, f"{run}:code:1")["isError"]  # in flight: it saw its caller aborted, and committed
            end = _obs(c, run, "program", "end")[0].value
            assert end["error"]["kind"] == "abort"  # the program stopped in its sleep
            assert _obs(c, run, "program", "late")  # the continuation ran, and its call was not dispatched
            assert not any(o.call == f"{run}:code:4" for o in c.trace.observations)
            seen += 1
    assert seen >= 2, seen


@pytest.mark.rules("P116", "P29")
def test_a_sub_calls_guard_that_aborts_the_caller_stops_the_program(side_docs):
    seen = 0
    for c in side_docs:
        for run in filter(lambda r: _ran(c, r), _runs(c, "pv-guard")):
            assert [o.value["n"] for o in _obs(c, run, "program", "bind")] == [1]  # nothing after the sleep
            assert _obs(c, run, "program", "end")[0].value["error"]["kind"] == "abort"
            assert not _obs(c, f"{run}:code:1", "body")
            seen += 1
    assert seen >= 2, seen


@pytest.mark.rules("P122", "P128", "P114", "P119")
def test_a_run_without_an_agent_logs_nothing_and_its_end_is_the_result(side_docs):
    seen = 0
    for c in side_docs:
        for run in _runs(c, "pv-end"):
            call = next(x for x in c.doc["run"]["calls"] if x["callId"] == run)
            if "agent" in call or call.get("aborted") or not _ran(c, run):
                continue
            assert not _obs(c, run, "tool-event")  # no dispatch log without an agent (P122)
            # the listener's write into the sub-call's input meets the bridge's own object: the
            # sub-call runs as it was submitted (P23, P119)
            assert _obs(c, f"{run}:code:2", "body")
            last = next(p for p in c.doc["programs"] if p["id"] == "pv-end")["steps"][-1]
            result = _result(c, run)
            kind = {"throw": "exception", "fail": last.get("kind")}.get(last["do"])
            if last["do"] == "return" and last["value"] == NOT_LOSSLESS:
                kind = "invalid-output"  # only lossless JSON crosses
            if kind is not None:
                assert result["error"]["message"].startswith(f"code run failed ({kind}): "), result
            else:
                assert not result["isError"], result
            seen += 1
    assert seen >= 2, seen


@pytest.mark.rules("P125", "P9")
def test_a_crashed_runtime_abandons_the_queue_and_throws_after_the_started_sub_call_commits(side_docs):
    seen = 0
    for c in side_docs:
        for run in filter(lambda r: _ran(c, r), _runs(c, "pv-crash")):
            thrown = _obs(c, run, "program", "throw")
            assert len(thrown) == 1 and not _obs(c, run, "program", "end")  # run() rejected: no run result
            abandoned = {o.call for o in c.trace.observations if o.stage == "code-mode" and o.what == "abandon"}
            assert f"{run}:code:2" in abandoned and not _obs(c, f"{run}:code:2", "entry")  # queued, never started
            order = [r.callId for r in c.trace.results]
            assert order.index(f"{run}:code:1") < order.index(run)  # the started sub-call committed first
            assert _result(c, run)["isError"]
            seen += 1
    assert seen >= 2, seen


@pytest.mark.rules("P56", "P117")
def test_a_restricted_side_agents_runs_bind_no_hidden_name(side_docs):
    seen = 0
    for c in side_docs:
        agent = next(a for a in c.doc["agents"] if a["id"] == SIDE_AGENT)
        if "restrict" not in agent:
            continue
        for run in (x["callId"] for x in c.doc["run"]["calls"] if x.get("agent") == SIDE_AGENT and x["name"] == "run_code"):
            start = _obs(c, run, "program", "start")
            if not start:
                continue
            hidden = {o.value for o in _obs(c, run, "code-mode", "hide")}
            assert hidden and not hidden & set(start[0].value["bindings"])
            assert {SAFE_TOOL, EXCLUSIVE_TOOL} <= set(start[0].value["bindings"])  # the recipe's own stay bound
            seen += 1
    assert seen >= 2, seen
