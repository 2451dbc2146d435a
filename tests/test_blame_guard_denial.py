"""Blame of a guard denial that cannot be materialized (P46, revision 3: it ends the call with
a final failure, under core too; P47 gives the message). An implementation that sends such a
denial to post-execute differs first where the oracle's call goes to finalizeContent: the
routing explains it, and P46 is to blame under core (P8 is not the rule that fixes it).

The faulty implementation's trace is the oracle's own run with the denial's materialization
failure turned into a post-bound failure."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_conformance.judge.compare import first_divergence
from dsh_conformance.kit.jsvalue import Thrown
from dsh_conformance.kit.trace import Trace
from dsh_conformance.oracle import parse_scenario, pipeline, run_scenario


def _doc(denial: Any) -> dict[str, Any]:
    return {"id": "non-lossless-denial", "rules": ["P46"],
            "tools": [{"name": "t", "body": [{"do": "return", "value": 1}],
                       "finalizeContent": [{"do": "return", "value": {"$js": "undefined"}}]}],
            "guards": [{"id": "G", "script": [{"do": "return", "value": denial}]}],
            "listeners": [{"id": "post", "event": "tools/post-execute"}],
            "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]}}


def _trace(doc: dict[str, Any]) -> Trace:
    return run_scenario(parse_scenario(doc))


@pytest.mark.rules("P46", "P47")
@pytest.mark.parametrize("denial", [{"$js": "NaN"}, {"$js": "promise", "resolves": "no"},
                                    {"$js": "symbol", "description": "s"}], ids=["nan", "promise", "symbol"])
@pytest.mark.parametrize("profiles", [{"core"}, {"core", "reference"}])
def test_a_non_lossless_denial_sent_to_post_execute_is_blamed_on_p46(denial, profiles, monkeypatch):
    expected = _trace(_doc(denial))
    materialized = pipeline._denial

    def post_bound(w: Any, rec: Any, reason: Any) -> Any:  # the fault: no final failure
        try:
            return materialized(w, rec, reason)
        except Thrown as t:
            return pipeline.own_record(w, w.freeze(pipeline.fail(t.value)), rec)

    monkeypatch.setattr(pipeline, "_denial", post_bound)
    faulty = _trace(_doc(denial))
    d = first_divergence(expected, faulty, profiles)
    assert d is not None and d.rules[:1] == ["P46"], d
    assert "P8" not in d.rules, d
