"""The IUT protocol v1 on an implementation's side: the handshake's answer, one scenario's
answer, and the line loop over two streams (``conformance.protocol`` describes the
messages). The oracle and every port built on the kit answer through these, so that a
port writes no protocol code.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from typing import IO, Any

from . import jsontext
from .driver import ScenarioRunError
from .jsonio import MAX_MESSAGE_DEPTH, InputLimitError, loads
from .scenario import Scenario, ScenarioError, parse_scenario
from .trace import Trace
from .version import PROTOCOL_VERSION

Started = Callable[[], dict[str, Any]]
Answer = Callable[[int, Any], dict[str, Any]]


class Unsupported(Exception):
    """Raised by an implementation for a feature it cannot express: the scenario is answered
    ``skipped`` with this reason (never approximated silently)."""


def handshake(name: str, version: str, language: str, profiles: Sequence[str],
              features: Sequence[str] = ()) -> dict[str, Any]:
    """The answer to ``{"cmd":"start"}``: who the implementation is, what it supports."""
    return {"version": PROTOCOL_VERSION, "implementation": {"name": name, "version": version, "language": language},
            "profiles": list(profiles), "features": list(features)}


def answer(run: Callable[[Scenario], Trace], seq: int, scenario: Any) -> dict[str, Any]:
    """The answer to ``{"cmd":"run","seq":seq,"scenario":scenario}``: ``run``'s trace of
    the parsed scenario, or why there is none."""
    try:
        trace = run(parse_scenario(scenario))
    except ScenarioError as e:
        return {"seq": seq, "errored": True, "message": f"bad scenario: {e}"}
    except ScenarioRunError as e:
        return {"seq": seq, "errored": True, "message": str(e)}
    except Unsupported as e:
        return {"seq": seq, "skipped": True, "reason": str(e)}
    except Exception as e:  # an implementation's bug must not take the server down
        return {"seq": seq, "errored": True, "message": f"{type(e).__name__}: {e}",
                "details": traceback.format_exc()}
    return {"seq": seq, "trace": trace.to_json(detached=False)}  # written out at once


def serve(started: Started, answer: Answer, inp: IO[bytes], out: IO[str]) -> int:
    """Answer each line of ``inp`` (bytes: a line that is not UTF-8 is answered, not fatal)
    on ``out``. A line the server cannot read is answered with an error under ``seq`` -1."""
    for line in inp:
        if not line.strip():
            continue
        try:
            msg = loads(line, MAX_MESSAGE_DEPTH)  # the input limits of kit.jsonio
            if not isinstance(msg, dict):
                raise InputLimitError("$", "a message is a JSON object")
        except InputLimitError as e:
            reply: dict[str, Any] = {"seq": -1, "errored": True, "message": f"unreadable message: {e}"}
        else:
            match msg.get("cmd"):
                case "start":
                    reply = started()
                case "run" if isinstance(msg.get("seq"), int) and "scenario" in msg:
                    reply = answer(msg["seq"], msg["scenario"])
                case "stop":
                    return 0
                case other:
                    reply = {"seq": msg.get("seq", -1) if isinstance(msg.get("seq"), int) else -1, "errored": True,
                             "message": f"unknown command {other!r}" if other != "run" else "a run needs seq and scenario"}
        out.write(jsontext.dumps(reply, separators=(",", ":")) + "\n")
        out.flush()
    return 0
