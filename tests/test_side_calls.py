"""Side calls (conformance/strategies/side_calls.py): focused recipes drawn last in a direct
run. Over the default run's own draws they come after every drawn call, and each recipe
meets the oracle branch it is there for."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_conformance.kit.jsvalue import message_value
from dsh_conformance.strategies.code_side import CALL_PREFIX
from dsh_conformance.strategies.script_calls import SCRIPT_TOOL
from dsh_conformance.strategies.side_calls import SIDE_TOOL


@pytest.fixture(scope="module")
def side_docs(default_draws: list[Any]) -> list[Any]:
    cases = default_draws
    return [c for c in cases if any(t.get("id") == SIDE_TOOL for t in c.doc["tools"])]


def _side(doc: dict[str, Any]) -> list[str]:
    return [c["callId"] for c in doc["run"]["calls"] if c["name"] == SIDE_TOOL]


def _obs(example: Any, call: str, stage: str, who: str | None = None) -> list[Any]:
    return [o for o in example.trace.observations if o.call == call and o.stage == stage and (who is None or o.who == who)]


def test_side_calls_come_after_every_drawn_call_and_nothing_drawn_names_them(side_docs):
    assert len(side_docs) >= 15, len(side_docs)  # most direct draws of the default run
    for c in side_docs:
        # the script calls (script_calls.py) or the Code Mode side runs (code_side.py) are drawn
        # after the side calls and come after them
        ids = [x["callId"] for x in c.doc["run"]["calls"]
               if x["name"] != SCRIPT_TOOL and not x["callId"].startswith(CALL_PREFIX)]
        side = _side(c.doc)
        assert side and ids[-len(side):] == side, ids
        drawn = [t for t in c.doc["tools"] if t.get("id") != SIDE_TOOL]
        assert SIDE_TOOL not in str(drawn)  # no drawn step registers, unregisters or calls it


@pytest.mark.rules("P9")
def test_a_side_calls_thrown_value_is_its_failures_message(side_docs):
    checked = 0
    for c in side_docs:
        bodies = next(t for t in c.doc["tools"] if t.get("id") == SIDE_TOOL)["body"]["perInvocation"]
        decided = {l["id"] for l in c.doc.get("listeners", [])} & {"Lv-post", "Lv-ask"}
        ran = [call for call in _side(c.doc) if _obs(c, call, "body", SIDE_TOOL)]
        for call, steps in zip(ran, bodies):  # perInvocation: the k-th body that runs
            if steps[0]["do"] != "throw" or decided:
                continue
            result = next(r.result for r in c.trace.results if r.callId == call)
            assert result["error"]["message"] == message_value(steps[0]["value"]), (call, steps)
            checked += 1
    assert checked >= 5, checked


@pytest.mark.rules("P45")
def test_the_live_guard_table_skips_the_unregistered_and_asks_the_registered(side_docs):
    seen = 0
    for c in side_docs:
        if "Gv-first" not in {g["id"] for g in c.doc.get("guards", [])}:
            continue
        first = next(x["callId"] for x in c.doc["run"]["calls"] if x.get("getters"))
        if not _obs(c, first, "guards", "Gv-first"):
            continue  # the call never reached the guards (a drawn participant decided it)
        assert not _obs(c, first, "guards", "Gv-doomed")  # unregistered before the pass reached it
        assert _obs(c, first, "guards", "Gv-late")  # registered during the pass, then asked
        seen += 1
    assert seen >= 2, seen
