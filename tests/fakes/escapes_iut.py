"""An implementation that tries to drive the terminal and break the pages its text lands in.

``python tests/fakes/escapes_iut.py`` serves the IUT protocol (the oracle's answers) as a
real process whose every piece of text is hostile: its name and version hold terminal
escape sequences (an OSC 52 clipboard write, a window title, clear-screen, a ``\\r`` that
overwrites the line, a backspace, a C1 CSI, a bidi override) and Markdown/HTML breakers;
by the case (so that a restart after the crash does the same): it answers ``errored`` with
such a message to the cases of ERRORED, skips those of SKIPPED with such a reason, writes
such text to stderr and crashes on those of CRASHES (its stderr tail reaches the message),
and answers the others with traces whose observation values hold it (a divergence the
contract refuses: the case is invalid, its first divergence printed). Every message also holds
characters XML 1.0 cannot carry (NUL, ESC, U+FFFE) and a lone surrogate.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from dsh_conformance.oracle import serve  # noqa: E402
from serve_loop import serve_with  # the script's own directory is on sys.path

ESCAPES = "\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\x1b[2J\x1b[H\rOK all pass\x08\x08\u009b31m\u202eevil\u2066"
MARKUP = "<script>alert(1)</script> | cell | `tick` [link](http://x) \n## heading"
HOSTILE = ESCAPES + MARKUP + "\x00\ufffe\ud800"
ERRORED = {"approval-ask-without-agent-denies"}
SKIPPED = {"finalize-content-only"}
CRASHES = {"guard-denies-with-number"}


def answer(msg: dict[str, Any]) -> dict[str, Any]:
    case = msg["scenario"].get("id")
    reply = serve.answer(msg["seq"], msg["scenario"])
    if case in ERRORED:
        return {"seq": msg["seq"], "errored": True, "message": f"errored {HOSTILE}"}
    if case in SKIPPED:
        return {"seq": msg["seq"], "skipped": True, "reason": f"skipped {HOSTILE}"}
    if case in CRASHES:
        sys.stderr.write(f"dying {ESCAPES}{MARKUP}\n")
        sys.stderr.flush()
        os._exit(70)
    if "trace" in reply:
        for o in reply["trace"]["observations"]:
            o["value"] = ESCAPES + MARKUP + "\x00\ufffe"
    return reply


def started(reply: dict[str, Any]) -> None:
    reply["implementation"].update(name=f"fake{ESCAPES}{MARKUP}", version=f"1{ESCAPES}", language=f"py{ESCAPES}")


def main() -> int:
    return serve_with(answer, started)


if __name__ == "__main__":
    sys.exit(main())
