"""The oracle as an implementation under test: the IUT protocol v1 over two streams.

The only I/O of the oracle package. Messages are described in ``conformance.protocol``;
this server knows just enough of them to answer, so that the oracle stays independent of
the suite.
"""

from __future__ import annotations

import traceback
from typing import IO, Any

from . import ScenarioError, ScenarioRunError, jsontext, parse_scenario, run_scenario
from .jsonio import MAX_MESSAGE_DEPTH, InputLimitError, loads

PROFILES = ["core", "reference", "loop", "code-mode"]


def started() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("dsh-conformance")
    except PackageNotFoundError:  # run from a source tree
        v = "0"
    return {"version": 1, "implementation": {"name": "dsh-conformance-oracle", "version": v,
                                              "language": "python"},
            "profiles": PROFILES, "features": []}


def answer(seq: int, scenario: Any) -> dict[str, Any]:
    try:
        trace = run_scenario(parse_scenario(scenario))
    except ScenarioError as e:
        return {"seq": seq, "errored": True, "message": f"bad scenario: {e}"}
    except ScenarioRunError as e:
        return {"seq": seq, "errored": True, "message": str(e)}
    except Exception as e:  # an oracle bug must not take the server down
        return {"seq": seq, "errored": True, "message": f"{type(e).__name__}: {e}",
                "details": traceback.format_exc()}
    return {"seq": seq, "trace": trace.to_json(detached=False)}  # written out at once


def serve(inp: IO[bytes], out: IO[str]) -> int:
    """Answer each line of ``inp`` (bytes: a line that is not UTF-8 is answered, not fatal)
    on ``out``. A line the server cannot read is answered with an error under ``seq`` -1."""
    for line in inp:
        if not line.strip():
            continue
        try:
            msg = loads(line, MAX_MESSAGE_DEPTH)  # the input limits of oracle.jsonio
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
