"""The oracle computing the reference release's stated departures (``oracle.departures``)
as an in-process implementation (``--impl py:departing_oracle``, this directory on
PYTHONPATH): ``DEPARTURES`` names them (comma-separated, default P119). With
``DEPARTING_FAULT=unknown-tool-text`` it also has a fault no departure explains: the
unknown-tool failure's message is worded otherwise (P56, reference)."""

from __future__ import annotations

import os
from typing import Any

from dsh_conformance.kit import protocol
from dsh_conformance.oracle import run_scenario, serve, texts

DEPARTURES = frozenset(r for r in os.environ.get("DEPARTURES", "P119").split(",") if r)

if os.environ.get("DEPARTING_FAULT") == "unknown-tool-text":
    from dsh_conformance.oracle import pipeline

    pipeline.unknown_tool_error = lambda name: texts.js_error(f"no tool named {name}")  # type: ignore[attr-defined]


def started() -> dict[str, Any]:
    return serve.started()


def answer(seq: int, scenario: Any) -> dict[str, Any]:
    return protocol.answer(lambda s: run_scenario(s, DEPARTURES), seq, scenario)
