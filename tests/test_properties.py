"""Properties of generated scenarios (issue 3, section 2).

(a) The oracle satisfies every invariant on generated scenarios, and every generated
    scenario parses, runs to an end and cites known rules.
(b) Measured coverage: the default example budget exercises every rule of core,
    reference and loop, and reaches every probe point.
(c) The invariants catch broken traces: oracle traces corrupted one way at a time are
    reported under the rule the corruption breaks.
(d) Oracle defects the generated scenarios found, kept as regression tests.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from dsh_conformance.laws import check
from dsh_conformance.spec.corpus import load_corpus
from dsh_conformance.spec.rules import ORACLE_PROFILES, rules, rules_of
from dsh_conformance.strategies.citation import ALL_PROFILES, cite
from dsh_conformance.strategies.draws import DEFAULT_EXAMPLES, DEFAULT_SEED, measure_coverage
from dsh_conformance.strategies.scenarios import scenarios
from dsh_conformance.oracle import Scenario, Trace, parse_scenario, run_scenario
from dsh_conformance.kit.trace import PROBE_POINTS, Event, Observation, is_portable

PROPERTY_EXAMPLES = 120

PROPERTY_SETTINGS = settings(max_examples=PROPERTY_EXAMPLES, derandomize=True, database=None, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

def run(doc: dict[str, Any]) -> tuple[Scenario, Trace]:
    s = parse_scenario(doc)
    return s, run_scenario(s)


# ============================================================================ (a) the oracle obeys the laws

@pytest.mark.rules(*[r.id for r in rules_of(*ORACLE_PROFILES)])
@PROPERTY_SETTINGS
@given(scenarios())
def test_oracle_satisfies_the_invariants(doc):
    scenario, trace = run(doc)
    assert doc["rules"] and set(doc["rules"]) <= set(rules()), doc["rules"]
    assert check(scenario, trace) == []
    # The laws read only what an implementation reports: a trace cut down to the portable
    # observations is judged the same.
    portable = trace.model_copy(update={"observations": [o for o in trace.observations if is_portable(o)]})
    assert check(scenario, portable) == check(scenario, trace)


@settings(max_examples=25, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios(frozenset({"core", "reference"})))
def test_without_the_loop_profile_no_loop_runs_and_no_loop_rules(doc):
    assert doc["run"]["kind"] == "direct"
    assert {rules()[r].profile for r in doc["rules"]} <= {"core", "reference"}


def test_cite_fills_rules_from_the_trace():
    doc = {"tools": [{"name": "t", "body": [{"do": "return", "value": 1}]}],
           "listeners": [{"id": "deny", "event": "tools/pre-execute",
                          "script": [{"do": "return", "value": {"kind": "deny", "reason": "no"}}]}],
           "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]}}
    cited = cite(doc)
    assert {"P1", "P3", "P30", "P32", "P33"} <= set(cited["rules"])
    assert cited["rules"] == sorted(cited["rules"], key=lambda r: int(r[1:]))
    assert "rules" not in doc  # the input is not changed


def test_cite_repairs_a_gate_order_that_never_settles():
    # A1's body waits for A2's, but A2 is exclusive: it cannot start before A1 is done.
    doc = {"agents": [{"id": "a1"}],
           "tools": [{"name": "t", "body": [{"do": "gate"}, {"do": "return", "value": 1}]}],
           "run": {"kind": "loop", "agent": "a1", "release": ["A2", "A1"],
                   "blocks": [{"id": "A1", "name": "t", "arguments": "{}"},
                              {"id": "A2", "name": "t", "arguments": "{}"}]}}
    cited = cite(doc)
    assert "release" not in cited["run"]
    run(cited)


# ============================================================================ (b) measured coverage

@pytest.fixture(scope="module")
def coverage() -> dict[str, Any]:
    return measure_coverage(DEFAULT_EXAMPLES, DEFAULT_SEED)


def test_default_budget_exercises_every_rule(coverage):
    assert coverage["examples"] == DEFAULT_EXAMPLES
    assert set(coverage["rules"]) == {r.id for r in rules_of(*ALL_PROFILES)}
    assert coverage["missing"] == [], f"rules no generated example exercises: {coverage['missing']}"


def test_default_budget_reaches_every_probe_point_and_participant(coverage):
    kinds = set(coverage["kinds"])
    missing = sorted(f"{stage}/{what}" for stage, what in PROBE_POINTS if f"{stage}/{what}" not in kinds)
    for stage in ("pre-execute", "approval", "guards", "execute", "body", "post-execute", "render",
                  "presentationMeta", "finalize", "result", "classify"):
        for what in ("call", "return", "throw"):
            if f"{stage}/{what}" not in kinds:
                missing.append(f"{stage}/{what}")
    assert missing == []


def test_measurement_is_deterministic():
    assert measure_coverage(15, 7) == measure_coverage(15, 7)


# ============================================================================ (c) the laws catch broken traces

PRE_DENY = {
    "tools": [{"name": "t", "body": [{"do": "return", "value": 1}]}],
    "listeners": [{"id": "deny", "event": "tools/pre-execute",
                   "script": [{"do": "return", "value": {"kind": "deny", "reason": "no"}}]}],
    "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]},
}
PRE_THROW = {**PRE_DENY, "listeners": [{"id": "boom", "event": "tools/pre-execute",
                                        "script": [{"do": "throw", "value": {"$js": "error", "class": "Error",
                                                                            "message": "x"}}]}]}
GUARDED = {
    "tools": [{"name": "t", "body": [{"do": "observe"}, {"do": "observe", "what": "args"},
                                     {"do": "mutate", "target": "record.name", "value": "other"},
                                     {"do": "return", "value": 1}],
               "finalizeContent": [{"do": "observe", "what": "result"},
                                   {"do": "return", "value": [{"type": "text", "text": "final"}]}]}],
    "guards": [{"id": "G1"}],
    "listeners": [{"id": "post", "event": "tools/post-execute",
                   "script": [{"do": "observe", "what": "result"}, {"do": "next"}, {"do": "return-next"}]},
                  {"id": "obs", "event": "tools/result", "script": [{"do": "observe", "what": "result"}]}],
    "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t", "arguments": {"x": 1}}]},
}
GUARD_DENIES = {**GUARDED, "guards": [{"id": "G1", "script": [{"do": "return", "value": "no"}]}]}
GUARD_THROWS = {**GUARDED, "guards": [{"id": "G1", "script": [{"do": "throw", "value": "x"}]}]}
MESSAGE = {"role": "user", "content": [{"type": "text", "text": "ctx"}], "source": {"kind": "plugin", "plugin": "p"}}
LOOP = {
    "agents": [{"id": "a1"}],
    "tools": [{"name": "t", "body": [{"do": "defer-context", "message": {**MESSAGE, "id": "m-A1"}},
                                     {"do": "return", "value": 1}],
               "concurrencySafe": [{"do": "return", "value": True}]},
              {"name": "u", "body": [{"do": "defer-context", "message": {**MESSAGE, "id": "m-B1"}},
                                     {"do": "return", "value": 2}]}],
    "run": {"kind": "loop", "agent": "a1", "blocks": [{"id": "A1", "name": "t", "arguments": "{}"},
                                                      {"id": "B1", "name": "u", "arguments": "{}"}]},
}


def obs(trace: Trace, call: str, stage: str, what: str, who: str | None = None) -> int:
    return next(i for i, o in enumerate(trace.observations)
                if o.call == call and o.stage == stage and o.what == what and (who is None or o.who == who))


def event(trace: Trace, type_: str, nth: int = 0) -> int:
    return [i for i, e in enumerate(trace.events) if e.type == type_][nth]


def insert(trace: Trace, at: int, o: Observation) -> None:
    trace.observations.insert(at, o)


def corrupt_body_after_deny(t: Trace) -> None:
    insert(t, obs(t, "c1", "pre-execute", "end") + 1, Observation(call="c1", stage="body", what="call", who="t"))


def corrupt_execute_after_pre_throw(t: Trace) -> None:
    insert(t, len(t.observations) - 2, Observation(call="c1", stage="execute", what="start"))


def corrupt_execute_after_guard_denial(t: Trace) -> None:
    insert(t, obs(t, "c1", "guards", "return", "G1") + 1, Observation(call="c1", stage="execute", what="start"))


def corrupt_body_after_guard_throw(t: Trace) -> None:
    insert(t, obs(t, "c1", "guards", "throw", "G1") + 1, Observation(call="c1", stage="body", what="call", who="t"))


def corrupt_skip_the_guards(t: Trace) -> None:
    t.observations = [o for o in t.observations if o.stage != "guards"]


def corrupt_post_before_execute(t: Trace) -> None:
    o = t.observations.pop(obs(t, "c1", "post-execute", "start"))
    insert(t, obs(t, "c1", "execute", "start"), o)


def corrupt_second_notification(t: Trace) -> None:
    i = obs(t, "c1", "result", "start")
    insert(t, i, t.observations[i].model_copy())


def corrupt_mutable_result(t: Trace) -> None:
    t.results[0].frozen = False


def corrupt_not_the_observed_object(t: Trace) -> None:
    t.results[0].observed = False


def corrupt_value_and_error(t: Trace) -> None:
    t.results[0].result = {**t.results[0].result, "error": {"message": "also failed"}}


def corrupt_non_lossless_result(t: Trace) -> None:
    t.results[0].result = {**t.results[0].result, "value": {"$js": "NaN"}}


def corrupt_concludes_failure(t: Trace) -> None:
    t.results[0].result = {"isError": True, "error": {"message": "m"}, "content": [], "concludesTurn": True}


def corrupt_denied_success(t: Trace) -> None:
    t.results[0].result = {"isError": False, "value": 1, "content": []}
    t.observations[obs(t, "c1", "result", "start")].value = t.results[0].result


def corrupt_identity_name(t: Trace) -> None:
    i = obs(t, "c1", "body", "observe", "t")
    t.observations[i].value = {**t.observations[i].value, "name": "other"}


def corrupt_identity_write_applied(t: Trace) -> None:
    i = obs(t, "c1", "body", "mutate", "t")
    t.observations[i].value = {**t.observations[i].value, "outcome": "applied"}


def corrupt_unfrozen_handed_result(t: Trace) -> None:
    i = obs(t, "c1", "post-execute", "observe", "post")
    t.observations[i].value = {**t.observations[i].value, "frozen": False}


def corrupt_args_not_the_snapshot(t: Trace) -> None:
    i = next(i for i, o in enumerate(t.observations) if o.what == "observe" and o.stage == "body"
             and "isRecordArguments" in o.value)
    t.observations[i].value = {**t.observations[i].value, "args": {"x": 2}}


def corrupt_finalizer_changes_is_error(t: Trace) -> None:
    res = {"isError": True, "error": {"message": "final"}, "content": [{"type": "text", "text": "final"}]}
    t.results[0].result = res
    for o in t.observations:
        if o.stage == "result" and (o.what == "start" or o.what == "observe"):
            o.value = res if o.what == "start" else {**o.value, "result": res}


def corrupt_missing_tool_result(t: Trace) -> None:
    del t.events[event(t, "tool/result", 1)]


def corrupt_tool_result_not_citing(t: Trace) -> None:
    t.events[event(t, "tool/result")].sourceEventSeqs = [99]


def corrupt_tool_result_payload(t: Trace) -> None:
    e = t.events[event(t, "tool/result")]
    e.data = {**e.data, "error": {"name": "X", "code": "Y"}}


def corrupt_results_out_of_model_order(t: Trace) -> None:
    a, b = event(t, "tool/result", 0), event(t, "tool/result", 1)
    t.events[a], t.events[b] = t.events[b], t.events[a]


def corrupt_context_before_tool_result(t: Trace) -> None:
    m = t.events.pop(event(t, "user/message"))
    t.events.insert(event(t, "tool/result", 1), m)


def corrupt_contexts_out_of_order(t: Trace) -> None:
    a, b = event(t, "user/message", 0), event(t, "user/message", 1)
    t.events[a], t.events[b] = t.events[b], t.events[a]


def corrupt_tool_call_after_max_tokens(t: Trace) -> None:
    t.events.insert(1, Event(agent="a1", seq=2, type="tool/call",
                             data={"turn": 1, "step": 1, "callId": "A1", "name": "t", "arguments": "{}"}))


def corrupt_direct_run_injects(t: Trace) -> None:
    t.events.append(Event(agent="a1", seq=1, type="user/message", data={**MESSAGE, "id": "m"}))


def corrupt_stages_on_a_synthetic_result(t: Trace) -> None:
    t.observations.append(Observation(call="B1", stage="pre-execute", what="start"))


def corrupt_stage_after_the_notification(t: Trace) -> None:
    t.observations.append(Observation(call="c1", stage="post-execute", what="call", who="post"))


def _moved_before(t: Trace, call: str, stage: str, before_call: str, before_stage: str) -> None:
    """The call's observations of ``stage`` moved just before ``before_call``'s first one of
    ``before_stage``."""
    later = [o for o in t.observations if o.call == call and o.stage == stage]
    rest = [o for o in t.observations if o not in later]
    at = next(i for i, o in enumerate(rest) if o.call == before_call and o.stage == before_stage)
    t.observations[:] = [*rest[:at], *later, *rest[at:]]


def corrupt_post_execute_out_of_model_order(t: Trace) -> None:
    """B1's post-execute, which runs at its commit, moved before A1's (earlier in model order)."""
    _moved_before(t, "B1", "post-execute", "A1", "post-execute")


def corrupt_notification_inside_an_earlier_calls_commit(t: Trace) -> None:
    """B1's tools/result observers run between A1's post-execute and A1's own notification."""
    _moved_before(t, "B1", "result", "A1", "result")


