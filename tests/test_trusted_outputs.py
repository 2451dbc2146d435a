"""Outputs the suite can vouch for (issue 40): a report or JUnit file an implementation
replaced or changed while the run wrote it is found, said in one line, removed, and exit 4;
an earlier run's outputs are removed when a run starts, so that a run that fails before its
report begins leaves no green file behind. The forger (``tests/fakes/forger.py``) is a real
hostile implementation: it reads the output paths from the suite's command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FAKE, ROOT, corpus_subset

FAKES = Path(__file__).parent / "fakes"
CASES = ["finalize-content-only", "guard-denies-with-number"]
linux = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="the forger reads /proc")


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    return corpus_subset(tmp_path, CASES)


def _run(tmp_path: Path, cases: Path, impl: str, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "run", "--impl", impl, "--cases", str(cases),
                           "--examples", "0", *extra],
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(FAKES), str(ROOT)]), **env},
                          cwd=tmp_path, text=True, capture_output=True, timeout=300)


def _green(tmp_path: Path, cases: Path) -> tuple[Path, Path]:
    report, junit = tmp_path / "r.jsonl", tmp_path / "r.xml"
    done = _run(tmp_path, cases, "oracle-inprocess", "--report", str(report), "--junit", str(junit))
    assert done.returncode == 0, done.stderr
    return report, junit


@linux
@pytest.mark.parametrize("mode", ["replace", "append", "remove"])
def test_a_report_forged_while_the_run_writes_it_is_found_and_removed(tmp_path, cases, mode):
    report, _ = _green(tmp_path, cases)
    green = tmp_path / "green.jsonl"
    green.write_bytes(report.read_bytes())
    done = _run(tmp_path, cases, "py:forger", "--report", "r.jsonl", FORGER_MODE=mode, FORGER_GREEN=str(green))
    assert done.returncode == 4, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "r.jsonl" in lines[0], done.stderr
    assert ("removed by another process" if mode == "remove" else "by another") in lines[0]
    assert not report.exists()  # the forged file does not stand for the run


@linux
def test_outputs_forged_after_the_footer_are_found_at_the_end(tmp_path, cases):
    """A process implementation forges both files as it is asked to stop: the report has its
    footer and the JUnit file is written, and the suite checks them once it has ended."""
    report, junit = _green(tmp_path, cases)
    green = tmp_path / "green.jsonl"
    green.write_bytes(report.read_bytes())
    done = _run(tmp_path, cases, f"{sys.executable} {FAKES / 'forger.py'}", "--report", "r.jsonl",
                "--junit", "r.xml", FORGER_MODE="replace", FORGER_GREEN=str(green))
    assert done.returncode == 4, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "r.jsonl" in errors[0] and "r.xml" in errors[0], done.stderr
    assert not report.exists() and not junit.exists()


def test_the_ledger_finds_a_file_changed_in_place_or_replaced(tmp_path):
    from dsh_conformance.textio.outputs import Ledger, write_atomic

    ledger = Ledger()
    same, changed, replaced = (tmp_path / n for n in ("same", "changed", "replaced"))
    for p in (same, changed, replaced):
        write_atomic(p, "what the suite wrote\n", ledger)
    assert ledger.problems() == []
    with open(changed, "r+") as f:  # same inode, same size, other bytes
        f.write("W")
    (tmp_path / "x").write_text("what the suite wrote\n")  # the same bytes in another file
    os.replace(tmp_path / "x", replaced)
    problems = ledger.settle()
    assert len(problems) == 2 and "not the bytes the run wrote" in problems[0] and "another file" in problems[1]
    assert same.exists() and not changed.exists() and not replaced.exists()


def test_a_run_refused_at_its_handshake_leaves_no_earlier_output(tmp_path, cases):
    report, junit = _green(tmp_path, cases)
    done = _run(tmp_path, cases, f"{sys.executable} {FAKE} exit-at-start", "--report", str(report),
                "--junit", str(junit))
    assert done.returncode == 3, done.stderr
    assert not report.exists() and not junit.exists()


def test_a_run_refused_by_its_command_line_leaves_no_earlier_output(tmp_path, cases):
    report, junit = _green(tmp_path, cases)
    done = _run(tmp_path, cases, "oracle-inprocess", "--report", str(report), "--junit", str(junit),
                "--rule", "P99999")
    assert done.returncode == 2, done.stderr
    assert not report.exists() and not junit.exists()


@pytest.mark.rules("P33")
def test_a_listed_rule_is_judged_stale_only_where_the_selection_covered_it(tmp_path):
    """P33 is listed as failing; both cases citing it pass on the oracle. A run of both
    calls it stale (exit 1); a selection that leaves one out (``--case``, ``-k``) cannot
    say the failure is gone (its failing case may be the one left out): exit 0, no STALE
    line (issue 40: ``--rule P11`` or ``-k guard`` against rc.8's expectations went red)."""
    cases = corpus_subset(tmp_path, ["guard-denies-with-number", "pre-deny-skips-body", "finalize-content-only"])
    listed = tmp_path / "listed.yaml"
    listed.write_text("implementation: oracle\nrules:\n  P33: listed to see whether a run calls it stale\n")
    whole = _run(tmp_path, cases, "oracle-inprocess", "--expectations", str(listed))
    assert whole.returncode == 1 and "rule P33 is listed as failing but no case failed it" in whole.stdout, whole.stdout
    both = _run(tmp_path, cases, "oracle-inprocess", "--expectations", str(listed), "--rule", "P33")
    assert both.returncode == 1 and "rule P33 is listed" in both.stdout
    for selection in (["--case", "guard-denies-with-number"], ["-k", "guard"], ["--rule", "P46"]):
        part = _run(tmp_path, cases, "oracle-inprocess", "--expectations", str(listed), *selection)
        assert part.returncode == 0 and "P33 is listed" not in part.stdout, (selection, part.stdout[-1500:])
