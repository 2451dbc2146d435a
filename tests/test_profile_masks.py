"""Verdicts per profile (spec section 2; issue 24): what only a reference rule fixes is not
compared in a core verdict, and a reference verdict blames the rule that fixes it.

Each port of ``tests/fakes/profile_fake.py`` is the oracle with one such change. Run for real
(a subprocess over the protocol), it passes ``--profiles core`` declaring ``core``, and fails
``--profiles core,reference`` declaring both, on the rule that fixes the difference: a run
compares every scored case under the profiles it checks. The in-process checks show that the
change is visible in the core cases used (the test can fail).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_conformance.spec import contract
from dsh_conformance.judge import masks
from dsh_conformance.cli import main
from dsh_conformance.judge.agreement import agree
from dsh_conformance.judge.compare import first_divergence
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.oracle.run import run_scenario
from dsh_conformance.kit.scenario import parse_scenario
from dsh_conformance.kit.trace import parse_trace
from dsh_conformance.reporting.report import read_report
from dsh_conformance.spec.situations import needed_profiles

sys.path.insert(0, str(Path(__file__).parent / "fakes"))
import profile_fake  # noqa: E402

FAKE = Path(__file__).parent / "fakes" / "profile_fake.py"

# An ask answered by a custom service that tries to write into the request (caught), then
# allows: which rules the case cites decides whether the write's outcome is compared.
def _request_write(case_id: str, rules: list[str]) -> dict[str, Any]:
    return {
        "id": case_id, "title": "the approval service writes into the request, then allows", "rules": rules,
        "agents": [{"id": "a1"}],
        "approval": {"service": "custom", "script": [
            {"do": "mutate", "target": "request.toolName", "op": "set", "value": "forged", "catch": True},
            {"do": "return", "value": "allowed-once"}]},
        "tools": [{"name": "echo", "body": [{"do": "return", "value": "ran"}]}],
        "listeners": [{"id": "ask", "event": "tools/pre-execute",
                       "script": [{"do": "return", "value": {"kind": "ask"}}]}],
        "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "echo", "agent": "a1"}]},
    }


# A body throws an Error whose message is a number (P9 keeps it; a port may render it).
def _number_message(case_id: str, rules: list[str]) -> dict[str, Any]:
    return {
        "id": case_id, "title": "a body throws an Error whose message is a number", "rules": rules,
        "tools": [{"name": "echo", "body": [
            {"do": "throw", "value": {"$js": "error", "class": "Error", "message": 5}}]}],
        "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "echo"}]},
    }


CRAFTED = {
    "request-write-core": _request_write("request-write-core", ["P36", "P40"]),
    "request-write-reference": _request_write("request-write-reference", ["P36", "P39", "P40"]),
    "number-message-core": _number_message("number-message-core", ["P8"]),
}

# mode: (core cases where the change shows, reference cases, rules one of which must be blamed)
ROWS: dict[str, tuple[list[str], list[str], set[str]]] = {
    "error-dash": (["approval-service-throws-is-final", "core-approval-outcomes-and-no-agent"], ["pre-deny-shape-exact-keys"],
                   {"P10", "P33"}),
    "empty-contexts": (["core-body-values-and-contract", "args-snapshot-frozen-and-shared-with-body"], ["materialize-key-presence"], {"P92"}),
    "no-info": (["core-body-values-and-contract", "approval-service-throws-is-final"], ["entry-args-getter-throws-canonical-failure"],
                {"P9", "P10"}),
    "request-frozen": (["request-write-core"], ["request-write-reference"], {"P39"}),
    "string-message": (["number-message-core"], ["thrown-error-shapes"], {"P9"}),
    "concludes-false": (["args-snapshot-frozen-and-shared-with-body", "stage-order-full-pipeline"], ["materialize-key-presence"], {"P92"}),
}


def _doc(case_id: str) -> dict[str, Any]:
    if case_id in CRAFTED:
        return CRAFTED[case_id]
    return json.loads((CASES / f"{case_id}.json").read_text(encoding="utf-8"))


def _traces(mode: str, case_id: str):
    doc = _doc(case_id)
    expected = run_scenario(parse_scenario(doc))
    wire = copy.deepcopy(run_scenario(parse_scenario(doc)).to_json(detached=True))
    return doc, expected, parse_trace(profile_fake.change(mode, json.loads(json.dumps(wire))))


@pytest.mark.rules("P9", "P10", "P33", "P39", "P47", "P92")
@pytest.mark.parametrize("mode", sorted(ROWS))
def test_a_change_only_reference_fixes_is_masked_under_core_and_blamed_under_reference(mode: str) -> None:
    core_cases, reference_cases, fixing = ROWS[mode]
    for case_id in core_cases:
        doc, expected, actual = _traces(mode, case_id)
        assert needed_profiles(doc) == {"core"}, case_id
        shown = first_divergence(expected, actual, {"core", "reference"})
        assert shown is not None, f"{mode}: the change does not show in {case_id}"
        assert set(shown.rules) & fixing, (case_id, shown.describe())
        core = first_divergence(expected, actual, {"core"})
        assert core is None, core.describe()
    for case_id in reference_cases:
        doc, expected, actual = _traces(mode, case_id)
        assert "reference" in needed_profiles(doc), case_id
        found = first_divergence(expected, actual, {"core", "reference"})
        assert found is not None and set(found.rules) & fixing, (case_id, found and found.describe())


def _run(tmp_path: Path, mode: str, declared: str, profiles: str, cases: list[str]):
    d = tmp_path / f"cases-{declared}"
    d.mkdir()
    for case_id in cases:
        (d / f"{case_id}.json").write_text(json.dumps(_doc(case_id)), encoding="utf-8")
    report = tmp_path / f"report-{declared}.jsonl"
    code = main(["run", "--impl", f"{sys.executable} {FAKE} {mode} {declared}", "--cases", str(d),
                 "--examples", "0", "--profiles", profiles, "--report", str(report), "--timeout", "20",
                 "--failures", str(tmp_path / "failures")])
    return code, read_report(report)


@pytest.mark.rules("P9", "P10", "P33", "P39", "P92")
@pytest.mark.parametrize("mode", sorted(ROWS))
def test_the_port_passes_core_and_fails_reference_on_the_fixing_rule(tmp_path: Path, mode: str, capsys) -> None:
    core_cases, reference_cases, fixing = ROWS[mode]
    cases = core_cases + reference_cases
    code, rep = _run(tmp_path, mode, "core", "core", cases)
    outcomes = {c.id: c.outcome.value for c in rep.cases}
    assert code == 0, (outcomes, capsys.readouterr().out[-2000:])
    assert all(outcomes[c] == "pass" for c in core_cases), outcomes
    assert all(outcomes[c] == "not-scored" for c in reference_cases), outcomes
    # Checked, reference is compared in every scored case, the core ones too (section 2).
    code, rep = _run(tmp_path, mode, "core,reference", "core,reference", cases)
    by_id = {c.id: c for c in rep.cases}
    assert code == 1
    for c in cases:
        assert by_id[c].outcome.value == "fail" and set(by_id[c].failing_rules) & fixing, by_id[c]


def test_every_part_of_the_catalog_is_fixed_by_rules_of_one_profile_set_and_core_masks_them_all() -> None:
    """Each part names rules the rule index knows; none is core's, so core masks every one and
    reference none (the parts say what only reference fixes)."""
    from dsh_conformance.spec.rules import rules

    known = rules()
    for part in contract.PARTS:
        assert part.rules and all(r in known for r in part.rules), part
        assert all(known[r].profile == "reference" for r in part.rules), part
    assert masks.masks_for({"core"}).hidden == {p.name for p in contract.PARTS}
    assert masks.masks_for({"core", "reference"}).hidden == frozenset()
    assert masks.masks_for({"loop"}).hidden == masks.masks_for({"core"}).hidden


@pytest.mark.rules("P4", "P8", "P92")
def test_core_keeps_what_core_rules_fix() -> None:
    """The masks hide only their parts: a failure still needs a message (P4, P8), a context
    list that is not empty still counts, and a success is no failure."""
    failure = {"isError": True, "error": {"message": "no", "info": {"name": "E", "code": "X"}},
               "content": [{"type": "text", "text": "Error: no"}]}
    assert agree(failure, {**failure, "error": {"message": 5}, "content": [{"type": "text", "text": "no!"}]}, False)
    assert not agree(failure, {**failure, "error": {}}, False)  # no message at all
    assert not agree(failure, {**failure, "content": []}, False)
    ok = {"isError": False, "value": 1, "content": []}
    assert agree(ok, {**ok, "additionalContexts": []}, False)
    assert not agree(ok, {**ok, "additionalContexts": [{"role": "user", "content": "x"}]}, False)
    assert not agree(ok, {**ok, "isError": True}, False)
    assert not agree(ok, {**ok, "additionalContexts": []}, True)


@pytest.mark.rules("P39", "P11")
def test_a_refused_write_into_the_approval_request_is_blamed_on_p39_never_on_p11() -> None:
    _doc_, expected, actual = _traces("request-frozen", "request-write-reference")
    found = first_divergence(expected, actual, {"core", "reference"})
    assert found is not None and found.rules == ["P39"], found and found.describe()
    assert first_divergence(expected, actual, {"core"}) is None


@pytest.mark.rules("P23", "P52", "P60")
def test_a_records_root_id_and_signal_are_compared_only_under_reference() -> None:
    """The record view's ``rootCallId`` (P23) and signal (P52, P60) are the reference's: a port
    that takes the root id otherwise, or holds another signal, passes core and is blamed there."""
    doc = _doc("record-same-object-across-stages")
    expected = run_scenario(parse_scenario(doc))
    for key, value, rules in (("rootCallId", "elsewhere", ["P23"]), ("signal", {"is": "fused", "aborted": False},
                                                                      ["P52", "P60"])):
        wire = json.loads(json.dumps(run_scenario(parse_scenario(doc)).to_json(detached=True)))
        views = [o["value"] for o in wire["observations"] if o["what"] == "observe" and key in (o["value"] or {})]
        assert views, key
        for v in views:
            v[key] = value
        actual = parse_trace(wire)
        assert first_divergence(expected, actual, {"core"}) is None, key
        found = first_divergence(expected, actual, {"core", "reference"})
        assert found is not None and found.rules == rules, found and found.describe()


def test_a_kept_signal_is_compared_only_under_reference() -> None:
    """What a kept signal is after the body (``observe kept``) is P60's, a reference rule: a
    port whose fused signal still follows its sources after the body passes core and is
    blamed on P60 under reference."""
    doc = _doc("execute-fused-signal-detached-after-the-body")
    expected = run_scenario(parse_scenario(doc))
    wire = json.loads(json.dumps(run_scenario(parse_scenario(doc)).to_json(detached=True)))
    views = [o["value"] for o in wire["observations"] if o["what"] == "observe" and "kept" in (o["value"] or {})]
    assert len(views) == 3
    for v in views:
        v["signal"] = {**v["signal"], "aborted": True, "reason": "late"}
    actual = parse_trace(wire)
    assert first_divergence(expected, actual, {"core"}) is None
    found = first_divergence(expected, actual, {"core", "reference"})
    assert found is not None and "P60" in found.rules, found and found.describe()
