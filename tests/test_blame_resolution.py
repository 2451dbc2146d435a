"""Blame of a name that a restriction hides (P56, revision 3: a restriction hides every
inherited definition of a name it filters, the global layer's and every ancestor scope's).
An implementation with the bug upstream fixed in 43f3324a7b hides only inherited *global*
tools, so a child of a restricted agent still runs the definition its parent registered in
its own scope. Where a wrapper, a post-execute decision or the finalizer then decides how
the call differs, the difference follows from the resolution: P56 is to blame, not the
stage where it shows.

The misresolving implementation's trace is the oracle's own run of the scenario without
the restriction: for ``a2`` the parent's scoped definition then shadows the global one,
exactly what sparing it does."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsh_conformance.judge.compare import first_divergence
from dsh_conformance.oracle import parse_scenario, run_scenario
from dsh_conformance.kit.trace import Trace

SCOPED = {"name": "t1", "id": "t1@a1", "scope": "a1", "body": [{"do": "return", "value": "scoped"}],
          "finalizeContent": [{"do": "return", "value": [{"type": "text", "text": "from the ancestor's finalizer"}]}]}


def _doc(listeners: list[dict[str, Any]], restricted: bool = True,
         scoped: dict[str, Any] = SCOPED) -> dict[str, Any]:
    tools = [{"name": "t1", "body": [{"do": "return", "value": "global"}]}, copy.deepcopy(scoped)]
    parent: dict[str, Any] = {"id": "a1", **({"restrict": {"deny": ["t1"]}} if restricted else {})}
    return {"id": "hidden", "rules": ["P56"], "agents": [parent, {"id": "a2", "parent": "a1"}],
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
def test_sparing_the_hidden_definition_is_blamed_on_the_resolution(listeners):
    """Under the profiles that fix it (reference: P56), the spared definition is blamed on
    the resolution, never on the stage where the difference shows."""
    expected = _trace(_doc(listeners))
    spared = _trace(_doc(listeners, restricted=False))  # the parent's scoped definition runs for a2
    d = first_divergence(expected, spared, {"core", "reference"})
    assert d is not None and "P56" in d.rules, d
    assert not {"P62", "P76", "P80", "P81", "P3", "P32"} & set(d.rules), d


@pytest.mark.rules("P56", "P26")
@pytest.mark.parametrize("listeners", [[WRAPPER], [ACCEPT_VALUE], []], ids=["wrapper-without-next", "accept-value", "plain"])
def test_under_core_alone_the_resolution_is_not_what_is_blamed(listeners):
    """P56 is a reference rule: under core alone a divergence it explains names only what
    core fixes (P26: which finalizer the call captured, or the stage order), never P56."""
    d = first_divergence(_trace(_doc(listeners)), _trace(_doc(listeners, restricted=False)), {"core"})
    assert d is None or "P56" not in d.rules, d


@pytest.mark.rules("P56")
def test_a_restriction_never_hides_the_agents_own_registration():
    """The parent's own call of the name it restricts resolves to its own scoped definition
    under the restriction as without it: nothing to blame."""
    def own(restricted: bool) -> dict[str, Any]:
        doc = _doc([], restricted)
        doc["run"]["calls"][0]["agent"] = "a1"
        return doc
    assert first_divergence(_trace(own(True)), _trace(own(False)), {"core", "reference"}) is None


@pytest.mark.rules("P56")
def test_an_unrelated_earlier_denial_is_not_put_down_to_the_resolution():
    """The implementation denies the call (a pre-execute difference) where the oracle lets
    it through to the unknown tool: the lanes part before anything of the hidden definition
    is due, so the resolution is not blamed."""
    d = first_divergence(_trace(_doc([])), _trace(_doc([DENY])), {"core", "reference"})
    assert d is not None and "P56" not in d.rules, d


@pytest.mark.rules("P56", "P117")
def test_a_spared_binding_is_blamed_on_the_resolution():
    """Under run_code the bindings follow the calling agent's view (P117): the hidden
    definition is not bound, and an implementation that spares it binds that name. The
    program's lane shows it first; the resolution is to blame beside P117."""
    def code_doc(restricted: bool) -> dict[str, Any]:
        doc = _doc([], restricted)
        doc.update(mode="code", codeRuntime=True,
                   programs=[{"id": "p", "steps": [{"do": "call", "tool": "t1", "catch": True}]}])
        doc["run"]["calls"] = [{"callId": "c1", "name": "run_code", "agent": "a2",
                                "arguments": {"code": "p", "description": "run the program"}}]
        return doc
    d = first_divergence(_trace(code_doc(True)), _trace(code_doc(False)), {"core", "reference", "code-mode"})
    assert d is not None and d.where.startswith("observations[c1 program]"), d
    assert "P56" in d.rules, d
