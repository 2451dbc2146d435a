"""Shared fixtures, and the bookkeeping of which rules the tests cite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .hang_guards import install, watchdog

install()  # a test's subprocess timeouts are hang guards (tests/hang_guards.py)

ROOT = Path(__file__).resolve().parent.parent
FAKE = Path(__file__).parent / "fakes" / "fake_iut.py"  # deliberately wrong IUTs
FAKES = Path(__file__).parent / "fakes"


def run_fake_module(tmp_path: Path, module: str, env: dict[str, str], *args: str) -> tuple[int, Any, str]:
    """``dsh-conformance run --impl py:MODULE`` on a module of tests/fakes (``env``: how the
    fake is set), in a process of its own: the exit code, the report read back, stdout."""
    from dsh_conformance.reporting.report import read_report

    report = tmp_path / f"{module}-{len(list(tmp_path.iterdir()))}.jsonl"
    full = {**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(FAKES), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "dsh_conformance", "run", "--impl", f"py:{module}",
                           "--report", str(report), "--failures", str(tmp_path / "failures"), *args],
                          env=full, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    return done.returncode, read_report(report), done.stdout
SHARED = ROOT.parent / "shared"
BROWSER_GUARD = 60  # seconds on an idle machine: a browser test's hang guard, by progress


@pytest.fixture
def browser_watchdog():
    """Browser tests switch Playwright's wall-clock timeouts off (``timeout_ms=0``): instead, a
    browser that stalls is killed, and the call waiting on it fails (tests/hang_guards.py)."""
    with watchdog(BROWSER_GUARD) as fired:
        yield
    assert not fired, f"the browser hung: {fired}"

CITED: set[str] = set()
COLLECTED_FILES: set[str] = set()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    # Runs before -k/-m deselection, and every xdist worker collects the whole session,
    # so each one sees every citation.
    for item in items:
        COLLECTED_FILES.add(item.path.name)
        for mark in item.iter_markers("rules"):
            CITED.update(mark.args)


def whole_suite_collected() -> bool:
    return {p.name for p in Path(__file__).parent.glob("test_*.py")} <= COLLECTED_FILES


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside this clone")
    return SHARED


def corpus_subset(tmp_path: Path, names: list[str]) -> Path:
    """A directory holding copies of the named corpus cases, for short suite runs."""
    import shutil

    from dsh_conformance.spec.corpus import CASES

    d = tmp_path / "cases"
    d.mkdir()
    for name in names:
        shutil.copy(CASES / f"{name}.json", d)
    return d


@pytest.fixture(scope="session")
def default_draws() -> list:
    """The default run's generated scenarios (100 draws, seed 0) with the oracle's traces:
    drawn and run once a test process, not once in each module that reads them (the side
    recipes' tests and the swarm test all look at these same draws). Read them, never edit."""
    from dsh_conformance.measuring.mutate import default_cases

    return default_cases(100, 0, corpus=False)
