"""Running a scenario through the oracle: scenario in, trace out."""

from __future__ import annotations

from ..kit.driver import ScenarioRunError, no_cycle_collection, run_direct, run_to_end
from ..kit.scenario import DirectRun, Scenario
from ..kit.trace import Trace
from .loop import run_loop
from .pipeline import execute
from .registry import World
from .viewer import present

__all__ = ["ScenarioRunError", "run_scenario"]


def run_scenario(scenario: Scenario, departures: frozenset[str] = frozenset()) -> Trace:
    """The oracle's trace for ``scenario``: deterministic, no I/O. ``departures``: rules of
    ``departures.KNOWN`` on which to compute the reference release's behaviour instead."""
    # The collector comes back on once the run's state is gone (freed as _trace returns):
    # its first pass walks the trace alone, not the world, the scheduler and every record
    # besides (a sixth of a 1,000-call loop batch).
    with no_cycle_collection():
        return _trace(scenario, departures)


def _trace(scenario: Scenario, departures: frozenset[str]) -> Trace:
    w = World(scenario, departures)
    return run_to_end(w, lambda: _run(w, scenario))


def _run(w: World, scenario: Scenario) -> None:
    if isinstance(scenario.run, DirectRun):
        run_direct(w, scenario.run.calls, lambda inp: execute(w, inp))
    else:
        w.sched.run(run_loop(w, scenario.run))
        if scenario.run.present:
            present(w, scenario.run)
