"""Reports, expectations (stale detection included) and replay, end to end."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from dsh_conformance.cli import main

from .conftest import FAKE, corpus_subset
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.reporting.report import read_report, report_schemas

BYPASS = f"{sys.executable} {FAKE} guard-bypass"
PICK = ["guard-denies-with-number", "pre-deny-skips-body", "guard-falsy-returns-deny", "approval-shipped-allowed-once"]


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    return corpus_subset(tmp_path, PICK)


def _run(tmp_path, cases, impl, name, *extra):
    report = tmp_path / f"{name}.jsonl"
    code = main(["run", "--impl", impl, "--cases", str(cases), "--examples", "0", "--report", str(report), *extra])
    return code, report


def test_report_records_validate_against_their_schema(tmp_path, cases):
    code, report = _run(tmp_path, cases, BYPASS, "bypass", "--junit", str(tmp_path / "junit.xml"))
    assert code == 1
    validator = jsonschema.Draft202012Validator(report_schemas()["report-record.schema.json"])
    lines = report.read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "header" and json.loads(lines[-1])["kind"] == "footer"
    for line in lines:
        validator.validate(json.loads(line))
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert suite.get("tests") == str(len(PICK)) and int(suite.get("failures")) >= 2


def test_partial_report_is_readable(tmp_path, cases):
    _, report = _run(tmp_path, cases, "oracle", "full")
    lines = report.read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines[:3]) + "\n" + lines[3][:25])  # killed mid-write, no footer
    rep = read_report(torn)
    assert rep.footer is None and len(rep.cases) == 2


@pytest.mark.rules("P46", "P48")
def test_matrix_links_failures_to_cases(tmp_path, cases, capsys):
    _, good = _run(tmp_path, cases, "oracle", "oracle")
    _, bad = _run(tmp_path, cases, BYPASS, "bypass")
    out = tmp_path / "matrix.md"
    assert main(["report", str(good), str(bad), "--format", "md", "-o", str(out)]) == 0
    md = out.read_text()
    assert "| rule | title | dsh-conformance-oracle 0.1.0 | fake-guard-bypass 0.1.0 |" in md
    assert "## Profile `core`" in md and "### 5.6 Monotonic guards" in md
    assert "`guard-denies-with-number`" in md and "first divergence at" in md
    capsys.readouterr()
    assert main(["report", str(good), str(bad), "--format", "html"]) == 0
    assert "<th scope=\"row\">P46</th>" in capsys.readouterr().out
    assert main(["report", str(good), str(bad), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = next(r for r in doc["rules"] if r["rule"] == "P46")  # the guard's denial was not followed
    assert [c["outcome"] for c in row["cells"]] == ["pass", "fail"]
    assert row["cells"][1]["cases"][0]["divergence"]["where"].startswith("observations[")


def test_expectations_update_then_pass_then_stale(tmp_path, cases, capsys):
    code, bad = _run(tmp_path, cases, BYPASS, "bypass")
    assert code == 1
    exp = tmp_path / "expected.yaml"
    assert main(["expectations", "update", "--report", str(bad), "--output", str(exp)]) == 0
    text = exp.read_text()
    assert "rules:" in text and "TODO explain" in text
    # The listed failures are expected now: the run passes, with expected-fail outcomes.
    code, again = _run(tmp_path, cases, BYPASS, "again", "--expectations", str(exp))
    assert code == 0
    assert "expected-fail" in {c.outcome.value for c in read_report(again).cases}
    # Against a conforming implementation the same expectations are stale: the run fails.
    code, fixed = _run(tmp_path, cases, "oracle", "fixed", "--expectations", str(exp))
    assert code == 1
    footer = read_report(fixed).footer
    assert footer is not None and footer.stale and "no case failed it" in footer.stale[0]
    assert "STALE expectation" in capsys.readouterr().out


def test_stale_case_expectation(tmp_path, cases):
    exp = tmp_path / "expected.yaml"
    exp.write_text("implementation: x\ncases:\n  pre-deny-skips-body: thought to fail\n")
    code, report = _run(tmp_path, cases, "oracle", "o", "--expectations", str(exp))
    assert code == 1
    assert read_report(report).footer.stale == ["case pre-deny-skips-body is listed as failing but passed"]


@pytest.mark.parametrize("content,message", [
    ("rules:\n  P999: x\n", "$.rules.P999: unknown rule id"),
    ("rules:\n  P3: ''\n", "$.rules.P3: the reason must be a non-empty string"),
    ("bogus: 1\n", "$.bogus: unknown key"),
    ("[1, 2]\n", "$: expected a mapping"),
    ("rules:\n  P11: x\nconsequences:\n  P11: [P87]\n", "$.consequences: no longer read: what follows from a listed"),
])
def test_bad_expectations_file(tmp_path, cases, capsys, content, message):
    exp = tmp_path / "bad.yaml"
    exp.write_text(content)
    assert main(["run", "--cases", str(cases), "--examples", "0", "--expectations", str(exp)]) == 2
    assert message in capsys.readouterr().err


def test_replay(tmp_path, capsys):
    case = CASES / "guard-denies-with-number.json"
    assert main(["replay", str(case), "--impl", BYPASS]) == 1
    out = capsys.readouterr().out
    assert out.startswith("fail: guard-denies-with-number") and "first divergence at observations[c1]" in out
    assert main(["replay", str(case)]) == 0
    assert capsys.readouterr().out.startswith("pass: guard-denies-with-number")


def test_replay_bad_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["replay", str(bad)]) == 2
    assert f"{bad}: $.run: Field required" in capsys.readouterr().err


def test_bad_report_file(tmp_path, capsys):
    bad = tmp_path / "r.jsonl"
    bad.write_text('{"kind":"case"}\n{"kind":"footer"}\n')
    assert main(["report", str(bad)]) == 2
    assert f"{bad}:1: not a report record" in capsys.readouterr().err


def test_bench_prints_ratios(tmp_path, cases, capsys):
    assert main(["bench", "--cases", str(cases), "--repeat", "1", "--skip-run"]) == 0
    out = capsys.readouterr().out
    assert "oracle in-process" in out and "suite, oracle over the protocol" in out and "protocol path /" in out


def test_listed_rules_alone_explain_a_failure_by_its_rules(tmp_path):
    """By its rules, a failure is expected only when every rule it fails is listed: what
    follows from a listed departure is derived by the oracle (tests/test_departures.py), never
    listed by hand."""
    from dsh_conformance.running.expectations import load_expectations

    f = tmp_path / "exp.yaml"
    f.write_text("rules:\n  P11: handed results are mutable\n  P24: identity writable\n")
    exp = load_expectations(f)
    assert exp.reason("x", ["P11"]) == "handed results are mutable"
    assert exp.reason("x", ["P24", "P11"]) == "identity writable; handed results are mutable"
    assert exp.reason("x", ["P11", "P87"]) is None  # a consequence is derived, or it is a failure of its own
    assert exp.reason("x", ["P87"]) is None
    assert exp.reason("x", []) is None


def test_a_generated_sweep_does_not_make_expectations_stale(tmp_path, capsys):
    """A passing run of generated scenarios cites the rules its draws exercised, but that
    the draws missed a listed departure is no sign it is gone: a sweep without the corpus
    against an implementation with known departures exits 0, not 1 for stale entries."""
    exp = tmp_path / "expected.yaml"
    exp.write_text("implementation: x\nrules:\n  P1: thought to fail\n")
    report = tmp_path / "sweep.jsonl"
    code = main(["run", "--no-corpus", "--examples", "10", "--expectations", str(exp), "--report", str(report)])
    out = capsys.readouterr().out
    assert code == 0, out[-1500:]
    (gen,) = read_report(str(report)).cases
    assert gen.outcome.value == "pass" and "P1" in gen.rules
    assert not read_report(str(report)).footer.stale
