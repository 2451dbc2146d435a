"""What the Code Mode strategies take out of scenarios whose programs overlap sub-calls:
every step that races the lane's queue, wherever a participant's script is (found by
sweeps against rc.8: a getter's unregister, seed 202; a guard's cancel, seed 202), and
classifiers that answer differently on each read (seed 237)."""
from __future__ import annotations

from typing import Any

from dsh_conformance.strategies.code_mode import RACING_STEPS, _calm

UNDEF = {"$js": "undefined"}


def _steps(doc: Any) -> list[str]:
    out: list[str] = []
    if isinstance(doc, dict):
        if isinstance(doc.get("do"), str):
            out.append(doc["do"])
        for v in doc.values():
            out += _steps(v)
    elif isinstance(doc, list):
        for v in doc:
            out += _steps(v)
    return out


def test_calm_takes_racing_steps_out_of_every_participant() -> None:
    doc = {
        "tools": [{"name": "t1", "body": [{"do": "abort", "signal": "caller"},
                                          {"do": "append", "type": "todo/write", "data": {"todos": []}},
                                          {"do": "return", "value": 1}]}],
        "guards": [{"id": "G1", "script": {"byCall": {"c1": [{"do": "cancel", "keepInbox": True}]},
                                            "steps": [{"do": "return", "value": UNDEF}]}}],
        "getters": [{"id": "g1", "script": [{"do": "unregister", "ref": "t1"}, {"do": "return", "value": 1}]}],
        "listeners": [{"id": "L1", "event": "tools/execute", "script": [{"do": "await-signal"}, {"do": "next"}]}],
        "programs": [{"id": "p1", "steps": [{"do": "call", "tool": "t1", "as": "h0"}]}],
    }
    _calm(doc)
    left = _steps({k: v for k, v in doc.items() if k != "programs"})
    assert not RACING_STEPS & set(left), left
    assert {"cancel", "unregister", "abort", "append"} <= RACING_STEPS  # append: seed 262
    assert left.count("return") == 3 and "sleep" in left  # the rest stays; a wait becomes a sleep
    assert doc["programs"][0]["steps"] == [{"do": "call", "tool": "t1", "as": "h0"}]  # programs are not participants


def test_calm_makes_classifiers_answer_alike_on_every_read() -> None:
    per = {"perInvocation": [[{"do": "return", "value": True}], [{"do": "return", "value": False}]],
           "byCall": {"c1": [{"do": "return", "value": False}]}}
    doc = {"tools": [{"name": "t1", "body": [], "concurrencySafe": per},
                     {"name": "t2", "body": [], "concurrencySafe": [{"do": "return", "value": 1}]}]}
    _calm(doc)
    assert doc["tools"][0]["concurrencySafe"] == {"perInvocation": [[{"do": "return", "value": True}]],
                                                  "byCall": {"c1": [{"do": "return", "value": False}]}}
    assert doc["tools"][1]["concurrencySafe"] == [{"do": "return", "value": 1}]
