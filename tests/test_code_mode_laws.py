"""The Code Mode laws (conformance.laws.code_mode) catch real wrong implementations: each
fake of tests/fakes/code_mode_fake.py breaks one law on a corpus case that exercises it,
and the suite fails that case with the law's rule among its broken invariants."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dsh_conformance.cli import main
from dsh_conformance.report import read_report

from .conftest import corpus_subset

FAKE = Path(__file__).parent / "fakes" / "code_mode_fake.py"

# mode, the case that shows it, the law's rule
BREAKS = [
    ("rejected-calls-take-numbers", "code-binding-arguments-not-lossless", "P119"),
    ("nested-calls-compute-meta", "code-sub-calls-go-through-the-pipeline", "P120"),
    ("start-logged-late", "code-dispatch-logged-with-an-agent", "P122"),
    ("sub-calls-root-themselves", "code-sub-call-identity", "P119"),
    ("commits-as-they-land", "code-sub-calls-overlap-up-to-the-limit", "P121"),
    ("exclusive-runs-in-parallel", "code-exclusive-sub-call-runs-alone", "P121"),
    ("no-overlap-cap", "code-sub-calls-overlap-up-to-the-limit", "P121"),
    ("bindings-get-content", "code-sub-call-identity", "P124"),
    ("returns-before-commits", "code-run-waits-for-every-log", "P125"),
    ("contexts-stay-on-sub-calls", "code-sub-call-contexts-ride-on-run-code", "P126"),
    ("conclusion-not-forwarded", "code-sub-call-concludes-the-turn", "P127"),
    ("compact-rendering", "code-run-value-and-its-text", "P128"),
]


@pytest.mark.parametrize("mode,case,rule", BREAKS, ids=[b[0] for b in BREAKS])
def test_a_code_mode_law_catches_the_fake(tmp_path, mode, case, rule):
    cases = corpus_subset(tmp_path, [case])
    report = tmp_path / "report.jsonl"
    code = main(["run", "--impl", f"{sys.executable} {FAKE} {mode}", "--cases", str(cases), "--examples", "0",
                 "--report", str(report), "--timeout", "30", "--failures", str(tmp_path / "failures")])
    assert code == 1
    rec = next(c for c in read_report(report).cases if c.id == case)
    assert rec.outcome.value == "fail"
    broken = {v["rule"] for v in rec.violations}
    assert rule in broken, (rec.violations, rec.divergence)


@pytest.mark.parametrize("case", sorted({b[1] for b in BREAKS}))
def test_the_oracle_breaks_no_code_mode_law_there(case):
    from dsh_conformance.corpus import CASES, load_case
    from dsh_conformance.laws import check
    from dsh_conformance.oracle import run_scenario

    c = load_case(CASES / f"{case}.json")
    assert check(c.scenario, run_scenario(c.scenario)) == []
