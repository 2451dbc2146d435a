"""Blame where the fault lies for two divergences whose first sign is elsewhere (issue 37):

- a getter's read too many, when the oracle read that getter only for message(x) of a thrown
  Error (P9): the reads carry the reading's rule (``kit.realm.reading``), so the getter's
  lane blames P9 beside the snapshot's and entry's P13 and P23;
- a started sub-call whose lane ends before the oracle's: the trace ends when every call has
  returned, so run_code returned before the sub-call committed (P125).

The traces are the oracle's with the implementation's slip written into them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dsh_conformance.judge.compare import first_divergence
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.kit.scenario import parse_scenario
from dsh_conformance.kit.trace import parse_trace
from dsh_conformance.oracle.run import run_scenario

PROFILES = {"core", "reference", "loop", "code-mode"}


def _wire(case_id: str) -> tuple[Any, dict[str, Any]]:
    doc = json.loads((CASES / f"{case_id}.json").read_text(encoding="utf-8"))
    expected = run_scenario(parse_scenario(doc))
    return expected, json.loads(json.dumps(run_scenario(parse_scenario(doc)).to_json(detached=True)))


@pytest.mark.rules("P9")
def test_an_error_message_read_twice_is_blamed_on_p9():
    expected, wire = _wire("thrown-error-message-accessor-read-once")
    obs = wire["observations"]
    reads = [n for n, o in enumerate(obs) if o["stage"] == "getter" and o["who"] == "g-body-string"]
    assert [obs[n]["what"] for n in reads] == ["call", "return"] and "P9" in obs[reads[0]]["rules"]
    again = [dict(obs[n], value=None if obs[n]["what"] == "call" else "read again") for n in reads]
    wire["observations"] = obs[:reads[-1] + 1] + again + obs[reads[-1] + 1:]
    found = first_divergence(expected, parse_trace(wire), PROFILES)
    assert found is not None and "P9" in found.rules, found and found.describe()


@pytest.mark.rules("P125")
def test_a_sub_call_still_running_when_run_code_returned_is_blamed_on_p125():
    expected, wire = _wire("code-runtime-rejects-after-started-sub-calls-commit")
    obs = wire["observations"]
    returned = next(n for n, o in enumerate(obs)
                    if o["call"] == "c1:code:1" and o["stage"] == "body" and o["what"] == "return")
    # the implementation's trace ends the sub-call's lane at its body: nothing of it after that
    wire["observations"] = [o for n, o in enumerate(obs) if not (o["call"] == "c1:code:1" and n >= returned)]
    wire["results"] = [r for r in wire["results"] if r["callId"] != "c1:code:1"] if isinstance(
        wire.get("results"), list) else wire.get("results")
    found = first_divergence(expected, parse_trace(wire), PROFILES)
    assert found is not None and "P125" in found.rules, found and found.describe()
