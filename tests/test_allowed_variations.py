"""Profile isolation as a property (spec section 2; issue 39 C).

``tests/fakes/variations.py`` makes, for each part of an observation the catalog names, a
change that only that part's rules fix. Applied to the oracle's answer to every corpus case
and to generated draws, as a port would answer:

- under the profiles a case needs, when none of them is a profile of the part's rules, the
  comparison finds no divergence and the laws no violation of a checked rule;
- with those rules' profile checked, the change fails, blamed on one of the part's rules
  (a part whose difference the routing explains, a failure's message text, on a rule of that
  profile);
- a change of what a core rule fixes (a success's value, a success made a failure) fails
  every profile set.

The behaviours that are not one part of one observation (cursor sharing, live table reads,
guard order, feedback derivation, registration) are ports of ``tests/fakes/core_variant.py``,
run for real in tests/test_profile_isolation.py and tests/test_profile_scope.py.
"""

from __future__ import annotations

import copy
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from dsh_conformance.spec import contract
from dsh_conformance.judge import masks
from dsh_conformance.judge.compare import first_divergence
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.kit.scenario import ScenarioError, parse_scenario
from dsh_conformance.kit.trace import parse_trace
from dsh_conformance.laws import check
from dsh_conformance.oracle.run import run_scenario
from dsh_conformance.spec.rules import rules
from dsh_conformance.spec.situations import needed_profiles
from dsh_conformance.strategies.draws import draw_examples

sys.path.insert(0, str(Path(__file__).parent / "fakes"))
from variations import CORE_CHANGES, VARIATIONS  # noqa: E402

PARTS = {p.name: p for p in contract.PARTS}


@cache
def _answers() -> list[tuple[str, Any, set[str], dict[str, Any]]]:
    """(id, scenario, the profiles it needs, the oracle's trace in wire form) of every corpus
    case and of generated draws, core's and every profile's."""
    out = []
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(CASES.glob("*.json"))]
    docs += [e.doc for e in draw_examples(25, 39, frozenset({"core"}))]
    docs += [e.doc for e in draw_examples(25, 40)]
    for doc in docs:
        try:
            scenario = parse_scenario(doc)
            wire = json.loads(json.dumps(run_scenario(scenario).to_json(detached=True)))
        except ScenarioError:
            continue
        out.append((doc.get("id", "draw"), scenario, needed_profiles(doc), wire))
    return out


def _profiles_of(part: contract.Part) -> set[str]:
    return {rules()[r].profile for r in part.rules}


def test_every_part_of_the_catalog_has_its_variation() -> None:
    assert set(VARIATIONS) == set(PARTS)


@pytest.mark.rules("P9", "P10", "P23", "P33", "P39", "P47", "P52", "P60", "P92")
@pytest.mark.parametrize("part", sorted(PARTS))
def test_a_change_only_other_profiles_fix_passes_and_fails_where_checked(part: str) -> None:
    fixing = PARTS[part]
    shown = 0
    for case_id, scenario, needed, wire in _answers():
        changed = copy.deepcopy(wire)
        if not VARIATIONS[part](changed):
            continue
        expected, actual = parse_trace(wire), parse_trace(changed)
        if not _profiles_of(fixing) & needed:
            found = first_divergence(expected, actual, needed)
            assert found is None, (part, case_id, sorted(needed), found.describe())
            laws = [v for v in check(scenario, actual) if masks.within([v.rule], needed)]
            assert not laws, (part, case_id, laws)
        checked = needed | _profiles_of(fixing)
        found = first_divergence(expected, actual, checked)
        if found is None:
            continue  # the change fell where the oracle's own trace is open (ANY) or not compared
        shown += 1
        if fixing.blamed:
            assert set(found.rules) & set(fixing.rules), (part, case_id, found.describe())
        # else: the routing names the rule that gave the text (the part is never blamed alone)
    assert shown, f"{part}: no case shows the change"


@pytest.mark.rules("P4", "P55", "P62", "P98")
@pytest.mark.parametrize("change", sorted(CORE_CHANGES))
def test_a_change_core_fixes_fails_every_profile_set(change: str) -> None:
    shown = 0
    for case_id, _scenario, needed, wire in _answers():
        changed = copy.deepcopy(wire)
        if not CORE_CHANGES[change](changed):
            continue
        found = first_divergence(parse_trace(wire), parse_trace(changed), needed)
        assert found is not None, (change, case_id)
        # blamed on a rule of a checked profile (none: the case's rules, which the runner names)
        assert all(rules()[r].profile in needed for r in found.rules if r in rules()), (change, case_id, found.describe())
        shown += 1
    assert shown
