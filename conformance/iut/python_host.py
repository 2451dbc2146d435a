"""A Python implementation (``--impl py:MODULE``) served over the IUT protocol, in a worker
process of its own.

The suite never imports the module: ``PythonIUT`` starts this host as a process IUT (with
the suite's ``sys.path``, as multiprocessing's ``spawn`` does), and the host imports the
module and answers the protocol with its ``started()`` and ``answer(seq, scenario)``. So an
implementation can do to the suite only what any process IUT can: whatever it patches is
the host's copy of a module, a thread it leaves running dies with the host, and
``os._exit`` is a crash.

Whatever the host cannot send as an answer (``answer()`` raised, or returned what is not a
JSON object) it reports on stderr, on a line that starts with ``MARK``, and exits with
``CRASH_STATUS``: the suite records the case as the implementation's crash, with that line
as its message. A module that cannot be imported, or has no such functions, exits with
``USAGE_STATUS`` before the handshake: a usage error of the suite's command line.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from typing import Any

from dsh_conformance.kit import jsontext
from dsh_conformance.kit.jsonio import MAX_MESSAGE_DEPTH, loads



MARK = "dsh-conformance py host: "
CRASH_STATUS = 70
USAGE_STATUS = 64


def _report(message: str, status: int) -> None:
    """Say why on stderr, then end at once (threads the implementation left are not waited for)."""
    sys.stderr.write(f"{MARK}{message}\n")
    sys.stderr.flush()
    os._exit(status)


def _load(name: str) -> tuple[Any, Any]:
    try:
        module = importlib.import_module(name)
    except ImportError as e:
        _report(f"cannot import {name}: {e}", USAGE_STATUS)
    except BaseException as e:  # noqa: BLE001 - the module's own import-time failure
        _report(f"importing {name} raised {type(e).__name__}: {e}", USAGE_STATUS)
    started, answer = getattr(module, "started", None), getattr(module, "answer", None)
    if not callable(started) or not callable(answer):
        _report(f"{name} is not an in-process implementation: it needs the functions started() and "
                "answer(seq, scenario)", USAGE_STATUS)
    return started, answer


def _call(what: str, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except BaseException as e:  # noqa: BLE001 - SystemExit included: the implementation's crash
        sys.stderr.write(traceback.format_exc())
        _report(f"{what} raised {type(e).__name__}: {e}", CRASH_STATUS)


def _send(out: Any, what: str, doc: Any) -> None:
    if not isinstance(doc, dict):
        _report(f"{what} returned {type(doc).__name__}, not a dict", CRASH_STATUS)
    try:
        line = jsontext.dumps(doc, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        _report(f"{what} returned what is not JSON: {e}", CRASH_STATUS)
    out.write(line.encode("utf-8", "surrogatepass") + b"\n")
    out.flush()


def serve(name: str) -> None:
    started, answer = _load(name)
    # The protocol's own stdout: what the implementation prints goes to stderr, its log.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        msg = loads(raw, MAX_MESSAGE_DEPTH, surrogates=True)
        cmd = msg.get("cmd") if isinstance(msg, dict) else None
        if cmd == "start":
            _send(out, "started()", _call("started()", started))
        elif cmd == "run":
            seq = msg["seq"]
            _send(out, "answer()", _call("answer()", answer, seq, msg["scenario"]))
        elif cmd == "stop":
            break
    out.flush()
    os._exit(0)  # not sys.exit: a non-daemon thread the implementation started must not keep it alive


def main(argv: list[str]) -> None:
    name, path = argv[1], argv[2]
    sys.path[:] = json.loads(path)
    serve(name)


if __name__ == "__main__":
    main(sys.argv)
