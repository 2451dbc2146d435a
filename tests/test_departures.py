"""Consequences of a listed departure are derived, not listed by hand (conformance.explained):
a failure is expected when the reference computed with the implementation's listed
departures (oracle.departures) is its answer. The implementation here is the oracle itself
computing the reference release's P119 departure (sub-calls numbered per run of the body),
so its answers are exactly what such a release gives."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from dsh_conformance.kit.jsvalue import UNDEFINED
from dsh_conformance.kit.record import Record
from dsh_conformance.kit.scheduler import Signal
from dsh_conformance.oracle.departures import NotComputable, write_identity

from .conftest import run_fake_module

# A wrapper's retry (P69) of run_code whose program calls a concurrency-safe tool twice: the
# second run's sub-calls reuse the first run's ids, so the classifier of a reused id runs
# again where the reference's unique ids never do (P19 shows it first, not P119).
RETRY = {
    "id": "retry-parallel", "title": "a retried run_code whose program calls a concurrency-safe tool twice",
    "rules": ["P119", "P69"], "mode": "code", "agents": [{"id": "a"}],
    "tools": [{"name": "t", "concurrencySafe": [{"do": "return", "value": True}],
               "body": [{"do": "sleep", "ms": 5}, {"do": "return", "value": 1}]}],
    "listeners": [{"id": "retry", "event": "tools/execute", "script": [{"do": "next"}, {"do": "next"}, {"do": "return-next"}]}],
    "programs": [{"id": "p", "steps": [{"do": "call", "tool": "t", "as": "a"}, {"do": "call", "tool": "t", "as": "b"},
                                       {"do": "await", "handle": "a"}, {"do": "await", "handle": "b"},
                                       {"do": "return", "value": "run"}]}],
    "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "run_code", "agent": "a",
                                         "arguments": {"code": "p", "description": "run the program"}}]},
}


def _cases(where: Path, *docs: dict[str, Any]) -> Path:
    folder = where / "cases"
    folder.mkdir()
    for doc in docs:
        (folder / f"{doc['id']}.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder


LISTED = {"P119": "sub-calls numbered per run of the body", "P11": "failures reach listeners writable",
          "P24": "identity writes apply until the freeze"}


def _run(tmp_path: Path, cases: Path, listed: bool, fault: str = "", departure: str = "P119",
         also: str = "") -> tuple[int, Any]:
    """``also``: a further listed rule (a departure the oracle does not compute) and its reason."""
    extra = []
    if listed:
        exp = tmp_path / f"expectations-{len(list(tmp_path.iterdir()))}.yaml"
        exp.write_text(f"implementation: departing oracle\nrules:\n  {departure}: {LISTED[departure]}\n{also}",
                       encoding="utf-8")
        extra = ["--expectations", str(exp)]
    code, report, _ = run_fake_module(tmp_path, "departing_oracle", {"DEPARTURES": departure, "DEPARTING_FAULT": fault},
                                      "--cases", str(cases), "--examples", "0", *extra)
    return code, report


@pytest.mark.rules("P119", "P19", "P69")
def test_a_consequence_of_a_listed_departure_is_derived(tmp_path):
    cases = _cases(tmp_path, RETRY)
    code, rep = _run(tmp_path, cases, listed=False)
    case = rep.cases[0]
    assert code == 1 and case.outcome.value == "fail", case
    assert "P119" in case.failing_rules and set(case.failing_rules) - {"P119"}, case.failing_rules  # a consequence
    code, rep = _run(tmp_path, cases, listed=True)
    case = rep.cases[0]
    assert code == 0 and case.outcome.value == "expected-fail", case
    extra = sorted(set(case.failing_rules) - {"P119"})
    assert case.expected_reason.startswith("sub-calls numbered per run of the body (")
    assert f"{', '.join(extra)} follow" in case.expected_reason and "departure P119" in case.expected_reason


@pytest.mark.rules("P119", "P56")
def test_an_unlisted_fault_beside_a_listed_departure_stays_unexpected(tmp_path):
    """The same release with a second fault the departure does not explain (the unknown-tool
    failure worded otherwise): the variant reference still differs from its answer."""
    doc = copy.deepcopy(RETRY)
    doc["id"] = "retry-parallel-and-unknown"
    doc["rules"] = ["P119", "P69", "P56"]
    doc["run"]["calls"].append({"callId": "c2", "name": "nothing", "agent": "a"})
    code, rep = _run(tmp_path, _cases(tmp_path, doc), listed=True, fault="unknown-tool-text")
    case = rep.cases[0]
    assert code == 1 and case.outcome.value == "fail" and case.expected_reason is None, case


@pytest.mark.rules("P119")
def test_a_departure_that_does_not_show_explains_nothing(tmp_path):
    """Without a retry the departure changes nothing: the case passes, listed or not, and a
    listed departure that no case shows is stale in a whole run only (expectations.stale)."""
    doc = copy.deepcopy(RETRY)
    doc["id"] = "no-retry"
    doc["listeners"] = []
    code, rep = _run(tmp_path, _cases(tmp_path, doc), listed=False)
    assert code == 0 and rep.cases[0].outcome.value == "pass", rep.cases[0]


# A post-execute listener writes the failure it is handed: under the reference's P11 departure
# the failure is a plain object, the deletion of isError applies, and the call ends as a
# "success" without a value (P87) that is no lossless result (P12).
LAUNDER = {
    "id": "launder-failure", "title": "a post-execute listener deletes the isError of the failure it is handed",
    "rules": ["P11", "P87", "P12"],
    "tools": [{"name": "t1", "body": [{"do": "throw", "value": {"$js": "error", "class": "Error", "message": "boom"}}]}],
    "listeners": [{"id": "launder", "event": "tools/post-execute", "script": [
        {"do": "mutate", "target": "result.isError", "op": "delete"}, {"do": "next"}, {"do": "return-next"}]}],
    "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t1"}]},
}

# A pre-execute listener replaces run_code's callId: under the reference's P24 departure the
# write applies, and the bridge numbers the sub-call from the written id (P119's law).
RENAME = {
    "id": "rename-run-code", "title": "a pre-execute listener writes run_code's record.callId",
    "rules": ["P24", "P119"], "mode": "code", "agents": [{"id": "a"}],
    "tools": [{"name": "t", "body": [{"do": "return", "value": 1}]}],
    "programs": [{"id": "p", "steps": [{"do": "call", "tool": "t"}, {"do": "return", "value": "done"}]}],
    "listeners": [{"id": "pre", "event": "tools/pre-execute", "script": [
        {"do": "mutate", "target": "record.callId", "value": "renamed"}, {"do": "next"}, {"do": "return-next"}]}],
    "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "run_code", "agent": "a",
                                         "arguments": {"code": "p", "description": "run the program"}}]},
}

# A pre-execute listener replaces the record's arguments: the body is handed the written
# object, not the record's frozen snapshot (P25).
REPLACE_ARGS = {
    "id": "replace-arguments", "title": "a pre-execute listener writes record.arguments",
    "rules": ["P24", "P25"],
    "tools": [{"name": "t1", "body": [{"do": "observe", "what": "args"}, {"do": "return", "value": 1}]}],
    "listeners": [{"id": "pre", "event": "tools/pre-execute", "script": [
        {"do": "mutate", "target": "record.arguments", "value": {"x": 1}}, {"do": "next"}, {"do": "return-next"}]}],
    "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t1", "arguments": {"y": 1}}]},
}


@pytest.mark.rules("P11", "P12", "P87", "P24", "P25", "P119")
@pytest.mark.parametrize("departure, doc", [("P11", LAUNDER), ("P24", RENAME), ("P24", REPLACE_ARGS)],
                         ids=["P11-launder", "P24-rename-run-code", "P24-replace-arguments"])
def test_consequences_of_a_listed_write_departure_are_derived(tmp_path, departure, doc):
    """A release whose results (P11) or records (P24) stay writable, and whose participants'
    writes then apply: the failure's other rules are consequences of the listed departure."""
    code, rep = _run(tmp_path, _cases(tmp_path, doc), listed=False, departure=departure)
    case = rep.cases[0]
    assert code == 1 and case.outcome.value == "fail", case
    assert departure in case.failing_rules and set(case.failing_rules) - {departure}, case.failing_rules
    code, rep = _run(tmp_path, tmp_path / "cases", listed=True, departure=departure)
    case = rep.cases[0]
    assert code == 0 and case.outcome.value == "expected-fail", case
    extra = sorted(set(case.failing_rules) - {departure})
    assert case.expected_reason.startswith(LISTED[departure] + " (")
    assert f"{', '.join(extra)} follow" in case.expected_reason and f"departure {departure}," in case.expected_reason


