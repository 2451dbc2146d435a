"""Running a scenario through the oracle: scenario in, trace out."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

from . import realm
from .jsvalue import Thrown, message_of
from .loop import run_loop
from .pipeline import call_input, execute
from .registry import Runaway, World
from .scenario import Call, DirectRun, Scenario, ScenarioError
from .script import Invocation, perform_sync
from .value_refs import definitions
from .scenario_checks import scenario_values
from .scheduler import ABORT_REASON, Deadlock
from .trace import Trace, call_result
from .viewer import present


class ScenarioRunError(Exception):
    """The scenario cannot be run to an end: it never settles, or a step makes no sense
    where it stands. This is a defect of the scenario, not a verdict on an implementation."""


class WorldRealm:
    """What getter and shared tokens of this run refer to (``oracle.realm``)."""

    def __init__(self, w: World) -> None:
        self.w = w
        self.getters = {g.id: g for g in w.scenario.getters}
        self.definitions: dict[str, Any] = {}
        for value in scenario_values(w.scenario):
            for sid, v in definitions(value).items():
                self.definitions.setdefault(sid, v)

    def read_getter(self, getter_id: str) -> Any:
        getter = self.getters.get(getter_id)
        if getter is None:
            raise ScenarioError(f"getter {getter_id}", "no getter has this id")
        # A read is attributed to no call: a getter can sit in any value, and which of the
        # run's calls a read belongs to is not the getter's to know (compared per getter).
        inv = Invocation(who=getter_id, stage="getter", record=None, rules=("P13", "P23"))
        return perform_sync(self.w, inv, getter.script)

    def shared(self, shared_id: str) -> Any:
        if shared_id not in self.definitions:
            raise ScenarioError(f"shared {shared_id}", "no shared object has this id")
        return self.definitions[shared_id]


def run_scenario(scenario: Scenario) -> Trace:
    """The oracle's trace for ``scenario``: deterministic, no I/O."""
    w = World(scenario)
    with realm.installed(WorldRealm(w)), _no_cycle_collection():
        return _run(w, scenario)


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """No cyclic garbage collection while a scenario runs: a run allocates tens of objects
    per observation and keeps most of them in its trace, so the collector's passes over
    them grew with the scenario (a third of a 1,000-call run). What a run leaves
    unreachable is collected at the next pass after it; a run is bounded by the invocation
    budget (registry.INVOCATION_BUDGET)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _run(w: World, scenario: Scenario) -> Trace:
    try:
        if isinstance(scenario.run, DirectRun):
            for call in scenario.run.calls:
                inp = call_input(w, call)
                timer = _abort_at(w, call, inp)
                result = w.sched.run(execute(w, inp))
                if timer is not None:
                    w.sched.cancel(timer)  # the caller stops waiting once execute() resolved
                w.trace.results.append(call_result(call.callId, result, w.is_deeply_frozen(result), True))
        else:
            w.sched.run(run_loop(w, scenario.run))
            if scenario.run.present:
                present(w, scenario.run)
    except Deadlock as e:
        raise ScenarioRunError(f"the scenario never settles: {e}") from None
    except Runaway as e:
        raise ScenarioRunError(str(e)) from None
    except ScenarioError as e:
        raise ScenarioRunError(str(e)) from None
    except Thrown as t:  # only a registration step outside any participant can get here
        raise ScenarioRunError(f"uncaught throw outside the pipeline: {message_of(t.value)}") from None
    return w.trace


def _abort_at(w: World, call: Call, inp: Any) -> Any:
    """``call.abortAt``: the caller aborts its own signal at a chosen virtual time."""
    if call.abortAt is None:
        return None
    timer = w.sched.timer(call.abortAt)

    def fire(_d: Any) -> None:
        w.obs(call.callId, "checkpoint", "abort", None, "caller", ("P52",))
        inp.signal.abort(ABORT_REASON)
    timer.on_settle(fire)
    return timer
