"""Cases are scored by the profiles they need, and the core set is worth the name (spec section 2)."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest

from dsh_conformance.cli import main
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.reporting.report import read_report
from dsh_conformance.spec.rules import rules, rules_of
from dsh_conformance.spec.situations import needed_profiles, situations, uncited

from .hang_guards import hang_guard

MIN_CORE_CASES = 3  # corpus cases a core-only implementation is scored on, per core rule
README = Path(__file__).resolve().parent.parent / "docs" / "reference" / "testing-an-implementation.md"


def _corpus() -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(CASES.glob("*.json"))]


def core_only() -> list[dict]:
    """The corpus cases a core-only implementation is scored on."""
    return [d for d in _corpus() if needed_profiles(d) == {"core"}]


def test_every_case_cites_what_its_situation_needs():
    # A case that sets a situation up through a rule of another profile (an aborted caller,
    # the timeout policy, a deferred context, a scoped guard, ...) cites a rule of it.
    bad = {d["id"]: [s.name for s in uncited(d)] for d in _corpus() if uncited(d)}
    assert not bad


@pytest.mark.rules(*(r.id for r in rules_of("core")))
def test_every_core_rule_is_decided_by_three_core_only_cases():
    counts = collections.Counter(r for d in core_only() for r in d["rules"])
    short = {r.id: counts[r.id] for r in rules_of("core") if counts[r.id] < MIN_CORE_CASES}
    assert not short, f"core rules decided by fewer than {MIN_CORE_CASES} core-only corpus cases: {short}"


def test_readme_states_the_number_of_core_only_cases():
    n = len(core_only())
    assert re.search(rf"\b{n} of the corpus' \d+ cases\b", README.read_text(encoding="utf-8")), n
    assert f"{len(_corpus())} cases" in README.read_text(encoding="utf-8").split("of the corpus' ")[1][:20]


def test_situations_read_a_case_as_written():
    doc = json.loads((CASES / "entry-caller-aborted-abort-before-dispatch.json").read_text(encoding="utf-8"))
    assert "caller-abort" in {s.name for s in situations(doc)}
    stripped = {**doc, "rules": [r for r in doc["rules"] if rules()[r].profile == "core"] or ["P1"]}
    assert needed_profiles(stripped) == {"core", "reference"}
    timed = {"rules": ["P1"], "timeoutPolicy": True, "tools": [{"name": "t", "timeoutMs": 5}],
             "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]}}
    assert needed_profiles(timed) == {"core", "reference"}
    guard = {"rules": ["P44"], "guards": [{"id": "G1", "script": [{"do": "unregister", "ref": "G1"}]}],
             "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]}}
    assert [s.name for s in situations(guard)] == ["guard-table-change"]
    again = {"rules": ["P58"], "tools": [{"name": "t", "body": [{"do": "register", "ref": "t"}]}],
             "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]}}
    assert [s.name for s in situations(again)] == ["tool-reregistration"]
    swapped = {"rules": ["P26"], "tools": [{"id": "a", "name": "t", "body": [{"do": "unregister", "ref": "a"},
                                                                             {"do": "register", "ref": "b"}]},
                                           {"id": "b", "name": "t", "registered": False}],
               "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]}}
    assert situations(swapped) == []


@pytest.mark.rules("P29", "P93")
def test_a_core_citing_case_that_aborts_its_caller_is_not_scored_for_core(tmp_path):
    # The case cites only core rules, but its situation (an aborted caller) is reference's
    # P29: a core-only run does not score it, a core+reference run does.
    doc = json.loads((CASES / "finalize-content-only.json").read_text(encoding="utf-8"))
    doc = {**doc, "id": "aborted-but-core", "rules": ["P93"],
           "run": {"kind": "direct", "calls": [{"callId": "c1", "name": doc["run"]["calls"][0]["name"],
                                                "aborted": True}]}}
    doc.pop("expect", None)
    case = tmp_path / "aborted-but-core.json"
    case.write_text(json.dumps(doc), encoding="utf-8")
    outcomes = {}
    for profiles in ("core", "core,reference"):
        report = tmp_path / f"{profiles}.jsonl"
        main(["run", "--cases", str(case), "--examples", "0", "--profiles", profiles, "--report", str(report)])
        outcomes[profiles] = {c.id: c.outcome.value for c in read_report(report).cases}
    assert outcomes["core"] == {"aborted-but-core": "not-scored"}
    assert outcomes["core,reference"] == {"aborted-but-core": "pass"}


@pytest.mark.rules("P1")
def test_reference_only_faults_leave_core_only_cases_passing(tmp_path):
    # The systematic search for cases that need a reference behaviour to set up their
    # situation: the oracle with each fault of the catalogue that breaks a reference rule,
    # run on the core-only corpus cases under core. A case that fails there needs that
    # rule's profile (cite it) or a rewrite; what only reference fixes is not compared under
    # core (the comparison's masks), so nothing else may show. A fault with which the copy cannot run a case
    # (it answers errored: a throw outside the pipeline, which breaks core's P90 as well)
    # proves nothing here.
    from dsh_conformance.iut.in_process import InProcessIUT
    from dsh_conformance.measuring.mutants import faults
    from dsh_conformance.measuring.mutate import load
    from dsh_conformance.running.runner import Runner
    from dsh_conformance.running.references import corpus_items

    index = rules()
    items = [(i, d, p) for i, d, p in corpus_items(CASES) if needed_profiles(d) == {"core"}]
    reference_faults = [m for m in faults() if all(index[r].profile == "reference" for r in m.rules)]
    assert len(reference_faults) >= 10 and len(items) >= 50
    setup = []
    for fault in reference_faults:
        serve = load(fault, tmp_path)
        iut = InProcessIUT(serve.started, serve.answer, timeout=hang_guard(10))
        iut.start()
        runner = Runner(iut, {"core"}, give_up_after=0)
        for case_id, doc, path in items:
            rec = runner.decide(case_id, doc, "corpus", path)
            message = rec.message or ""
            if rec.outcome.value in ("pass", "error"):
                continue
            setup.append((case_id, fault.id, message.splitlines()[0][:160]))
        iut.close(graceful=False)
    assert not setup