@pytest.mark.rules("P11", "P24", "P56")
@pytest.mark.parametrize("departure, doc", [("P11", LAUNDER), ("P24", RENAME), ("P24", REPLACE_ARGS)],
                         ids=["P11-launder", "P24-rename-run-code", "P24-replace-arguments"])
def test_an_unlisted_fault_beside_a_listed_write_departure_stays_unexpected(tmp_path, departure, doc):
    """The same release with a second fault that no departure explains (the unknown-tool
    failure worded otherwise), shown by a second call of the same case."""
    doc = copy.deepcopy(doc)
    doc["rules"] = [*doc["rules"], "P56"]
    doc["run"]["calls"].append({"callId": "c2", "name": "nothing", **({"agent": "a"} if "agents" in doc else {})})
    code, rep = _run(tmp_path, _cases(tmp_path, doc), listed=True, fault="unknown-tool-text", departure=departure)
    case = rep.cases[0]
    assert code == 1 and case.outcome.value == "fail" and case.expected_reason is None, case


@pytest.mark.rules("P24", "P25", "P56")
def test_a_listed_departure_the_oracle_does_not_compute_still_lets_a_consequence_be_derived(tmp_path):
    """The release also words the unknown-tool failure otherwise, and lists the rules that
    fault fails alone (a departure the oracle cannot compute): judged against the reference
    computed with P24, the answer agrees up to that listed departure in the second call, so
    P25 still follows from P24 (rc.8's sweeps: a P24 write in one call, its unvalidated
    post-execute decisions, P78, in another)."""
    alone = {"id": "unknown-alone", "title": "an unknown tool", "rules": ["P56"], "tools": [],
             "run": {"kind": "direct", "calls": [{"callId": "c2", "name": "nothing"}]}}
    apart = tmp_path / "alone"
    apart.mkdir()
    code, rep = _run(tmp_path, _cases(apart, alone), listed=False, fault="unknown-tool-text")
    fault_rules = rep.cases[0].failing_rules
    assert code == 1 and fault_rules and "P25" not in fault_rules, rep.cases[0]
    doc = copy.deepcopy(REPLACE_ARGS)
    doc["rules"] = [*doc["rules"], "P56"]
    doc["run"]["calls"].append({"callId": "c2", "name": "nothing"})
    also = "".join(f"  {r}: the unknown-tool failure worded otherwise\n" for r in fault_rules)
    code, rep = _run(tmp_path, _cases(tmp_path, doc), listed=True, fault="unknown-tool-text", departure="P24", also=also)
    case = rep.cases[0]
    assert code == 0 and case.outcome.value == "expected-fail", case
    assert "P25" in case.failing_rules, case.failing_rules
    assert "P25 follows from it" in case.expected_reason and case.expected_reason.endswith(f"up to {', '.join(fault_rules)})")
    assert "the unknown-tool failure worded otherwise" in case.expected_reason
    # Not listed, the same fault stays unexpected (test_an_unlisted_fault_beside_a_listed_write_departure_...)
    code, rep = _run(tmp_path, tmp_path / "cases", listed=True, fault="unknown-tool-text", departure="P24")
    assert code == 1 and rep.cases[0].outcome.value == "fail", rep.cases[0]