def _corpus_doc(case_id: str) -> dict[str, Any]:
    return next(c.document for c in load_corpus() if c.id == case_id)


LOOP_ABORTED = {**LOOP, "tools": [{"name": "t", "body": [{"do": "abort"}, {"do": "return", "value": 1}]},
                                  LOOP["tools"][1]]}
DIRECT_WITH_AGENT = {**GUARDED, "agents": [{"id": "a1"}]}

CORRUPTIONS = [
    ("body-after-deny", PRE_DENY, corrupt_body_after_deny, "P3"),
    ("execute-after-pre-throw", PRE_THROW, corrupt_execute_after_pre_throw, "P34"),
    ("execute-after-guard-denial", GUARD_DENIES, corrupt_execute_after_guard_denial, "P46"),
    ("body-after-guard-throw", GUARD_THROWS, corrupt_body_after_guard_throw, "P49"),
    ("dispatch-without-guards", GUARDED, corrupt_skip_the_guards, "P44"),
    ("post-before-execute", GUARDED, corrupt_post_before_execute, "P1"),
    ("stage-after-notification", GUARDED, corrupt_stage_after_the_notification, "P1"),
    ("two-notifications", GUARDED, corrupt_second_notification, "P98"),
    ("mutable-result", GUARDED, corrupt_mutable_result, "P99"),
    ("result-not-the-observed-object", GUARDED, corrupt_not_the_observed_object, "P98"),
    ("value-and-error", GUARDED, corrupt_value_and_error, "P4"),
    ("non-lossless-result", GUARDED, corrupt_non_lossless_result, "P12"),
    ("failure-concludes-turn", GUARDED, corrupt_concludes_failure, "P4"),
    ("denied-yet-success", PRE_DENY, corrupt_denied_success, "P3"),
    ("identity-wrong-name", GUARDED, corrupt_identity_name, "P24"),
    ("identity-write-applied", GUARDED, corrupt_identity_write_applied, "P24"),
    ("handed-result-not-frozen", GUARDED, corrupt_unfrozen_handed_result, "P11"),
    ("body-arguments-not-the-snapshot", GUARDED, corrupt_args_not_the_snapshot, "P25"),
    ("finalizer-changes-is-error", GUARDED, corrupt_finalizer_changes_is_error, "P94"),
    ("missing-tool-result", LOOP, corrupt_missing_tool_result, "P105"),
    ("tool-result-not-citing-its-call", LOOP, corrupt_tool_result_not_citing, "P104"),
    ("tool-result-wrong-error", LOOP, corrupt_tool_result_payload, "P104"),
    ("tool-results-out-of-model-order", LOOP, corrupt_results_out_of_model_order, "P105"),
    ("context-before-tool-result", LOOP, corrupt_context_before_tool_result, "P110"),
    ("contexts-out-of-fifo-order", LOOP, corrupt_contexts_out_of_order, "P111"),
    ("tool-call-after-max-tokens", {**LOOP, "run": {**LOOP["run"], "finish": "max-tokens"}},
     corrupt_tool_call_after_max_tokens, "P15"),
    ("direct-run-injects", DIRECT_WITH_AGENT, corrupt_direct_run_injects, "P102"),
    ("stages-on-a-synthetic-result", LOOP_ABORTED, corrupt_stages_on_a_synthetic_result, "P107"),
    ("post-execute-out-of-model-order", _corpus_doc("loop-parallel-pool-ordered-stages"),
     corrupt_post_execute_out_of_model_order, "P21"),
    ("notification-inside-an-earlier-commit", _corpus_doc("loop-parallel-pool-ordered-stages"),
     corrupt_notification_inside_an_earlier_calls_commit, "P21"),
]


