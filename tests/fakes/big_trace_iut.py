"""An implementation whose traces are huge and wrong: ``python tests/fakes/big_trace_iut.py MB [words]``.

It serves the oracle's answers with a warning of MB megabytes added to every trace and the
first observation's value changed (so that each case fails and its record keeps evidence).
With ``words`` it answers every other scenario ``errored`` and the rest ``skipped``, each with
a message (a reason) of MB megabytes instead.
"""

from __future__ import annotations

import json
import sys

from dsh_conformance.oracle import serve  # noqa: E402

PADDING = "x" * int(float(sys.argv[1]) * 1024 * 1024)
WORDS = sys.argv[2:] == ["words"]


def main() -> int:
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "stop":
            return 0
        if msg["cmd"] == "start":
            reply = serve.started()
            reply["implementation"]["name"] = "fake-big-trace"
        elif WORDS:
            reply = ({"seq": msg["seq"], "errored": True, "message": PADDING} if msg["seq"] % 2
                     else {"seq": msg["seq"], "skipped": True, "reason": PADDING})
        else:
            reply = serve.answer(msg["seq"], msg["scenario"])
            if "trace" in reply:
                reply["trace"].setdefault("warnings", []).append(PADDING)
                for o in reply["trace"]["observations"][:1]:
                    o["value"] = "wrong"
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
