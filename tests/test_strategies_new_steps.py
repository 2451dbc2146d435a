"""The generated scenarios reach the body's work and the step's view (P71, P14).

The strategies draw ``dispatch`` and ``append`` steps in tool bodies, unscoped
``fs/write-intent`` / ``fs/edit-intent`` listeners, and loop runs with ``present: true``
whose raw tools have presenters; the ``work`` focus concentrates on them. These tests
check, over a fixed sample of independent draws, that the traces show each of them and
that the drawn documents keep the places the scenario check insists on.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from dsh_conformance.strategies.citation import exercised_rules, observation_kinds
from dsh_conformance.strategies.draws import DEFAULT_SEED, draw_examples

SAMPLE = 100
PRESENTER_STEPS = {"return", "throw", "observe"}  # synchronous, handed no record, after the step


@pytest.fixture(scope="module")
def sample() -> list[Any]:
    return list(draw_examples(SAMPLE, DEFAULT_SEED))


def _steps(behavior: Any) -> list[dict[str, Any]]:
    if behavior is None:
        return []
    if isinstance(behavior, list):
        return behavior
    out = list(behavior.get("steps", []))
    for steps in behavior.get("byCall", {}).values():
        out += steps
    for steps in behavior.get("perInvocation", []):
        out += steps
    return out


@pytest.mark.rules("P14", "P71")
def test_traces_show_the_body_work_and_the_view(sample):
    kinds: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    for e in sample:
        kinds.update(observation_kinds(e.trace))
        rules.update(exercised_rules(e.scenario, e.trace))
    for kind in ("fs-intent/start", "fs-intent/call", "fs-intent/end", "fs-intent/throw", "tool-event/append",
                 "presentCall/call", "presentCall/observe", "presentResult/call", "presentResult/observe"):
        assert kinds[kind] > 0, kind
    assert rules["P71"] > 0 and rules["P14"] > 0
    assert any("work" in e.doc["title"] for e in sample)  # the focus on them


def test_drawn_documents_keep_the_new_places(sample):
    for e in sample:
        doc = e.doc
        present = doc["run"].get("present", False)
        assert not present or doc["run"]["kind"] == "loop"
        for listener in doc.get("listeners", []):
            if listener["event"].startswith("fs/"):
                assert "scope" not in listener and "global" not in listener
        for tool in doc["tools"]:
            for name in ("presentCall", "presentResult"):
                if name not in tool:
                    continue
                assert not (present and tool.get("define")), tool["name"]
                if present:
                    assert {s["do"] for s in _steps(tool[name])} <= PRESENTER_STEPS, tool[name]
        for listener in doc.get("listeners", []):
            assert not {s["do"] for s in _steps(listener.get("script"))} & {"dispatch", "append"}
