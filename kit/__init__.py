"""dsh-conformance's kit: the scenario interpreter and the JavaScript value model, as a library.

Everything an implementation of the pipeline needs to run the suite's scenarios that is
not the pipeline itself: the scenario language (``kit.scenario``), JS values in wire form
(``kit.jsvalue``), virtual time and signals (``kit.scheduler``), the execution record
(``kit.record``), the scripted participants' interpreter (``kit.script``), the trace
(``kit.trace``), the run around a pipeline (``kit.driver``) and the IUT protocol's answering
side (``kit.protocol``). The oracle runs on it; a Python port implements ``Pipeline`` and
``Implementation`` of ``kit.port`` and writes no interpreter and no protocol code.

The kit imports nothing of the oracle's stages nor of the suite.

``KIT_VERSION`` is versioned with the IUT protocol: its major number is the protocol
version the kit speaks (``PROTOCOL_VERSION``), its minor number counts additions to the
port interface that keep every port written for an earlier minor working.
"""

from .driver import ScenarioRunError
from .port import (ApprovalService, Guard, Implementation, Listener, Participant, Pipeline, PortRun, Tool,
                   implementation_module, run_port, serve_stdio)
from .protocol import PROTOCOL_VERSION, Unsupported
from .scenario import Scenario, ScenarioError, parse_scenario
from .trace import Trace

KIT_VERSION = f"{PROTOCOL_VERSION}.0"

__all__ = ["KIT_VERSION", "PROTOCOL_VERSION", "ApprovalService", "Guard", "Implementation", "Listener",
           "Participant", "Pipeline", "PortRun", "Scenario", "ScenarioError", "ScenarioRunError", "Tool", "Trace",
           "Unsupported", "implementation_module", "parse_scenario", "run_port", "serve_stdio"]