@pytest.mark.parametrize("doc,corrupt,rule", [pytest.param(d, c, r, id=n, marks=pytest.mark.rules(r))
                                              for n, d, c, r in CORRUPTIONS])
def test_invariants_catch_a_broken_trace(doc, corrupt, rule):
    scenario, trace = run(copy.deepcopy(doc))
    assert check(scenario, trace) == []
    broken = trace.model_copy(deep=True)
    corrupt(broken)
    assert rule in {v.rule for v in check(scenario, broken)}, check(scenario, broken)


def test_invariants_hold_on_the_corpus():

    for case in load_corpus():
        assert check(case.scenario, run_scenario(case.scenario)) == [], case.id


# ============================================================================ (d) oracle defects found

def _mutations(doc: dict[str, Any]) -> list[str]:
    return [o.value["outcome"] for o in run(doc)[1].observations if o.what == "mutate"]


def test_oracle_refuses_writes_through_undefined():
    """Found by the properties (fixed in a9d596f): a write under undefined throws in
    JavaScript: result.* in a participant handed no result, record.arguments.* after the
    arguments snapshot failed (P11, P25)."""
    doc = {"tools": [{"name": "t", "body": [{"do": "mutate", "target": "result.value", "value": 1},
                                            {"do": "return", "value": 1}],
                      "finalizeContent": [{"do": "mutate", "target": "record.arguments.x", "op": "delete"},
                                          {"do": "return", "value": {"$js": "undefined"}}]}],
           "guards": [{"id": "G", "script": [{"do": "mutate", "target": "result.isError", "value": False},
                                             {"do": "return", "value": {"$js": "undefined"}}]}],
           "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t", "arguments": {"x": {"$js": "NaN"}}},
                                               {"callId": "c2", "name": "t", "arguments": {"x": 1}}]}}
    assert set(_mutations(doc)) == {"failed"}


@pytest.mark.rules("P24")
def test_oracle_refuses_writes_into_an_absent_agent_or_parent():
    doc = {"tools": [{"name": "t", "body": [{"do": "mutate", "target": "record.agent.x", "value": 1},
                                            {"do": "mutate", "target": "record.parent.x", "value": 1},
                                            {"do": "return", "value": 1}]}],
           "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]}}
    assert set(_mutations(doc)) == {"failed"}


@pytest.mark.rules("P24")
def test_oracle_lets_a_delete_on_a_primitive_succeed():
    doc = {"tools": [{"name": "t", "body": [{"do": "mutate", "target": "record.callId.x", "op": "delete"},
                                            {"do": "return", "value": 1}]}],
           "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]}}
    assert _mutations(doc) == ["applied"]
