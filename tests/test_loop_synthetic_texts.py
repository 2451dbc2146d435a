"""Spec section 2 (revision 3): a result the loop synthesizes itself (P107) is a loop outcome,
so its text and info belong to ``loop``; the registry's texts inside loop outcomes stay
``reference``'s. A port whose synthetic results say something else fails under ``loop``,
blamed on P107; one whose registry texts differ does not."""

from __future__ import annotations

import json

import pytest

from dsh_conformance.judge.compare import first_divergence
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.oracle import load_scenario, parse_trace, run_scenario


def _traces(case: str, old: str, new: str):
    expected = run_scenario(load_scenario(CASES / f"{case}.json"))
    text = expected.dumps()
    assert old in text, old
    return expected, parse_trace(json.loads(text.replace(old, new)))


@pytest.mark.rules("P107")
def test_a_synthetic_result_worded_otherwise_fails_loop_on_p107():
    expected, actual = _traces("loop-pre-aborted-batch-all-synthetic", "Error: tool call aborted before dispatch",
                               "Error: something else")
    for profiles in ({"core", "loop"}, {"core", "reference", "loop"}):
        d = first_divergence(expected, actual, profiles)
        assert d is not None and d.rules == ["P107"], (profiles, d)
    assert first_divergence(expected, actual, {"core"}) is None  # no loop rule checked: nothing compared


@pytest.mark.rules("P107", "P56")
def test_a_registry_text_inside_a_loop_outcome_stays_the_reference_profiles():
    expected, actual = _traces("loop-pool-denied-call-takes-no-slot", "Error: ", "Refused: ")
    assert first_divergence(expected, actual, {"core", "loop"}) is None
    d = first_divergence(expected, actual, {"core", "reference", "loop"})
    assert d is not None and "P107" not in d.rules, d