@pytest.mark.rules("P24", "P122", "P125")
def test_a_run_that_never_settles_under_a_listed_departure_is_an_expected_error(tmp_path):
    """A guard writes run_code's agent: under the reference's P24 departure the bridge meets a
    forged agent and the run never settles (case code-forged-agent-stalls-the-bridge, rc.8).
    Listed P24 derives the expected error; listed P11 alone (whose variant settles) does not."""
    from dsh_conformance.spec.corpus import CASES

    doc = json.loads((CASES / "code-forged-agent-stalls-the-bridge.json").read_text(encoding="utf-8"))
    plain = copy.deepcopy(RETRY)  # a case that passes: a run whose every case errors says the IUT is broken
    plain["id"], plain["listeners"] = "no-retry", []
    cases = _cases(tmp_path, doc, plain)
    code, rep = _run(tmp_path, cases, listed=False, departure="P24")
    case = next(c for c in rep.cases if c.id == doc["id"])
    assert code == 1 and case.outcome.value == "error" and "never settles" in case.message, case
    code, rep = _run(tmp_path, cases, listed=True, departure="P24")
    case = next(c for c in rep.cases if c.id == doc["id"])
    assert code == 0 and case.outcome.value == "expected-error", case
    assert case.expected_reason.startswith(LISTED["P24"] + " (the run never settles: the reference computed with "
                                           "the listed departure P24,"), case.expected_reason
    exp = tmp_path / "p11.yaml"
    exp.write_text(f"implementation: departing oracle\nrules:\n  P11: {LISTED['P11']}\n", encoding="utf-8")
    code, rep, _ = run_fake_module(tmp_path, "departing_oracle", {"DEPARTURES": "P24"}, "--cases", str(cases),
                                   "--examples", "0", "--expectations", str(exp))
    case = next(c for c in rep.cases if c.id == doc["id"])
    assert code == 1 and case.outcome.value == "error" and case.expected_reason is None, case


