"""Running a drawn scenario document in the oracle to an end: ``settle`` runs it and, when
it never settles, repairs it and runs it again."""

from __future__ import annotations

from typing import Any

from dsh_conformance.oracle import Scenario, ScenarioRunError, Trace, parse_scenario, run_scenario
from dsh_conformance.kit.jsvalue import clone

from dsh_conformance.strategies.basics import edit_steps


def settle(doc: dict[str, Any]) -> tuple[dict[str, Any], Scenario, Trace]:
    """Run ``doc`` in the oracle; when it never settles, repair it and run again.

    The strategies place suspending steps where something settles them, but a loop gate
    order can still wait on a call that never starts (an exclusive call, a full pool, an
    abort), and a replaced signal can hide the deadline an ``await-signal`` counts on.
    The repairs, in order: drop the gate order (gates then pass at once); turn every
    ``await-signal`` into a short sleep. Any other run error is a strategy bug: raised."""
    doc = clone(doc)
    repairs = [_drop_release, _no_await]
    while True:
        scenario = parse_scenario(doc)
        try:
            return doc, scenario, run_scenario(scenario)
        except ScenarioRunError as e:
            if "never settles" not in str(e) or not repairs:
                raise
            repairs.pop(0)(doc)


def _drop_release(doc: dict[str, Any]) -> None:
    doc["run"].pop("release", None)


def _no_await(doc: dict[str, Any]) -> None:
    edit_steps(doc, lambda x: [{"do": "sleep", "ms": 1}] if isinstance(x, dict) and x.get("do") == "await-signal" else [x])
