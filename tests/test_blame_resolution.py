"""Blame of a name resolved through a restriction's exemption (P56: a restriction hides only
inherited global tools). An implementation that hides the ancestor's scoped definition too
(rc.8's listed departure) treats the call as an unknown tool; where a wrapper, a
post-execute decision or the finalizer then decides how the call differs, the difference
follows from the resolution, and P56 is to blame, not the stage where it shows.

The misresolving implementation's trace is the oracle's own run of the scenario without
the scoped definition: exactly what hiding it does."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsh_conformance.compare import first_divergence
from dsh_conformance.oracle import parse_scenario, run_scenario
from dsh_conformance.kit.trace import Trace

SPARED = {"name": "t1", "id": "t1@a1", "scope": "a1", "body": [{"do": "return", "value": "scoped"}],
          "finalizeContent": [{"do": "return", "value": [{"type": "text", "text": "from the ancestor's finalizer"}]}]}


def _doc(listeners: list[dict[str, Any]], spared: dict[str, Any] | None = SPARED) -> dict[str, Any]:
    tools = [{"name": "t1", "body": [{"do": "return", "value": "global"}]}] + ([copy.deepcopy(spared)] if spared else [])
    return {"id": "spared", "rules": ["P56"], "agents": [{"id": "a1", "restrict": {"deny": ["t1"]}},
                                                          {"id": "a2", "parent": "a1"}],
            "tools": tools, "listeners": listeners,
            "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t1", "arguments": {}, "agent": "a2"}]}}


def _trace(doc: dict[str, Any]) -> Trace:
    return run_scenario(parse_scenario(doc))


WRAPPER = {"id": "W", "event": "tools/execute", "script": [{"do": "return", "value": {"isError": False, "value": 7}}]}
ACCEPT_VALUE = {"id": "P", "event": "tools/post-execute", "script": [{"do": "return", "value": {"kind": "accept", "value": 3}}]}
DENY = {"id": "D", "event": "tools/pre-execute", "script": [{"do": "return", "value": {"kind": "deny", "reason": "no"}}]}


@pytest.mark.rules("P56", "P26")
@pytest.mark.parametrize("listeners", [[WRAPPER], [WRAPPER, ACCEPT_VALUE], [ACCEPT_VALUE], [DENY], []],
                         ids=["wrapper-without-next", "wrapper-then-accept-value", "accept-value", "denied", "plain"])
@pytest.mark.parametrize("profiles", [{"core"}, {"core", "reference"}])
def test_hiding_the_spared_definition_is_blamed_on_the_resolution(listeners, profiles):
    """P56 is a reference rule: under core alone blame names only what core fixes of it
    (P26, which finalizer the call captured), never the stage where the difference shows."""
    expected = _trace(_doc(listeners))
    hidden = _trace(_doc(listeners, spared=None))  # the name is an unknown tool for a2
    d = first_divergence(expected, hidden, profiles)
    assert d is not None and "resolves to" in d.reason, d
    assert ("P56" in d.rules) == ("reference" in profiles), d
    assert not {"P62", "P76", "P80", "P81", "P3", "P32"} & set(d.rules), d


@pytest.mark.rules("P93")
def test_a_difference_of_the_spared_definition_itself_is_judged_where_it_lies():
    """The implementation resolved the name as the oracle did (the spared finalizer ran),
    and its finalizer's output differs: that is the finalizer's stage, not P56."""
    other = copy.deepcopy(SPARED)
    other["finalizeContent"] = [{"do": "return", "value": [{"type": "text", "text": "something else"}]}]
    d = first_divergence(_trace(_doc([WRAPPER])), _trace(_doc([WRAPPER], spared=other)), {"core", "reference"})
    assert d is not None and "P56" not in d.rules, d


@pytest.mark.rules("P56")
def test_an_unrelated_earlier_denial_is_not_put_down_to_the_resolution():
    """The implementation denies the call before the spared definition is due (a
    pre-execute difference): the lanes part before its first participant and no unknown
    tool shows, so the resolution is not blamed."""
    d = first_divergence(_trace(_doc([])), _trace(_doc([DENY])), {"core", "reference"})
    assert d is not None and "P56" not in d.rules, d


@pytest.mark.rules("P56", "P117")
def test_a_hidden_spared_binding_is_blamed_on_the_resolution():
    """Under run_code the bindings follow the calling agent's view (P117): the spared
    definition is bound, and an implementation that hides it binds nothing of that name.
    The program's lane shows it first; the resolution is to blame beside P117."""
    def code_doc(spared: bool) -> dict[str, Any]:
        doc = _doc([], spared=SPARED if spared else None)
        doc.update(mode="code", codeRuntime=True,
                   programs=[{"id": "p", "steps": [{"do": "call", "tool": "t1", "catch": True}]}])
        doc["run"]["calls"] = [{"callId": "c1", "name": "run_code", "agent": "a2",
                                "arguments": {"code": "p", "description": "run the program"}}]
        return doc
    d = first_divergence(_trace(code_doc(True)), _trace(code_doc(False)), {"core", "reference", "code-mode"})
    assert d is not None and d.where.startswith("observations[c1 program]"), d
    assert "P56" in d.rules, d
