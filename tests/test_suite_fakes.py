"""The suite catches wrong implementations, each with a meaningful outcome and exit code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dsh_conformance.cli import main

from .conftest import FAKE, corpus_subset
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.reporting.report import read_report

# A few corpus cases that exercise what the fakes break.
PICK = ["guard-denies-with-number", "pre-deny-skips-body", "loop-contexts-after-batch",
        "finalize-content-only", "execute-retry-shared-cursor", "approval-shipped-allowed-once",
        "ui-projections-never-called", "body-appends-todo-write"]


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    return corpus_subset(tmp_path, PICK)


def _run(tmp_path: Path, cases: Path, mode: str, *extra: str):
    report = tmp_path / "report.jsonl"
    state = tmp_path / "fake-state"
    code = main(["run", "--impl", f"{sys.executable} {FAKE} {mode} {state}", "--cases", str(cases), "--examples", "0",
                 "--report", str(report), "--timeout", "10", "--failures", str(tmp_path / "failures"), *extra])
    return code, read_report(report)


def _outcomes(rep):
    return {c.id: c.outcome.value for c in rep.cases}


@pytest.mark.rules("P3", "P46", "P48")
def test_body_after_guard_denial(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "guard-bypass")
    assert code == 1
    case = next(c for c in rep.cases if c.id == "guard-denies-with-number")
    assert case.outcome.value == "fail" and case.divergence is not None
    assert _outcomes(rep)["pre-deny-skips-body"] == "pass"


@pytest.mark.rules("P1", "P93")
def test_finalize_before_post_execute(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "finalize-first")
    assert code == 1
    assert _outcomes(rep)["finalize-content-only"] == "fail"


@pytest.mark.rules("P105")
def test_tool_call_without_tool_result(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "no-tool-result")
    assert code == 1
    case = next(c for c in rep.cases if c.id == "loop-contexts-after-batch")
    assert case.outcome.value == "fail" and case.divergence["where"].startswith("events")


@pytest.mark.rules("P14")
def test_projection_called_by_the_pipeline(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "presents-in-pipeline")
    assert code == 1
    case = next(c for c in rep.cases if c.id == "ui-projections-never-called")
    assert case.outcome.value == "fail" and "P14" in case.failing_rules
    assert _outcomes(rep)["pre-deny-skips-body"] == "pass"


@pytest.mark.rules("P71")
def test_tool_owned_event_lost(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "drops-owned-events")
    assert code == 1
    case = next(c for c in rep.cases if c.id == "body-appends-todo-write")
    assert case.outcome.value == "fail" and case.divergence["where"].startswith("events")
    assert "P71" in case.failing_rules
    assert _outcomes(rep)["loop-contexts-after-batch"] == "pass"


@pytest.mark.rules("P11", "P99")
def test_mutable_result(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "mutable-result")
    assert code == 1
    assert all(c.outcome.value == "fail" for c in rep.cases)
    assert all(set(c.failing_rules) & {"P11", "P99"} for c in rep.cases)


def test_crash_mid_run_is_restarted(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "crash")
    assert code == 3  # the IUT is broken
    outcomes = list(_outcomes(rep).values())
    assert outcomes.count("error") == 1 and outcomes.count("pass") == len(PICK) - 1
    assert "exited (status 70)" in next(c.message for c in rep.cases if c.outcome.value == "error")


def test_hang_times_out_and_goes_on(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "hang")
    assert code == 3
    outcomes = list(_outcomes(rep).values())
    assert outcomes.count("timeout") == 1 and outcomes.count("pass") == len(PICK) - 1


def test_non_json_output(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "garbage")
    assert code == 3
    bad = [c for c in rep.cases if c.outcome.value == "error"]
    assert len(bad) == 1 and "not a JSON line" in bad[0].message


def test_wrong_sequence_number(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "wrong-seq")
    assert code == 3
    assert all(c.outcome.value == "error" and "seq" in c.message for c in rep.cases)


def test_schema_invalid_traces_with_validate(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "invalid-trace", "--validate")
    assert code == 3
    assert all(c.outcome.value == "invalid" and "invalid data" in c.message for c in rep.cases)


def test_schema_invalid_traces_without_validate(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "invalid-trace")
    assert code == 3
    assert all(c.outcome.value == "error" for c in rep.cases)


def test_bad_handshake(tmp_path, cases, capsys):
    code = main(["run", "--impl", f"{sys.executable} {FAKE} bad-handshake", "--cases", str(cases), "--examples", "0"])
    assert code == 3
    assert "handshake failed" in capsys.readouterr().err


def test_cannot_start(tmp_path, cases, capsys):
    code = main(["run", "--impl", str(tmp_path / "no-such-program"), "--cases", str(cases), "--examples", "0"])
    assert code == 3
    assert "cannot start" in capsys.readouterr().err


def test_skips_are_not_failures(tmp_path, cases):
    code, rep = _run(tmp_path, cases, "skip-all", "--max-skipped", "1")
    assert code == 0
    assert set(_outcomes(rep).values()) == {"skip"}
    assert all(c.message == "this fake cannot express anything" for c in rep.cases)


def test_a_run_that_skips_everything_fails_by_default(tmp_path, cases):
    # Each case is still a skip, not a failure; the run checked nothing it was sent (--max-skipped).
    code, rep = _run(tmp_path, cases, "skip-all")
    assert code == 1
    assert set(_outcomes(rep).values()) == {"skip"}
    assert rep.footer.skipped["all"] == rep.footer.skipped["asked"] == len(PICK)
    assert "more than --max-skipped 0.25" in rep.footer.too_many_skipped


def test_the_oracle_passes_against_itself(tmp_path):
    """Over the protocol and in-process, the whole corpus."""
    for impl in ("oracle", "oracle-inprocess"):
        report = tmp_path / f"{impl}.jsonl"
        assert main(["run", "--impl", impl, "--examples", "0", "--report", str(report)]) == 0
        rep = read_report(report)
        assert rep.footer is not None and rep.footer.counts == {"pass": len(list(CASES.glob("*.json")))}
