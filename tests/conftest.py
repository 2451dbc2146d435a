"""Shared fixtures, and the bookkeeping of which rules the tests cite."""

from __future__ import annotations

from pathlib import Path

import pytest

from .hang_guards import install

install()  # a test's subprocess timeouts are hang guards (tests/hang_guards.py)

ROOT = Path(__file__).resolve().parent.parent
FAKE = Path(__file__).parent / "fakes" / "fake_iut.py"  # deliberately wrong IUTs
SHARED = ROOT.parent / "shared"

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

    from dsh_conformance.corpus import CASES

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
    from dsh_conformance.mutate import default_cases

    return default_cases(100, 0, corpus=False)
