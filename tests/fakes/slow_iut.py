"""The oracle served over the IUT protocol, taking ``DELAY`` seconds over each scenario:
a run long enough to show its progress line (``python tests/fakes/slow_iut.py 0.4``)."""

from __future__ import annotations

import json
import os
import sys
import time


from dsh_conformance.oracle import serve  # noqa: E402

DELAY = float(sys.argv[1]) if len(sys.argv) > 1 else 0.4


def main() -> int:
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "stop":
            return 0
        if msg["cmd"] == "start":
            reply = serve.started()
            reply["implementation"]["name"] = "fake-slow"
        else:
            time.sleep(DELAY)
            reply = serve.answer(msg["seq"], msg["scenario"])
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
