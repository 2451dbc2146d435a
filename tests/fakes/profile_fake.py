"""Ports that differ from the oracle in one thing only a `reference` rule fixes (issue 24's table).

``python tests/fakes/profile_fake.py MODE [PROFILES]`` serves the IUT protocol as the oracle
does, declaring ``PROFILES`` (comma-separated, default ``core``), with every trace it answers
changed in one way on the wire, as a port that does that one thing otherwise would:

- ``error-dash``: a failure's content reads ``Error - m`` instead of ``Error: m`` (P10, P33);
- ``empty-contexts``: a success without ``additionalContexts`` carries ``[]`` (P92);
- ``no-info``: failures carry no ``error.info`` (P9, P10);
- ``request-frozen``: a write into the approval request fails, as into a frozen object (P39 makes
  the request a plain object built for the ask; no core rule says what it holds);
- ``string-message``: a non-string failure message is rendered as JavaScript's ``String(x)`` (P9);
- ``concludes-false``: a success that does not conclude the turn says ``concludesTurn: false``
  (P92: only as ``true``; a law of P92 says so too).

What a scripted participant itself returned or threw is the scenario's, and stays as it is.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any

MODES = ("error-dash", "empty-contexts", "no-info", "request-frozen", "string-message", "concludes-false")


def _is_result(v: Any) -> bool:
    return isinstance(v, dict) and type(v.get("isError")) is bool and isinstance(v.get("content"), list)


def _js_string(v: Any) -> str:
    """``String(v)`` of a wire value (section 3.1) for what a thrown Error's message can be."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and v.is_integer() and math.isfinite(v):
            return str(int(v))
        return str(v)
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return ",".join("" if x is None or x == {"$js": "undefined"} else _js_string(x) for x in v)
    if isinstance(v, dict) and "$js" in v:
        kind = v["$js"]
        return {"undefined": "undefined", "NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity",
                "-0": "0"}.get(kind, f"[object {kind}]")
    return "[object Object]"


def _change_result(mode: str, r: dict[str, Any]) -> None:
    if mode == "error-dash" and r["isError"] is True:
        for block in r["content"]:
            if isinstance(block, dict) and isinstance(block.get("text"), str) and block["text"].startswith("Error: "):
                block["text"] = "Error - " + block["text"][len("Error: "):]
    elif mode == "empty-contexts" and r["isError"] is False and "additionalContexts" not in r:
        r["additionalContexts"] = []
    elif mode == "concludes-false" and r["isError"] is False and "concludesTurn" not in r:
        r["concludesTurn"] = False
    elif mode == "no-info" and r["isError"] is True and isinstance(r.get("error"), dict):
        r["error"].pop("info", None)
    elif mode == "string-message" and r["isError"] is True and isinstance(r.get("error"), dict):
        message = r["error"].get("message", "")
        if type(message) is not str:
            r["error"]["message"] = _js_string(message)


def _walk(v: Any, visit: Callable[[dict[str, Any]], None]) -> None:
    if isinstance(v, list):
        for x in v:
            _walk(x, visit)
    elif isinstance(v, dict):
        if _is_result(v):
            visit(v)
        for x in v.values():
            _walk(x, visit)


def _authored(o: dict[str, Any]) -> bool:
    """What a scripted participant itself produced (its return or throw): the scenario's."""
    return o.get("who") is not None and o.get("what") in ("return", "throw")


def change(mode: str, trace: dict[str, Any]) -> dict[str, Any]:
    """The trace (wire form) as the port answers it; changed in place and returned."""
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r} (the modes are {', '.join(MODES)})")
    if mode == "request-frozen":
        for o in trace["observations"]:
            value = o.get("value")
            if (o["what"] == "mutate" and isinstance(value, dict)
                    and str(value.get("target", "")).startswith("request.")):
                value["outcome"] = "failed"
        return trace
    visit = lambda r: _change_result(mode, r)  # noqa: E731
    for o in trace["observations"]:
        if not _authored(o):
            _walk(o.get("value"), visit)
    _walk(trace.get("results"), visit)
    _walk(trace.get("events"), visit)
    return trace


def main() -> int:
    from dsh_conformance.oracle import serve
    from serve_loop import serve_with  # the script's own directory is on sys.path

    mode = sys.argv[1]
    profiles = sys.argv[2].split(",") if len(sys.argv) > 2 else ["core"]

    def started(reply: dict[str, Any]) -> None:
        reply["implementation"]["name"] = f"profile-fake-{mode}"
        reply["profiles"] = profiles

    def answer(msg: dict[str, Any]) -> dict[str, Any]:
        reply = serve.answer(msg["seq"], msg["scenario"])
        if "trace" in reply:
            reply = json.loads(json.dumps(reply))  # a copy of the oracle's own values
            change(mode, reply["trace"])
        return reply

    return serve_with(answer, started)


if __name__ == "__main__":
    sys.exit(main())
