"""An implementation whose traces are huge and wrong: ``python tests/fakes/big_trace_iut.py MB [words]``.

It serves the oracle's answers with a warning of MB megabytes added to every trace and the
first observation's value changed (so that each case fails and its record keeps evidence).
With ``words`` it answers every other scenario ``errored`` and the rest ``skipped``, each with
a message (a reason) of MB megabytes instead.
"""

from __future__ import annotations

import sys
from typing import Any

from dsh_conformance.oracle import serve  # noqa: E402
from serve_loop import serve_with  # the script's own directory is on sys.path

PADDING = "x" * int(float(sys.argv[1]) * 1024 * 1024)
WORDS = sys.argv[2:] == ["words"]


def answer(msg: dict[str, Any]) -> dict[str, Any]:
    if WORDS:
        return ({"seq": msg["seq"], "errored": True, "message": PADDING} if msg["seq"] % 2
                else {"seq": msg["seq"], "skipped": True, "reason": PADDING})
    reply = serve.answer(msg["seq"], msg["scenario"])
    if "trace" in reply:
        reply["trace"].setdefault("warnings", []).append(PADDING)
        for o in reply["trace"]["observations"][:1]:
            o["value"] = "wrong"
    return reply


def main() -> int:
    return serve_with(answer, lambda reply: reply["implementation"].update(name="fake-big-trace"))


if __name__ == "__main__":
    sys.exit(main())
