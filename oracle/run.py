"""Running a scenario through the oracle: scenario in, trace out."""

from __future__ import annotations

from .jsvalue import Thrown, message_of
from .loop import run_loop
from .pipeline import call_input, execute
from .registry import Runaway, World
from .scenario import DirectRun, Scenario, ScenarioError
from .scheduler import Deadlock
from .trace import CallResult, Trace
from .viewer import present


class ScenarioRunError(Exception):
    """The scenario cannot be run to an end: it never settles, or a step makes no sense
    where it stands. This is a defect of the scenario, not a verdict on an implementation."""


def run_scenario(scenario: Scenario) -> Trace:
    """The oracle's trace for ``scenario``: deterministic, no I/O."""
    w = World(scenario)
    try:
        if isinstance(scenario.run, DirectRun):
            for call in scenario.run.calls:
                result = w.sched.run(execute(w, call_input(w, call)))
                w.trace.results.append(CallResult(
                    callId=call.callId, result=result, frozen=w.is_deeply_frozen(result), observed=True))
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
