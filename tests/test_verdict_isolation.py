"""Verdicts per profile, both directions (spec section 2; issue 39).

A core verdict compares what core rules fix, user data included: a ``message`` key inside a
tool's value or arguments is data, not a failure text, and a change to it fails ``core``,
blamed on the rule that fixes the value (P25 for arguments, P55/P58 for a body's value).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dsh_conformance.judge.agreement import agree

from dsh_conformance.judge.compare import first_divergence
from dsh_conformance.kit.scenario import parse_scenario
from dsh_conformance.kit.trace import parse_trace
from dsh_conformance.oracle.run import run_scenario


def _replace_strings(v: Any, old: str, new: str) -> Any:
    if isinstance(v, str):
        return new if v == old else v
    if isinstance(v, list):
        return [_replace_strings(x, old, new) for x in v]
    if isinstance(v, dict):
        return {k: _replace_strings(x, old, new) for k, x in v.items()}
    return v


def _traces(doc: dict[str, Any], old: str, new: str, authored: bool = False):
    """The oracle's trace, and the same with every ``old`` string the implementation handed on
    (not what a scripted participant itself returned, unless ``authored``) answered as ``new``."""
    expected = run_scenario(parse_scenario(doc))
    wire = json.loads(json.dumps(run_scenario(parse_scenario(doc)).to_json(detached=True)))
    for o in wire["observations"]:
        if authored or not (o.get("who") is not None and o.get("what") in ("return", "throw")):
            o["value"] = _replace_strings(o.get("value"), old, new)
    wire["results"] = _replace_strings(wire["results"], old, new)
    wire["events"] = _replace_strings(wire["events"], old, new)
    return expected, parse_trace(wire)


def _value_case(value: Any) -> dict[str, Any]:
    return {"id": "value-message", "title": "a body returns a value with a message key", "rules": ["P55", "P58"],
            "tools": [{"name": "echo", "body": [{"do": "return", "value": value}]}],
            "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "echo"}]}}


def _args_case(args: Any) -> dict[str, Any]:
    return {"id": "args-message", "title": "arguments with a message key", "rules": ["P25"],
            "tools": [{"name": "echo", "body": [{"do": "observe", "what": "args"}, {"do": "return", "value": "ran"}]}],
            "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "echo", "arguments": args}]}}


@pytest.mark.rules("P55", "P58")
@pytest.mark.parametrize("value", [{"message": "hello"}, {"deep": [{"message": "hello"}]},
                                   {"message": "Error: hello"}, "Error: hello"])
def test_a_message_key_in_a_bodys_value_is_data_under_core(value: Any) -> None:
    old = "Error: hello" if "Error: hello" in json.dumps(value) else "hello"
    expected, actual = _traces(_value_case(value), old, "WRONG")
    for profiles in ({"core"}, {"core", "reference"}):
        found = first_divergence(expected, actual, profiles)
        assert found is not None, (value, profiles)
        # the first place it shows: the dispatch result (P62, no wrapper: the terminal's, P55)
        assert set(found.rules) & {"P55", "P58", "P62"}, found.describe()


@pytest.mark.rules("P25")
@pytest.mark.parametrize("args", [{"message": "hi"}, {"n": {"message": "hi"}}])
def test_a_message_key_in_arguments_is_data_under_core(args: Any) -> None:
    expected, actual = _traces(_args_case(args), "hi", "CHANGED")
    for profiles in ({"core"}, {"core", "reference"}):
        found = first_divergence(expected, actual, profiles)
        assert found is not None, (args, profiles)
        assert "P25" in found.rules, found.describe()


@pytest.mark.rules("P4", "P8")
def test_core_masks_failure_texts_not_data_that_looks_like_them() -> None:
    failure = {"isError": True, "error": {"message": "no"}, "content": [{"type": "text", "text": "Error: no"}]}
    assert agree(failure, {"isError": True, "error": {"message": "nope"},
                           "content": [{"type": "text", "text": "Error: nope"}]}, False)
    ok = {"isError": False, "value": {"message": "hello"}, "content": [{"type": "text", "text": "Error: x"}]}
    assert not agree(ok, {**ok, "value": {"message": "WRONG"}}, False)
    assert not agree(ok, {**ok, "content": [{"type": "text", "text": "Error: y"}]}, False)
    assert not agree({"message": "hi"}, {"message": "CHANGED"}, False)
    # A thrown Error's text is the implementation's (P9, reference): masked under core.
    thrown = {"$js": "error", "class": "TypeError", "message": "Cannot assign to read only property 'x'"}
    assert agree(thrown, {**thrown, "message": "x is read-only"}, False)
    assert not agree(thrown, {**thrown, "class": "RangeError"}, False)


def test_a_blamed_rule_is_never_not_scored_in_the_same_run():
    """Issue 39: a rule a failure is put down to reads fail, whatever other cases of the run
    say of it (a case that needs a profile the implementation lacks, one that passed)."""
    from dsh_conformance.reporting.report import CaseRecord, Outcome, rule_outcomes

    cases = [CaseRecord(id="a", source="corpus", rules=["P93"], outcome=Outcome.NOT_SCORED, message="needs profile"),
             CaseRecord(id="b", source="corpus", rules=["P90", "P93"], outcome=Outcome.FAIL, failing_rules=["P93"]),
             CaseRecord(id="c", source="corpus", rules=["P93"], outcome=Outcome.PASS)]
    outcomes = rule_outcomes(cases)
    assert outcomes["P93"] == "fail" and outcomes["P90"] == "inconclusive"
