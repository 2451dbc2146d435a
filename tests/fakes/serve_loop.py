"""The IUT protocol loop the simple fakes share: the oracle served under another name,
with an optional pause before each answer. (fake_iut.py has its own loop: its modes
misbehave on the wire.)"""

from __future__ import annotations

import json
import sys
import time

from dsh_conformance.oracle import serve


def serve_as(name: str, delay: float = 0.0) -> int:
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "stop":
            return 0
        if msg["cmd"] == "start":
            reply = serve.started()
            reply["implementation"]["name"] = name
        else:
            if delay:
                time.sleep(delay)
            reply = serve.answer(msg["seq"], msg["scenario"])
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0
