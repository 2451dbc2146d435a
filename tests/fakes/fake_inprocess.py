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
- ``loop-always``: every run loops;
- ``os-exit``: the second run calls ``os._exit(0)`` (no exception, no clean-up);
- ``thread``: ``started()`` leaves a non-daemon thread running for an hour;
- ``patch-judge``: patches the suite's comparison and invariant checks to find nothing, and
  answers every run with an empty trace (wrong: the suite must still say so).

It runs in a worker process of its own (``conformance.python_host``), restarted after a
crash: a mode that breaks the second run does it once when ``FAKE_INPROCESS_ONCE`` names a
file (a restarted worker finds it and behaves).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any


from dsh_conformance.oracle import serve  # noqa: E402
from serve_loop import first_time  # noqa: E402  (tests/fakes is on the path of a py: implementation)

MODE = os.environ.get("FAKE_INPROCESS_MODE", "")
ONCE = os.environ.get("FAKE_INPROCESS_ONCE")
_runs = 0


def _second() -> bool:
    """Whether this is the second run, the first time a worker sees one."""
    return _runs == 2 and first_time(ONCE)


def _patch_the_judge() -> None:
    """What a hostile in-process implementation would do to pass whatever it answers."""
    from dsh_conformance.judge import compare
    from dsh_conformance import laws
    from dsh_conformance.running import runner

    compare.judge = runner.judge = lambda expected, actual, profiles: (None, "sha256:" + "0" * 64)
    laws.check = lambda scenario, trace: []
    runner._invariants = lambda scenario, trace: []


def started() -> dict[str, Any]:
    if MODE == "start-raises":
        raise RuntimeError("no handshake today")
    if MODE == "thread":
        threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()
    if MODE == "patch-judge":
        _patch_the_judge()
    reply = serve.started()
    reply["implementation"]["name"] = f"fake-inprocess-{MODE}"
    return reply


def _recurse(n: int) -> int:
    return _recurse(n + 1) + 1


def answer(seq: int, scenario: dict[str, Any]) -> Any:
    global _runs
    _runs += 1
    if MODE == "loop-always" or (MODE == "loop" and _second()):
        while True:
            try:
                sum(range(1000))
            except Exception:  # noqa: BLE001 - a hostile implementation swallows what it can
                pass
    if MODE == "sleep" and _second():
        time.sleep(3600)
    if MODE == "raise" and _second():
        raise ValueError("the implementation fell over")
    if MODE == "recursion" and _second():
        _recurse(0)
    if MODE == "exit" and _second():
        sys.exit(5)
    if MODE == "os-exit" and _second():
        os._exit(0)
    if MODE == "patch-judge":
        reply = serve.answer(seq, scenario)
        reply["trace"].update(observations=[], events=[], results=[])
        return reply
    if MODE == "not-a-dict":
        return "a string"
    if MODE == "errored":
        return {"seq": seq, "errored": True, "message": "fake-inprocess cannot run this"}
    return serve.answer(seq, scenario)
