"""The fixed corpus: named scenario files with stable ids under ``conformance/cases/``.

A case file is a scenario whose ``id`` equals its file name (without ``.json``), which
cites the rules it checks and usually carries ``expect`` (see ``conformance.expect``).
Ids are stable: reports, expectation files and golden traces refer to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oracle.scenario import Scenario, ScenarioFileError, load_scenario

from .rules import rules

CASES = Path(__file__).parent / "cases"


@dataclass(frozen=True)
class Case:
    id: str
    path: Path
    scenario: Scenario


def load_case(path: Path) -> Case:
    s = load_scenario(path)
    if s.id != path.stem:
        raise ScenarioFileError(str(path), "$.id", f"a case's id must equal its file name {path.stem!r}")
    known = rules()
    for i, r in enumerate(s.rules):
        if r not in known:
            raise ScenarioFileError(str(path), f"$.rules[{i}]", f"unknown rule id {r!r}")
    if not s.rules:
        raise ScenarioFileError(str(path), "$.rules", "a case cites at least one rule")
    return Case(s.id, path, s)


def load_corpus(directory: Path = CASES) -> list[Case]:
    return [load_case(p) for p in sorted(directory.glob("*.json"))]
