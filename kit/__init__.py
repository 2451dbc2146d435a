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

from importlib import import_module
from typing import Any

from .version import KIT_VERSION, PROTOCOL_VERSION

# The names a port uses, loaded on first use (PEP 562), so that importing one light module
# of the kit (``kit.jsontext``, say) does not load pydantic and the interpreter.
_LAZY = {
    "ApprovalService": "port", "Guard": "port", "Implementation": "port", "Listener": "port",
    "Participant": "port", "Pipeline": "port", "PortRun": "port", "Tool": "port",
    "implementation_module": "port", "run_port": "port", "serve_stdio": "port",
    "Unsupported": "protocol", "ScenarioRunError": "driver",
    "Scenario": "scenario", "ScenarioError": "scenario", "parse_scenario": "scenario", "Trace": "trace",
}

__all__ = ["KIT_VERSION", "PROTOCOL_VERSION", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