def test_what_follows_from_a_listed_routing_rule_is_expected_and_nothing_else(monkeypatch):
    """A malformed pre-execute decision taken as an allow (rc.8's P31) dispatches a call that
    P2's table sends to its failure: the judge blames P2 and the rule of the stage that ran
    (P54) beside the routing rule, as consequences (``Divergence.follows``). Listing P31
    explains them; a divergence whose own rules are not listed stays unexpected."""
    from dsh_conformance.judge.findings import Divergence
    from dsh_conformance.oracle import parse_scenario, run_scenario
    from dsh_conformance.running import explained as module
    from dsh_conformance.spec.corpus import CASES, load_case
    from dsh_conformance.running.expectations import Expectations

    scenario = parse_scenario(load_case(CASES / "pre-contract-break-after-caller-abort-is-final.json").document)
    trace = run_scenario(scenario)
    listed = Expectations(rules={"P31": "pre-execute decisions are not validated"})
    routed = Divergence("observations[c1][5]", {}, {}, ["P31", "P2", "P54"], follows=("P2", "P54"))
    monkeypatch.setattr(module, "first_divergence", lambda *a: routed)
    why = module.explained(listed, scenario, trace, {"core"}, ["P31", "P2", "P54"], [], lambda s, t: [])
    assert why is not None and "P2, P54 follow from the routing it breaks" in why
    own = Divergence("observations[c1][5]", {}, {}, ["P31", "P2", "P54"])  # P2 and P54 broken in their own right
    monkeypatch.setattr(module, "first_divergence", lambda *a: own)
    assert module.explained(listed, scenario, trace, {"core"}, ["P31", "P2", "P54"], [], lambda s, t: []) is None


def _record() -> Record:
    return Record(token="t0", callId="c1", rootCallId="c1", name="t1", agent="a", parent="p0",
                  arguments={"x": 1}, signal=Signal("call"))


# What rc.8's plain record does with each identity write (oracle.departures.write_identity):
# the field later stages read afterwards, or None where the oracle computes nothing.
WRITES = [
    ("name", "set", "other", "name", "other"),
    ("rootCallId", "set", "r9", "rootCallId", "r9"),
    ("token", "set", "t9", "token", "t9"),
    ("parent", "set", "p9", "parent", "p9"),
    ("callId", "set", "c9", "current_call_id", "c9"),
    ("arguments", "set", [1, 2], "arguments", [1, 2]),
    ("agent", "delete", None, "agent", None),
    ("parent", "delete", None, "parent", None),
    ("agent", "set", "forged", "agent", "forged"),
    ("name", "set", 7, None, None),  # a non-string name: dispatch by it is not computed
    ("rootCallId", "set", {"$js": "undefined"}, None, None),
    ("token", "delete", None, None, None),
    ("callId", "set", 1, None, None),
    ("arguments", "delete", None, None, None),
    ("agent", "set", "a", None, None),  # the id of a scenario agent: not that agent object
]


@pytest.mark.rules("P24")
@pytest.mark.parametrize("key, op, value, field, after", WRITES,
                         ids=[f"{k}-{op}-{json.dumps(v)}" for k, op, v, _f, _a in WRITES])
def test_each_identity_write_is_carried_out_as_the_reference_does_or_refused(key, op, value, field, after):
    """The P24 departure field by field: a string where a string was, any arguments, the
    removal of agent and parent, a forged agent key; anything else is NotComputable (it
    explains no failure), never silently carried out or dropped."""
    rec = _record()
    written = UNDEFINED if value == {"$js": "undefined"} else value
    if field is None:
        before = copy.deepcopy(rec.__dict__)
        with pytest.raises(NotComputable):
            write_identity(rec, key, op, written, frozenset({"a"}))
        assert {k: v for k, v in rec.__dict__.items() if k != "signal"} == {
            k: v for k, v in before.items() if k != "signal"}
        return
    write_identity(rec, key, op, written, frozenset({"a"}))
    assert getattr(rec, field) == after
