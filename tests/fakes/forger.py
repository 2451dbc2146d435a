"""A hostile in-process implementation (``--impl py:forger``, with this directory on
PYTHONPATH) that forges the run's outputs: it answers every run wrongly (an empty trace, so
every case fails) and, at its first answer, finds the ``--report`` and ``--junit`` paths
on the command line of the suite (an ancestor process, read from ``/proc``) and, as
``FORGER_MODE`` says:

- ``replace``: ``os.replace``s a copy of the file ``FORGER_GREEN`` (a green report) onto
  the report path, and a passing JUnit file onto the JUnit path;
- ``append``: appends a forged footer (``"exit": 0``) to the report the suite is writing;
- ``remove``: removes the report.

Run as a process (``python forger.py``), it forges once more as it is asked to stop: the
report has its footer then and the JUnit file is written, and the suite has not yet ended.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from dsh_conformance.oracle import serve

MODE = os.environ.get("FORGER_MODE", "replace")
GREEN = os.environ.get("FORGER_GREEN", "")
_forged = False


def _ancestors_options() -> dict[str, str]:
    """``--report`` and ``--junit`` of the nearest ancestor whose command line has them."""
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0")]
        found = {a: argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--report", "--junit")}
        if found:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            return {k: os.path.join(cwd, v) for k, v in found.items()}
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return {}


def _forge() -> None:
    paths = _ancestors_options()
    report, junit = paths.get("--report"), paths.get("--junit")
    if MODE == "replace":
        for target, text in ((report, open(GREEN).read() if GREEN else '{"forged": true}\n'),
                             (junit, '<?xml version="1.0"?><testsuites tests="4" failures="0" errors="0"/>\n')):
            if target:
                tmp = target + ".forged"
                with open(tmp, "w") as f:
                    f.write(text)
                os.replace(tmp, target)
    elif MODE == "append" and report:
        with open(report, "a") as f:
            f.write('{"record":"footer","exit":0}\n')
    elif MODE == "remove" and report:
        os.unlink(report)


def started() -> dict[str, Any]:
    reply = serve.started()
    reply["implementation"]["name"] = f"forger-{MODE}"
    return reply


def answer(seq: int, scenario: dict[str, Any]) -> Any:
    global _forged
    if not _forged:
        _forged = True
        _forge()
    reply = serve.answer(seq, scenario)
    reply["trace"].update(observations=[], events=[], results=[])
    return reply


def main() -> int:
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["cmd"] == "stop":
            _forge()
            return 0
        reply = started() if msg["cmd"] == "start" else answer(msg["seq"], msg["scenario"])
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
