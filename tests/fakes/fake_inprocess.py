"""A hostile in-process implementation (``--impl py:fake_inprocess``, with this directory on
PYTHONPATH): the oracle, except for what ``FAKE_INPROCESS_MODE`` says.

- ``loop``: the second run never returns (a busy loop that swallows ``Exception``);
- ``sleep``: the second run blocks for an hour in one C call;
- ``raise``: the second run raises;
- ``recursion``: the second run recurses until Python stops it;
- ``exit``: the second run calls ``sys.exit``;
- ``not-a-dict``: every run returns a string;
- ``errored``: every run answers ``errored``;
- ``start-raises``: ``started()`` raises;
- ``loop-always``: every run loops.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any


from dsh_conformance.oracle import serve  # noqa: E402

MODE = os.environ.get("FAKE_INPROCESS_MODE", "")
_runs = 0


def started() -> dict[str, Any]:
    if MODE == "start-raises":
        raise RuntimeError("no handshake today")
    reply = serve.started()
    reply["implementation"]["name"] = f"fake-inprocess-{MODE}"
    return reply


def _recurse(n: int) -> int:
    return _recurse(n + 1) + 1


def answer(seq: int, scenario: dict[str, Any]) -> Any:
    global _runs
    _runs += 1
    if MODE == "loop-always" or (MODE == "loop" and _runs == 2):
        while True:
            try:
                sum(range(1000))
            except Exception:  # noqa: BLE001 - a hostile implementation swallows what it can
                pass
    if MODE == "sleep" and _runs == 2:
        time.sleep(3600)
    if MODE == "raise" and _runs == 2:
        raise ValueError("the implementation fell over")
    if MODE == "recursion" and _runs == 2:
        _recurse(0)
    if MODE == "exit" and _runs == 2:
        sys.exit(5)
    if MODE == "not-a-dict":
        return "a string"
    if MODE == "errored":
        return {"seq": seq, "errored": True, "message": "fake-inprocess cannot run this"}
    return serve.answer(seq, scenario)
