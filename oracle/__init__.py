"""dsh-conformance's reference oracle: the executable meaning of the pipeline spec.

``run_scenario(parse_scenario(doc))`` gives the expected trace of a scenario. The oracle
is pure and deterministic: no I/O, no threads, no clocks (time is virtual).
"""

from .run import ScenarioRunError, run_scenario
from ..kit.scenario import Scenario, ScenarioError, ScenarioFileError, load_scenario, parse_scenario
from ..kit.trace import Trace, parse_trace

__all__ = ["Scenario", "ScenarioError", "ScenarioFileError", "ScenarioRunError", "Trace",
           "load_scenario", "parse_scenario", "parse_trace", "run_scenario"]
