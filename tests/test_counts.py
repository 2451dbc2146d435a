"""One definition of each count, shown the same everywhere (issue 26, item 6): per rule the
cases citing it and the cases blamed on it, in the console, the Markdown, HTML and JSON
reports; a run's case total says how the generated draws are folded; a folded case whose
every draw errored does not read pass."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from dsh_conformance.reporting.report import CaseRecord, Outcome, read_report
from dsh_conformance.reporting.scores import case_totals, rule_counts

from .conftest import FAKE, corpus_subset

pytestmark = pytest.mark.rules("P3", "P11", "P46")

CASES = ["guard-denies-with-number", "pre-deny-skips-body", "guard-falsy-returns-deny",
         "execute-retry-accumulates-contexts"]


def _rec(case_id: str, outcome: Outcome, rules: list[str], failing: list[str] | None = None, **kw) -> CaseRecord:
    return CaseRecord(id=case_id, source=kw.pop("source", "corpus"), rules=rules, outcome=outcome,
                      failing_rules=failing or [], **kw)


def test_citing_and_blamed_are_counted_apart():
    cases = [_rec("a", Outcome.PASS, ["P11"]), _rec("b", Outcome.FAIL, ["P12"], ["P11"]),
             _rec("c", Outcome.XFAIL, ["P11", "P12"], ["P11"]), _rec("d", Outcome.ERROR, ["P13"])]
    counts = rule_counts(cases)
    assert (counts["P11"].citing, counts["P11"].blamed) == (2, 2)
    assert counts["P11"].outcomes == {"pass": 1, "expected-fail": 1}
    assert (counts["P12"].citing, counts["P12"].blamed) == (2, 0)  # c is put down to P11 only
    assert (counts["P13"].citing, counts["P13"].blamed) == (1, 1)  # an error is blamed on what it cites
    assert counts["P11"].words() == "2 citing, 2 blamed" and counts["P12"].words() == "2 citing"


def test_totals_say_how_generated_draws_are_folded():
    cases = [_rec(f"c{n}", Outcome.PASS, ["P1"]) for n in range(271)]
    cases.append(_rec("generated-seed-0", Outcome.PASS, ["P1"], source="property", draws=100))
    assert str(case_totals(cases)) == "272 cases (271 corpus cases + 1 case for 100 generated draws)"
    assert str(case_totals(cases[:9])) == "9 cases"
    old = [*cases[:3], cases[-1].model_copy(update={"draws": None})]  # a report from before draws were recorded
    assert str(case_totals(old, examples=50)) == "4 cases (3 corpus cases + 1 case for 50 generated draws)"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("counts")
    cases = corpus_subset(tmp, CASES)
    report = tmp / "r.jsonl"
    p = subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "run", "--cases", str(cases), "--examples", "2",
                        "--impl", f"{sys.executable} {FAKE} thawed-observations", "--report", str(report), "-q"],
                       capture_output=True, text=True, cwd=tmp)
    assert p.returncode == 1, p.stderr
    return tmp, report, p.stdout


def test_every_view_shows_the_same_counts(run, tmp_path):
    tmp, report, console = run
    counts = rule_counts(read_report(report).cases)
    p11 = counts["P11"]
    assert p11.blamed  # a rule with cases blamed on it
    row = next(line for line in console.splitlines() if re.match(r"^core +P11 ", line))
    assert re.search(rf" {p11.citing} +{p11.blamed}  \S", row), row
    assert "citing: cases that cite the rule; blamed: cases that did not pass, put down to the rule" in console
    for fmt in ("md", "html", "json"):
        out = tmp_path / f"r.{fmt}"
        done = subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "report", str(report), "--format", fmt,
                               "-o", str(out)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        text = out.read_text()
        if fmt == "json":
            cell = next(r for r in json.loads(text)["rules"] if r["rule"] == "P11")["cells"][0]
            assert cell["counts"]["citing"] == p11.citing and cell["counts"]["blamed"] == p11.blamed
            assert len(cell["cases"]) == p11.blamed
        else:
            assert p11.words() in text, fmt
        assert "4 corpus cases + 1 case for 2 generated draws" in text or fmt == "json"
    assert "5 cases (4 corpus cases + 1 case for 2 generated draws): " in console


def test_a_folded_case_whose_every_draw_errored_is_not_a_pass(tmp_path):
    report = tmp_path / "r.jsonl"
    p = subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "run", "--no-corpus", "--examples", "3",
                        "--impl", f"{sys.executable} {FAKE} errored-all", "--report", str(report), "-q",
                        "--failures", str(tmp_path / "f")], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 3, p.stdout + p.stderr
    folded = [c for c in read_report(report).cases if c.id == "generated-seed-0"]
    assert len(folded) == 1 and folded[0].outcome != Outcome.PASS
    assert folded[0].message.startswith("none of the 3 generated scenarios passed (")
    assert folded[0].draws == 3
