"""``dsh-conformance diff``: what changed between two reports, on reports written as a run
writes them (ReportWriter), and read back as ``diff`` reads them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_conformance.reporting.report import CaseRecord, Footer, Outcome, ReportWriter, new_header, read_report
from dsh_conformance.reporting.run_diff import diff_reports, kind, render_json, render_markdown, render_text
from dsh_conformance.judge.value_diff import first_difference

pytestmark = pytest.mark.rules("P1")

IMPL = {"name": "impl", "version": "1", "language": "python"}


def write(path: Path, cases: list[dict[str, Any]], version: str = "1", footer: bool = True,
          stopped: str | None = None) -> Path:
    w = ReportWriter(path)
    w.write(new_header({**IMPL, "version": version}, ["core", "reference"], 0, 0))
    for c in cases:
        w.write(CaseRecord(source="corpus", **c))
    if footer:
        w.write(Footer(counts={}, rules={}, exit=3 if stopped else 0, finished="now", stopped=stopped))
    w.flush()
    return path


def case(cid: str, outcome: str, rules: list[str], digest: str | None = "sha256:aa", **more: Any) -> dict[str, Any]:
    return {"id": cid, "outcome": Outcome(outcome), "rules": rules, "trace_digest": digest, **more}


def divergence(where: str, expected: Any, actual: Any, rules: list[str]) -> dict[str, Any]:
    return {"divergence": {"where": where, "expected": expected, "actual": actual, "rules": rules},
            "failing_rules": rules, "message": f"first divergence at {where}"}


def test_outcomes_are_ranked_pass_unjudged_known_failing():
    assert kind("pass", "fail") == kind("pass", "skip") == kind("expected-fail", "error") == "regression"
    assert kind("fail", "expected-fail") == kind("skip", "pass") == kind("not-scored", "pass") == "improvement"
    assert kind("fail", "error") == kind("skip", "not-scored") == "change"


def test_a_diff_of_two_reports(tmp_path):
    old = write(tmp_path / "old.jsonl", [
        case("a", "pass", ["P1"]),
        case("b", "pass", ["P2"], digest="sha256:b1"),
        case("c", "fail", ["P3"], **divergence("results[c1]", {"x": 1, "y": [1, 2]}, {"x": 1, "y": [1, 3]}, ["P3"])),
        case("d", "expected-fail", ["P4"], **divergence("events[1]", 1, 2, ["P4"]), expected_reason="known"),
        case("gone", "fail", ["P5"], **divergence("results[c1]", 1, 2, ["P5"])),
    ])
    new = write(tmp_path / "new.jsonl", [
        case("a", "fail", ["P1"], **divergence("observations[c1][2]", "x", "y", ["P1"])),
        case("b", "pass", ["P2"], digest="sha256:b2"),
        case("c", "pass", ["P3"]),
        case("d", "expected-fail", ["P4"], **divergence("events[1]", 1, 3, ["P4"]), expected_reason="known"),
        case("fresh", "error", ["P6"], message="errored: boom"),
    ], version="2")
    d = diff_reports(read_report(old), read_report(new))
    assert [(c.what, c.old, c.new, c.kind) for c in d.cases] == [
        ("a", "pass", "fail", "regression"), ("fresh", "(not in OLD)", "error", "regression"),
        ("c", "fail", "pass", "improvement"), ("gone", "fail", "(not in NEW)", "improvement")]
    assert [(c.what, c.old, c.new) for c in d.rules][:2] == [("P1", "pass", "fail"), ("P6", "no case", "error")]
    assert d.rules[0].kind == "regression" and {c.kind for c in d.rules[2:]} == {"improvement"}
    assert [(c.what, c.old, c.new) for c in d.traces] == [("b", "sha256:b1", "sha256:b2")]
    assert [(x.case, x.where) for x in d.new_divergences] == [("a", "observations[c1][2]"), ("d", "events[1]")]
    assert [(x.case, x.where) for x in d.vanished_divergences] == [("c", "results[c1]"), ("d", "events[1]"),
                                                                  ("gone", "results[c1]")]
    assert d.only_old == ["gone"] and d.only_new == ["fresh"] and d.regressions == 4  # two cases, two rules
    text = render_text(d, full=True)
    assert text.index("regression  a: pass -> fail") < text.index("improvement c: fail -> pass")
    assert "c at results[c1].y[1] (rules P3): expected 2, actual 3" in text  # where inside the value they part
    assert "b (pass): sha256:b1 -> sha256:b2" in text
    assert "| regression | P1 |" in render_markdown(d)
    doc = json.loads(render_json(d))
    assert doc["counts"]["regressions"] == 4 and doc["onlyNew"] == ["fresh"]
    assert doc["new"]["implementation"]["version"] == "2"


def test_the_command_exits_1_on_a_regression_only(tmp_path):
    same = write(tmp_path / "a.jsonl", [case("a", "pass", ["P1"])])
    worse = write(tmp_path / "b.jsonl", [case("a", "skip", ["P1"], digest=None, message="cannot express it")])
    run = [sys.executable, "-m", "dsh_conformance.cli", "diff"]
    ok = subprocess.run([*run, str(same), str(same)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "0 regressions, 0 improvements" in ok.stdout
    bad = subprocess.run([*run, str(same), str(worse), "--format", "json", "-o", str(tmp_path / "d.json")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and json.loads((tmp_path / "d.json").read_text())["cases"][0]["new"] == "skip"
    back = subprocess.run([*run, str(worse), str(same)], capture_output=True, text=True, timeout=120)
    assert back.returncode == 0 and "improvement a: skip -> pass" in back.stdout
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{}\n")
    refused = subprocess.run([*run, str(same), str(broken)], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "broken.jsonl:1" in refused.stderr


@pytest.mark.parametrize("footer, stopped", [(False, None), (True, "gave up after 5 consecutive timeouts")])
@pytest.mark.parametrize("which", ["old", "new"])
def test_a_partial_report_is_refused_where_a_verdict_depends_on_it(tmp_path, which, footer, stopped):
    """A killed run's report lacks the cases it never reached: a diff would count a failure
    there as an improvement and exit 0 (issue 40). Refused in one line, exit 2; so are
    badges drawn from it."""
    whole = write(tmp_path / "whole.jsonl", [case("a", "pass", ["P1"]), case("b", "fail", ["P2"])])
    cut = write(tmp_path / "cut.jsonl", [case("a", "pass", ["P1"])], footer=footer, stopped=stopped)
    old, new = (cut, whole) if which == "old" else (whole, cut)
    run = [sys.executable, "-m", "dsh_conformance.cli"]
    done = subprocess.run([*run, "diff", str(old), str(new)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and "cut.jsonl: a partial report" in done.stderr, done.stderr
    allowed = subprocess.run([*run, "diff", str(old), str(new), "--allow-partial"], capture_output=True, text=True,
                             timeout=120)
    assert allowed.returncode in (0, 1) and "partial report" in allowed.stdout
    badge = subprocess.run([*run, "badge", str(cut), "-o", str(tmp_path / "b")], capture_output=True, text=True,
                           timeout=120)
    assert badge.returncode == 2 and "cut.jsonl: a partial report" in badge.stderr
    assert not (tmp_path / "b").exists() or not list((tmp_path / "b").iterdir())


def test_a_record_holding_a_unicode_line_separator_reads_back(tmp_path):
    """Reports end records with "\\n" only; U+2028 or \\x1c inside a message is no line end."""
    path = write(tmp_path / "r.jsonl", [case("a", "fail", ["P1"], message="one\u2028two\x1cthree\x85")])
    assert read_report(path).cases[0].message == "one\u2028two\x1cthree\x85"


def test_first_difference_walks_into_values():
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == ["a", 1, "b"]
    assert first_difference({"a": 1}, {"a": 1, "c": 2}) == ["c"]
    assert first_difference([1], [1, 2]) == []
