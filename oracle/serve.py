"""The oracle as an implementation under test: the IUT protocol v1 over two streams.

The only I/O of the oracle package, through the kit's protocol side (``kit.protocol``),
as any port built on the kit answers.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import IO, Any

from . import run_scenario
from ..kit import protocol

PROFILES = ["core", "reference", "loop", "code-mode"]
# The optional features it expresses (the handshake's ``features``): the suite draws a
# scenario that needs one only for an implementation that declares it.
FEATURES = ["timeout-policy", "shipped-approval"]


def started() -> dict[str, Any]:
    try:
        v = version("dsh-conformance")
    except PackageNotFoundError:  # run from a source tree
        v = "0"
    return protocol.handshake("dsh-conformance-oracle", v, "python", PROFILES, FEATURES)


def answer(seq: int, scenario: Any) -> dict[str, Any]:
    return protocol.answer(run_scenario, seq, scenario)


def serve(inp: IO[bytes], out: IO[str]) -> int:
    """Answer each line of ``inp`` on ``out`` (``kit.protocol.serve``)."""
    return protocol.serve(started, answer, inp, out)
