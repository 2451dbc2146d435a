"""Fuzzing for hours: the plugin's ``test_property`` is an ordinary hypothesis test that
HypoFuzz (``hypothesis fuzz``) drives against any ``--dsh-impl``; a failure it finds is saved
as a case file that ``dsh-conformance replay`` re-runs."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import FAKE
from .hang_guards import watch

BIN = Path(sys.executable).parent
FAULTY = f"{sys.executable} {FAKE} guard-bypass"  # the body runs after a guard denied (P46)
# HypoFuzz finds this fault in about a minute on the shared idle 2-core machine: the test
# stops it as soon as it has saved a case, and gives up only past this hang guard (seconds on
# an idle machine, read as its progress: tests/hang_guards.py).
BUDGET = 150


def _run(argv: list[str], cwd: Path, budget: float, done: Callable[[], bool]) -> tuple[int | None, str]:
    """Run a command in a session of its own until it exits or ``done()`` says what it was
    run for has happened (HypoFuzz runs until stopped); then, or once it hangs (stalls, or
    spins past ``budget`` idle seconds' CPU), its whole group is interrupted, then killed."""
    env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(cwd / "hypothesis")}
    out_file = cwd / "fuzz.out"
    with out_file.open("w") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
    try:
        guard = watch(proc, budget)
        while proc.poll() is None and not done() and not guard.stalled():
            time.sleep(0.5)
        if proc.poll() is not None:
            return proc.returncode, out_file.read_text()
        os.killpg(proc.pid, signal.SIGINT)  # a save it interrupts still leaves one file (fuzz_tests.py)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return None, out_file.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _replay(case: Path, impl: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "dsh-conformance"), "replay", str(case), "--impl", impl], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.rules("P46")
@pytest.mark.skipif(importlib.util.find_spec("hypofuzz") is None,
                    reason="HypoFuzz is not installed (pip install 'dsh-conformance[fuzz]'; make env installs it)")
def test_hypofuzz_finds_a_planted_fault_and_saves_a_replayable_case(tmp_path):
    t0 = time.monotonic()
    code, out = _run([str(BIN / "hypothesis"), "fuzz", "-n", "1", "--no-dashboard", "--",
                      "-p", "no:cacheprovider", "--dsh-impl", FAULTY, "--dsh-fuzz", "-k", "test_property"],
                     tmp_path, BUDGET, lambda: any((tmp_path / "dsh-failures").glob("prop-*.json")))
    saved = sorted((tmp_path / "dsh-failures").glob("prop-*.json"))
    assert saved, f"nothing saved in {time.monotonic() - t0:.0f} s (exit {code}):\n{out[-3000:]}"
    assert len(saved) == 1, saved  # shrinking's larger failures are not left behind
    # HypoFuzz's own "Found a failing input" line comes after the save, and the run is stopped
    # as soon as the case is saved: whether the line made it out depends on the machine's load.
    # The saved case and its replays below are what the test is about.
    against_fault = _replay(saved[0], FAULTY, tmp_path)
    assert against_fault.returncode == 1 and "first divergence" in against_fault.stdout, against_fault.stdout
    assert _replay(saved[0], "oracle", tmp_path).returncode == 0


def test_the_property_is_collected_only_with_dsh_fuzz(tmp_path):
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--dsh-impl", "oracle",
            "--dsh-examples", "0", "-k", "test_property", "-rs"]
    plain = subprocess.run(base, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    # Not collected at all: the session imports nothing of it (conformance/fuzz_tests.py).
    assert plain.returncode == 5 and "test_property" not in plain.stdout, plain.stdout
    listed = subprocess.run([*base, "--dsh-fuzz", "--co"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "test_property" in listed.stdout, listed.stdout
    fuzz = subprocess.run([*base, "--dsh-fuzz", "--hypothesis-seed", "0"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path / "h")})
    assert fuzz.returncode == 0 and "1 passed" in fuzz.stdout, fuzz.stdout[-3000:]
    assert not (tmp_path / "dsh-failures").exists()
