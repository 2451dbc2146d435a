"""The fixed corpus: named scenario files with stable ids under ``conformance/cases/``.

A case file is a scenario whose ``id`` equals its file name (without ``.json``), which
cites the rules it checks and usually carries ``expect`` (see ``conformance.expect``).
Ids are stable: reports, expectation files and golden traces refer to them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_conformance.kit.scenario import Scenario, ScenarioFileError, load_scenario_document
from dsh_conformance.oracle import ScenarioRunError, run_scenario
from dsh_conformance.resources import CASES as BUILTIN_CASES
from dsh_conformance.spec.expect import check
from dsh_conformance.spec.rules import rules
from dsh_conformance.textio.portable import BUILTIN_CORPUS, portable_path
from dsh_conformance.textio.terminal import say as print

CASES = BUILTIN_CASES  # the built-in corpus, package data


@dataclass(frozen=True)
class Case:
    id: str
    path: Path
    scenario: Scenario
    document: Any  # the decoded file, as an IUT is sent it


def load_case(path: Path) -> Case:
    s, document = load_scenario_document(path)
    if s.id != path.stem:
        raise ScenarioFileError(str(path), "$.id", f"a case's id must equal its file name {path.stem!r}")
    known = rules()
    for i, r in enumerate(s.rules):
        if r not in known:
            raise ScenarioFileError(str(path), f"$.rules[{i}]", f"unknown rule id {r!r}")
    if not s.rules:
        raise ScenarioFileError(str(path), "$.rules", "a case cites at least one rule")
    return Case(s.id, path, s, document)


def load_corpus(directory: Path = CASES) -> list[Case]:
    return [load_case(p) for p in sorted(directory.glob("*.json"))]


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance.corpus [CASE.json ...]``: run cases through the oracle and
    print each one's unmet expectations (all cases when none are named)."""



    paths = [Path(a) for a in (sys.argv[1:] if argv is None else argv)] or sorted(CASES.glob("*.json"))
    bad = 0
    for path in paths:
        try:
            case = load_case(path)
            problems = check(case.scenario.expect or {}, run_scenario(case.scenario))
        except (ScenarioFileError, ScenarioRunError) as e:
            problems = [f"error: {e}"]
        status = "ok" if not problems else "FAIL"
        print(f"{status:4} {path.stem}")
        for p in problems:
            print(f"     - {p}")
        bad += bool(problems)
    print(f"{len(paths) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())


def corpus_name(directory: Path) -> str:
    """How a header names the corpus a run used."""
    if Path(os.path.normpath(directory.resolve())) == Path(os.path.normpath(BUILTIN_CASES.resolve())):
        return BUILTIN_CORPUS
    return portable_path(directory)
