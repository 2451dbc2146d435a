"""The oracle as an implementation under test: the IUT protocol v1 over two streams.

The only I/O of the oracle package. Messages are described in ``conformance.protocol``;
this server knows just enough of them to answer, so that the oracle stays independent of
the suite.
"""

from __future__ import annotations

import json
import traceback
from typing import Any, TextIO

from . import ScenarioError, ScenarioRunError, jsontext, parse_scenario, run_scenario

PROFILES = ["core", "reference", "loop"]


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
    return {"seq": seq, "trace": json.loads(trace.dumps())}


def serve(inp: TextIO, out: TextIO) -> int:
    for line in inp:
        if not line.strip():
            continue
        msg = json.loads(line)
        match msg.get("cmd"):
            case "start":
                reply = started()
            case "run":
                reply = answer(msg["seq"], msg["scenario"])
            case "stop":
                return 0
            case other:
                reply = {"seq": msg.get("seq", -1), "errored": True, "message": f"unknown command {other!r}"}
        out.write(jsontext.dumps(reply, separators=(",", ":")) + "\n")
        out.flush()
    return 0
