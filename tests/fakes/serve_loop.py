"""What the fakes share: ``first_time`` (a mode that misbehaves once), and the IUT protocol loop the simple fakes share: the oracle served under another name,
with an optional pause before each answer. (fake_iut.py has its own loop: its modes
misbehave on the wire.)"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from dsh_conformance.oracle import serve


def serve_with(answer: Callable[[dict[str, Any]], dict[str, Any]],
               started: Callable[[dict[str, Any]], None] = lambda reply: None) -> int:
    """The loop: ``started`` edits the oracle's handshake reply, ``answer`` makes the reply to
    a run message (the oracle's is ``serve.answer``)."""
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "stop":
            return 0
        if msg["cmd"] == "start":
            reply = serve.started()
            started(reply)
        else:
            reply = answer(msg)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


def serve_as(name: str, delay: float = 0.0) -> int:
    def answer(msg: dict[str, Any]) -> dict[str, Any]:
        if delay:
            time.sleep(delay)
        return serve.answer(msg["seq"], msg["scenario"])

    return serve_with(answer, lambda reply: reply["implementation"].update(name=name))


def first_time(marker: str | None) -> bool:
    """Whether a once-only misbehaviour happens now: always without a marker file, else only
    while the file is not there yet (a restarted process or worker finds it and behaves)."""
    if marker is None:
        return True
    if os.path.exists(marker):
        return False
    open(marker, "w").close()
    return True
