"""An implementation whose traces are huge and wrong: ``python tests/fakes/big_trace_iut.py MB``.

It serves the oracle's answers with a warning of MB megabytes added to every trace and the
first observation's value changed (so that each case fails and its record keeps evidence).
"""

from __future__ import annotations

import json
import sys

from dsh_conformance.oracle import serve  # noqa: E402

PADDING = "x" * int(float(sys.argv[1]) * 1024 * 1024)


def main() -> int:
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "stop":
            return 0
        if msg["cmd"] == "start":
            reply = serve.started()
            reply["implementation"]["name"] = "fake-big-trace"
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
