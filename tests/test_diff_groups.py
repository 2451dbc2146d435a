"""``diff`` for a maintainer (conformance.diff_groups): regressions grouped by first
divergence with one replay command each, side effects apart, the newly failing rule of an
expected-fail -> fail case, the generated half as one case across runs, the stage-order rule
first, the packages that differ, and counterexamples that never overwrite each other."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_conformance.reporting.diff_groups import blame_order, place
from dsh_conformance.reporting.report import CaseRecord, Footer, Outcome, ReportWriter, new_header, read_report
from dsh_conformance.reporting.run_diff import diff_reports, render_json, render_text

from .conftest import FAKE

pytestmark = pytest.mark.rules("P1")


def write(path: Path, cases: list[dict[str, Any]], packages: dict[str, Any] | None = None) -> Path:
    w = ReportWriter(path)
    impl = {"name": "impl", "version": "1", "language": "python",
            **({"build": {"packages": packages}} if packages else {})}
    header = new_header(impl, ["core", "reference"], 0, 10)
    header.options = {"impl": "dsh:/src/dsh", "expectations": "dsh-tools-0.1.0-rc.8"}
    header.corpus = "built-in"  # corpus cases replay by id
    w.write(header)
    for c in cases:
        w.write(CaseRecord(**{"source": "corpus", **c}))
    w.write(Footer(counts={}, rules={}, exit=0, finished="now"))
    w.flush()
    return path


def ok(cid: str, rules: list[str], **more: Any) -> dict[str, Any]:
    return {"id": cid, "outcome": Outcome.PASS, "rules": rules, "trace_digest": "sha256:aa", **more}


def failing(cid: str, where: str, rules: list[str], expected: Any, actual: Any, cited: list[str] | None = None,
            outcome: str = "fail", failing_rules: list[str] | None = None, **more: Any) -> dict[str, Any]:
    return {"id": cid, "outcome": Outcome(outcome), "rules": cited or rules, "trace_digest": "sha256:bb",
            "divergence": {"where": where, "rules": rules, "expected": expected, "actual": actual},
            "failing_rules": failing_rules or rules, "message": f"first divergence at {where}", **more}


def test_one_group_per_root_cause_with_its_replay_and_side_effects_apart(tmp_path):
    old = write(tmp_path / "old.jsonl", [
        ok("freeze-a", ["P11", "P30"]), ok("freeze-b", ["P11"]), ok("freeze-c", ["P11"]),
        ok("order-a", ["P5", "P1"]), ok("still", ["P40"])])
    frozen = {"frozen": True, "n": 1}
    new = write(tmp_path / "new.jsonl", [
        failing("freeze-a", "observations[c1][9]", ["P11"], frozen, {**frozen, "frozen": False}, ["P11", "P30"]),
        failing("freeze-b", "observations[c2][4]", ["P11"], frozen, {**frozen, "frozen": False}),
        failing("freeze-c", "observations[b1][12]", ["P11"], frozen, {**frozen, "frozen": False}),
        failing("order-a", "observations[c1][2]", ["P5", "P1"], {"stage": "pre"}, {"stage": "guard"}),
        ok("still", ["P40"])])
    d = diff_reports(read_report(old), read_report(new))
    assert [(len(g.cases), g.where, g.rules) for g in d.groups] == [
        (3, "observations[*][*].frozen", ["P11"]), (1, "observations[*][*].stage", ["P1", "P5"])]
    # P30 is cited only by freeze-a, which now fails first at P11: a side effect, not a regression
    assert [(c.what, c.new) for c in d.side_effects] == [("P30", "inconclusive")]
    text = render_text(d)
    assert text.count("replay: dsh-conformance replay ") == 2
    assert "replay: dsh-conformance replay freeze-a --impl dsh:/src/dsh --expectations dsh-tools-0.1.0-rc.8" in text
    assert "[1] 3 cases (pass -> fail), rules P11: at observations[*][*].frozen" in text
    assert "Rules that regressed: P1 (pass -> fail), P5 (pass -> fail), P11 (pass -> fail)" in text
    assert "P30 -> inconclusive" in text.split("Side effects")[1] and "P30" not in text.split("Side effects")[0]
    assert "7 regressions (4 cases in 2 groups, 3 rules; 1 side effects apart), 0 improvements" in text
    assert "Cases whose outcome changed:" not in text and "Cases whose outcome changed:" in render_text(d, full=True)
    doc = json.loads(render_json(d))
    assert [g["cases"] for g in doc["groups"]] == [["freeze-a", "freeze-b", "freeze-c"], ["order-a"]]
    assert doc["sideEffects"][0]["id"] == "P30"


def test_the_stage_order_rule_leads_a_blame_list_when_the_stages_differ(tmp_path):
    assert blame_order(["P3", "P46", "P5", "P9", "P1", "P2", "P7"]) == ["P1", "P3", "P46", "P5", "P9", "P2", "P7"]
    assert blame_order(["P3", "P1"], stage_differs=False) == ["P3", "P1"] and blame_order(["P3", "P46"]) == ["P3", "P46"]
    blame = ["P3", "P46", "P5", "P9", "P1", "P2", "P7"]
    old = write(tmp_path / "old.jsonl", [ok("order", blame), ok("value", blame)])
    new = write(tmp_path / "new.jsonl", [  # guards run before pre-execute / a value inside one item
        failing("order", "observations[c1][2]", blame, {"stage": "pre", "who": "p"}, {"stage": "guard", "who": "g"}),
        failing("value", "observations[c1][2]", blame, {"stage": "pre", "value": 1}, {"stage": "pre", "value": 2})])
    d = diff_reports(read_report(old), read_report(new))
    assert {g.where: g.rules[:2] for g in d.groups} == {"observations[*][*].stage": ["P1", "P3"],
                                                       "observations[*][*].value": ["P3", "P46"]}
    text = render_text(d, full=True)
    assert "order at observations[c1][2].stage (rules P1, P3, P46, P5, P9, P2, P7)" in text
    assert "value at observations[c1][2].value (rules P3, P46, P5, P9, P1, P2, P7)" in text
    assert place("observations[c1][9].value.items[3]") == "observations[*][*].value.items[*]"


def test_an_expected_failure_that_now_fails_names_the_rule_it_fails_at(tmp_path):
    old = write(tmp_path / "old.jsonl", [failing("k", "observations[c1][2]", ["P24"], 1, 2, outcome="expected-fail",
                                                 expected_reason="known")])
    new = write(tmp_path / "new.jsonl", [failing("k", "observations[c1][2]", ["P24"], 1, 3, failing_rules=["P24", "P99"])])
    d = diff_reports(read_report(old), read_report(new))
    (change,) = d.cases
    assert (change.old, change.new) == ("expected-fail", "fail") and change.detail.startswith("now fails P99: ")
    assert "k now fails P99: at observations[c1][2]" in render_text(d)


def test_packages_that_differ_are_shown(tmp_path):
    rc8 = {"@deepseek-ai/cordis": {"version": "4.0.4", "digest": "sha256:c1"},
           "@deepseek-ai/dsh-tools": {"version": "0.1.0-rc.8", "digest": "sha256:t1"},
           "@deepseek-ai/dsh-llm": {"version": "0.1.0-rc.8", "digest": "sha256:l1"},
           "@deepseek-ai/dsh-agent": {"version": "0.1.0-rc.8", "digest": "sha256:a1"}}
    tree = {"@deepseek-ai/cordis": {"version": "4.0.1", "digest": "sha256:c2"},
            "@deepseek-ai/dsh-tools": {"version": "0.1.0-rc.8", "digest": "sha256:t2"},
            "@deepseek-ai/dsh-llm": {"version": "0.1.0-rc.8", "digest": "sha256:l1"},
            "@deepseek-ai/dsh-agent": {"version": "0.1.1-rc.2", "digest": "sha256:a1"}}
    d = diff_reports(read_report(write(tmp_path / "a.jsonl", [ok("a", ["P1"])], rc8)),
                     read_report(write(tmp_path / "b.jsonl", [ok("a", ["P1"])], tree)))
    assert d.packages == ["4.0.4 -> 4.0.1: cordis", "0.1.0-rc.8 -> 0.1.1-rc.2: dsh-agent (the same built code)",
                          "dsh-tools 0.1.0-rc.8: built code sha256:t1 -> sha256:t2"]
    assert "  4.0.4 -> 4.0.1: cordis\n" in render_text(d).split("Packages that differ:\n")[1]


# ------------------------------------------------------------------ real runs of the generated half

def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dsh_conformance.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def test_the_generated_half_is_one_case_and_counterexamples_never_overwrite(tmp_path):
    """The oracle passes the property run (generated-seed-0), a wrong implementation fails it
    with a shrunk counterexample (prop-...): one case going pass -> fail. Two runs that shrink
    to the same scenario under other seeds keep both files."""
    failures = tmp_path / "failures"
    common = ["--no-corpus", "--examples", "5", "--failures", failures, "--quiet"]
    good = cli("run", *common, "--seed", "0", "--report", tmp_path / "good.jsonl", cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    wrong = f"{sys.executable} {FAKE} mutable-result"  # fails every scenario: a short shrink
    for seed in (0, 1):
        bad = cli("run", "--impl", wrong, *common, "--seed", str(seed), "--report", tmp_path / f"bad{seed}.jsonl",
                  cwd=tmp_path)
        assert bad.returncode == 1, bad.stderr
    saved = sorted(failures.glob("prop-*.json"))
    assert len(saved) == 2, saved  # each run's counterexample under a name of its own
    assert {json.loads(p.read_text())["seed"] for p in saved} == {0, 1}
    files = {read_report(str(tmp_path / f"bad{s}.jsonl")).cases[-1].case_file for s in (0, 1)}
    assert len(files) == 2
    diff = cli("diff", tmp_path / "good.jsonl", tmp_path / "bad0.jsonl", cwd=tmp_path)
    assert diff.returncode == 1
    assert "generated (seed 0): pass -> fail" in cli("diff", tmp_path / "good.jsonl", tmp_path / "bad0.jsonl",
                                                     "--full", cwd=tmp_path).stdout
    assert "only in" not in diff.stdout.lower() and "counterexample prop-" in diff.stdout
    doc = json.loads(cli("diff", tmp_path / "good.jsonl", tmp_path / "bad0.jsonl", "--format", "json",
                         cwd=tmp_path).stdout)
    assert doc["onlyOld"] == [] and doc["onlyNew"] == []
    assert [c["id"] for c in doc["cases"]] == ["generated (seed 0)"]
    assert doc["groups"][0]["replay"].startswith("dsh-conformance replay ")
