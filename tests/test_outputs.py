"""Nothing lost, nothing corrupted: reports are never torn and one run at a time writes a
path; expectations and reports that cannot be trusted get a precise message; errors count
(issue 16: an ``errored`` answer fails the run, and expectations can list known errors)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dsh_conformance.cli import main
from dsh_conformance.running.expectations import load_expectations
from dsh_conformance.textio.outputs import OutputError, OutputLock, write_atomic
from dsh_conformance.reporting.report import read_report

from .conftest import FAKE, ROOT, corpus_subset
from .hang_guards import wait_until

CASES = ["finalize-content-only", "guard-denies-with-number", "loop-contexts-after-batch", "pre-deny-skips-body"]


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    return corpus_subset(tmp_path, CASES)


def _slow_run(cases: Path, report: Path, seconds: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAKE_SLOW_SECONDS": seconds}
    return subprocess.Popen([sys.executable, "-m", "dsh_conformance.cli", "run", "--impl", f"{sys.executable} {FAKE} slow",
                             "--cases", str(cases), "--examples", "0", "--report", str(report)],
                            env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    wait_until(path.exists, proc, 180, pause=0.05)


def test_a_second_run_on_the_same_report_is_refused(tmp_path, cases, capsys):
    report = tmp_path / "run.jsonl"
    first = _slow_run(cases, report, "4")
    try:
        _wait_for(report, first)  # it holds the lock and has written its header
        code = main(["run", "--impl", "oracle-inprocess", "--cases", str(cases), "--examples", "0",
                     "--report", str(report)])
        err = capsys.readouterr().err
        assert code == 2 and f"--report {report}: another run (process {first.pid}) is writing this file" in err
        out, _ = first.communicate(timeout=180)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, out
    rep = read_report(report)
    assert rep.footer is not None and len(rep.cases) == len(CASES)
    assert not (tmp_path / ".run.jsonl.lock").exists()


def test_a_reader_never_sees_a_torn_report(tmp_path, cases):
    report = tmp_path / "run.jsonl"
    run = _slow_run(cases, report, "1")
    seen = set()
    try:
        _wait_for(report, run)
        while run.poll() is None:
            # Records are appended whole, one write each: every line ended by its newline is
            # a whole record, and a last line without it (being written) is no record.
            data = report.read_bytes()
            for line in data.split(b"\n")[:-1]:
                json.loads(line)  # every line whole
            snapshot = tmp_path / "snapshot.jsonl"
            snapshot.write_bytes(data)
            read_report(snapshot)  # a valid (partial) report at every moment
            seen.add(data.count(b"\n"))
    finally:
        run.communicate(timeout=180)
    assert run.returncode == 0 and read_report(report).footer is not None
    assert len(seen) >= 1


def test_lock_is_exclusive_and_released(tmp_path):
    path = tmp_path / "out.jsonl"
    with OutputLock(path, "--report"):
        with pytest.raises(OutputError, match=f"another run \\(process {os.getpid()}\\)"):
            OutputLock(path, "--report").acquire()
    with OutputLock(path, "--report"):
        pass
    assert list(tmp_path.iterdir()) == []


def test_write_atomic_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "x.txt"
    write_atomic(path, "one\n")
    write_atomic(path, "two\n")
    assert path.read_text() == "two\n" and [p.name for p in tmp_path.iterdir()] == ["x.txt"]


# ---------------------------------------------------------------------------- precise messages

def test_expectations_from_a_partial_report_are_refused(tmp_path, cases, capsys):
    report = tmp_path / "run.jsonl"
    assert main(["run", "--impl", f"{sys.executable} {FAKE} guard-bypass", "--cases", str(cases), "--examples", "0",
                 "--report", str(report)]) == 1
    lines = report.read_text().splitlines()
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(lines[:2]) + "\n")  # a run killed after its first case
    out = tmp_path / "known.yaml"
    assert main(["expectations", "update", "--report", str(partial), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{partial}: a partial report (it has no footer: the run was killed or is still going; 1 cases)" in err
    assert not out.exists()
    assert main(["expectations", "update", "--report", str(partial), "--output", str(out), "--allow-partial"]) == 0
    assert "is a partial report" in capsys.readouterr().err and out.exists()


def test_expectations_from_an_early_stopped_run_are_refused(tmp_path, cases, capsys):
    report = tmp_path / "run.jsonl"
    assert main(["run", "--impl", f"{sys.executable} {FAKE} crash-always", "--cases", str(cases), "--examples", "0",
                 "--report", str(report), "--give-up-after", "1"]) == 3
    assert main(["expectations", "update", "--report", str(report), "--output", str(tmp_path / "k.yaml")]) == 2
    assert "the run stopped early (not run: the implementation was declared broken" in capsys.readouterr().err


def test_an_unknown_case_id_in_expectations_is_named(tmp_path, cases, capsys):
    exp = tmp_path / "known.yaml"
    exp.write_text("cases:\n  no-such-case: a typo\n  prop-0123456789ab: a saved counterexample\n"
                   "errors:\n  nor-this-one: another typo\n")
    assert main(["run", "--impl", "oracle-inprocess", "--cases", str(cases), "--examples", "0",
                 "--expectations", str(exp)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"warning: {exp}: $.cases.no-such-case: no case of this run has this id; the entry is not used",
                   f"warning: {exp}: $.errors.nor-this-one: no case of this run has this id; the entry is not used"]


def test_a_report_of_another_format_version(tmp_path, capsys):
    bad = tmp_path / "old.jsonl"
    bad.write_text(json.dumps({"kind": "header", "format": "dsh-conformance/report/v0", "implementation": {}}) + "\n")
    assert main(["report", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"error: {bad}:1: a report of format 'dsh-conformance/report/v0'; this suite reads "
                           "dsh-conformance/report/v1 (written by dsh-conformance 0.1.0)")


def test_a_bad_record_names_its_field(tmp_path, cases, capsys):
    report = tmp_path / "run.jsonl"
    assert main(["run", "--impl", "oracle-inprocess", "--cases", str(cases), "--examples", "0",
                 "--report", str(report)]) == 0
    lines = report.read_text().splitlines()
    case = json.loads(lines[1])
    case["outcome"] = "splendid"
    lines[1] = json.dumps(case)
    report.write_text("\n".join(lines) + "\n")
    assert main(["report", str(report)]) == 2
    err = capsys.readouterr().err
    assert f"{report}:2: not a report record: case record $.outcome: Input should be" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("content", [b"\xff\xfe\x00binary", b"[" * 50_000], ids=["binary", "deep"])
def test_an_unreadable_expectations_file(tmp_path, content, capsys):
    exp = tmp_path / "known.yaml"
    exp.write_bytes(content)
    assert main(["run", "--expectations", str(exp), "--examples", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {exp}: $") and len(err.splitlines()) == 1, err


# ---------------------------------------------------------------------------- errors count (issue 16)

def test_an_errored_answer_fails_the_run(tmp_path, cases):
    report = tmp_path / "run.jsonl"
    code = main(["run", "--impl", f"{sys.executable} {FAKE} errored-one", "--cases", str(cases), "--examples", "0",
                 "--report", str(report)])
    rep = read_report(report)
    assert code == 1 and rep.footer.exit == 1
    assert [c.outcome.value for c in rep.cases] == ["pass", "error", "pass", "pass"]
    assert rep.cases[1].iut_failure is None  # an answer, not a broken protocol
    assert rep.footer.rules["P46"] == "error"


def test_an_implementation_that_only_errors_is_broken(tmp_path, cases):
    assert main(["run", "--impl", f"{sys.executable} {FAKE} errored-all", "--cases", str(cases), "--examples", "0"]) == 3


def test_known_errors_are_expected_and_stale_when_they_stop(tmp_path, cases, capsys):
    report = tmp_path / "run.jsonl"
    assert main(["run", "--impl", f"{sys.executable} {FAKE} errored-one", "--cases", str(cases), "--examples", "0",
                 "--report", str(report)]) == 1
    exp = tmp_path / "known.yaml"
    assert main(["expectations", "update", "--report", str(report), "--output", str(exp)]) == 0
    doc = yaml.safe_load(exp.read_text())
    assert list(doc["errors"]) == ["guard-denies-with-number"]
    assert doc["errors"]["guard-denies-with-number"].startswith("TODO explain: the implementation answers errored")
    assert load_expectations(exp).errors
    capsys.readouterr()
    assert main(["run", "--impl", f"{sys.executable} {FAKE} errored-one", "--cases", str(cases), "--examples", "0",
                 "--report", str(report), "--expectations", str(exp)]) == 0
    assert [c.outcome.value for c in read_report(report).cases] == ["pass", "expected-error", "pass", "pass"]
    # The implementation no longer errors there: the entry is stale.
    assert main(["run", "--impl", "oracle-inprocess", "--cases", str(cases), "--examples", "0",
                 "--expectations", str(exp)]) == 1
    assert ("STALE expectation: case guard-denies-with-number is listed as erroring but ended in pass"
            in capsys.readouterr().out)


def test_a_crash_cannot_be_expected(tmp_path, cases):
    exp = tmp_path / "known.yaml"
    exp.write_text("errors:\n  guard-denies-with-number: it crashes here\n")
    state = tmp_path / "state"
    code = main(["run", "--impl", f"{sys.executable} {FAKE} crash {state}", "--cases", str(cases), "--examples", "0",
                 "--expectations", str(exp)])
    assert code == 3
