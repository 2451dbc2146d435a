"""Choosing what a run runs (issue 26, item 4): ``-k``, ``--case``, ``--rule``, ``--cases FILE``,
``--max-fail``/``--fail-fast``; bad selections are one line and exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from dsh_conformance.cli import main
from dsh_conformance.spec.corpus import CASES, load_corpus
from dsh_conformance.reporting.report import Outcome, read_report
from dsh_conformance.running.selection import SelectionError, keyword

from .conftest import FAKE

pytestmark = pytest.mark.rules("P3", "P11")


def _ids(report) -> list[str]:
    return [c.id for c in read_report(report).cases]


def test_keyword_expressions():
    m = keyword("guard and not (deny or P11)")
    assert m("guard-allows", ["P46"])
    assert not m("guard-deny-once", ["P46"])
    assert not m("guard-allows", ["P11"])
    assert keyword("p11")("anything", ["P11"]) and not keyword("P1")("anything", ["P11"])
    for bad in ["", "a and", "(a", "a )", "or a", "a b"]:
        with pytest.raises(SelectionError):
            keyword(bad)


def test_rule_case_and_k_choose_the_corpus_cases(tmp_path):
    report = tmp_path / "r.jsonl"
    citing = sorted(c.id for c in load_corpus() if "P11" in c.scenario.rules)
    assert main(["run", "--rule", "P11", "--report", str(report), "-q"]) == 0
    assert sorted(_ids(report)) == citing  # no generated scenarios unless --examples asks
    assert main(["run", "--case", "guard-denies-with-number", "--case", "pre-deny-skips-body", "--report",
                 str(report), "-q"]) == 0
    assert sorted(_ids(report)) == ["guard-denies-with-number", "pre-deny-skips-body"]
    assert main(["run", "-k", "guard and number", "--examples", "2", "--report", str(report), "-q"]) == 0
    ids = _ids(report)
    assert "guard-denies-with-number" in ids and ids[-1] == "generated-seed-0"
    assert all("guard" in i and "number" in i for i in ids[:-1])


def test_case_files_outside_the_corpus(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    doc = json.loads((CASES / "guard-denies-with-number.json").read_text())
    (outside / "outside-guard.json").write_text(json.dumps({**doc, "id": "outside-guard"}))
    report = tmp_path / "r.jsonl"
    assert main(["run", "--cases", str(outside / "outside-guard.json"), "--report", str(report), "-q",
                 "--examples", "0"]) == 0
    assert _ids(report) == ["outside-guard"]
    assert main(["run", "--case", str(outside / "outside-guard.json"), "--case", "pre-deny-skips-body",
                 "--report", str(report), "-q"]) == 0
    assert sorted(_ids(report)) == ["outside-guard", "pre-deny-skips-body"]
    shutil.copy(CASES / "guard-denies-with-number.json", outside)
    assert main(["run", "--case", str(outside / "guard-denies-with-number.json"), "-q"]) == 2  # the id twice


@pytest.mark.parametrize("argv, says", [
    (["--rule", "P999"], "--rule P999: no such rule in the spec (P1..P128) (nearest: P99"),
    (["--case", "guard-denies-with-numbr"], "(nearest: guard-denies-with-number)"),
    (["--case", "no/such/file.json"], "--case no/such/file.json: no such case file"),
    (["-k", "zzz-nothing"], "no case matches the selection -k 'zzz-nothing'"),
    (["-k", "guard and"], "-k 'guard and': the expression ends where a word was expected"),
    (["--rule", "P11", "-k", "zzz"], "no case matches the selection --rule P11 -k 'zzz'"),
    (["--no-corpus", "--rule", "P11"], "--no-corpus runs generated scenarios only"),
])
def test_bad_selections_are_one_line_exit_2(argv, says, tmp_path):
    p = subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "run", *argv, "--report", str(tmp_path / "r")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and says in p.stderr, p.stderr
    assert not (tmp_path / "r").exists()  # found before any work


@pytest.mark.parametrize("flag", [["--fail-fast"], ["--max-fail", "2"]])
def test_max_fail_stops_the_run_with_a_failures_exit(flag, tmp_path):
    report = tmp_path / "r.jsonl"
    impl = f"{sys.executable} {FAKE} guard-bypass"
    p = subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "run", "--impl", impl, "--report", str(report),
                        "-q", *flag], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr  # a failure's exit, not a broken implementation's
    n = 1 if flag == ["--fail-fast"] else 2
    rep = read_report(report)
    outcomes = [c.outcome for c in rep.cases]
    assert outcomes.count(Outcome.FAIL) == n
    assert outcomes[-1] == Outcome.NOT_RUN and rep.cases[-1].id == "generated-seed-0"
    assert f"(--max-fail {n})" in (rep.footer.stopped or "")
    assert f"STOPPED: the run stopped after {n} unexpected failure(s) (--max-fail {n})" in p.stdout
    first_not_run = outcomes.index(Outcome.NOT_RUN)
    assert all(o == Outcome.NOT_RUN for o in outcomes[first_not_run:])
    assert json.loads(report.read_text().splitlines()[-1])["exit"] == 1


def test_replay_of_an_unknown_case_names_the_corpus_and_the_nearest_ids(tmp_path):
    p = subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "replay", "guard-denies-with-numbr"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr == ("error: guard-denies-with-numbr: no such case file, nor a case of that id in the built-in "
                        "corpus (conformance/cases) (nearest: guard-denies-with-number)\n")
