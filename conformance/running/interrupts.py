"""Ctrl-C and SIGTERM: never lost, always the same ending (exit 130 or 143, one line).

The handler records the signal, then raises ``Interrupted`` where the main thread is. Where
that exception cannot propagate (a garbage-collector callback, as hypothesis installs, or a
``__del__``), Python swallows it; the signal is still recorded, and the runner's next safe
point (``check``, once a case) raises it again. A second signal ends the process at once,
with the first one's code: a clean-up that hangs, or an exception lost twice, cannot keep
the suite alive (what it started is ended with it, see ``conformance.reaper``).

This module imports only the standard library: ``dsh-conformance`` installs the handlers
before it imports anything heavy (``conformance.__main__``), so that a Ctrl-C during the
imports is one line and exit 130 as well, not a traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: int | None = None  # the first signal of this run
_installed = False
_deferring = False  # inside deferred(): a first signal is recorded, raised when it ends


class Interrupted(KeyboardInterrupt):
    """The run was stopped from outside (Ctrl-C, SIGTERM): ``code`` is its exit code. A
    KeyboardInterrupt, so that nothing on the way (hypothesis, an ``except Exception``)
    takes it for a failure."""

    def __init__(self, what: str, code: int) -> None:
        super().__init__(what)
        self.what, self.code = what, code
        self.report: str | None = None  # the report completed with a footer before stopping


def _what(signum: int) -> str:
    return "terminated" if signum == signal.SIGTERM else "interrupted"


def _handler(signum: int, frame: object) -> None:
    global _received
    if _received is not None:
        _force_exit(_received)
    _received = signum
    if not _deferring:
        raise Interrupted(_what(signum), 128 + signum)


def _force_exit(first: int) -> None:
    """The second signal: end every IUT still running and exit now, without clean-up."""
    iut = sys.modules.get("dsh_conformance.iut.connection")
    if iut is not None:
        with contextlib.suppress(Exception):
            iut.kill_all()
    with contextlib.suppress(Exception):
        os.write(2, f"dsh-conformance: {_what(first)} again: stopped at once (a report being written may "
                    "lack its footer)\n".encode())
    os._exit(128 + first)


def _unraisable(args: Any, previous: Any = sys.unraisablehook) -> None:
    # An Interrupted that a gc callback swallowed: not a traceback for the user, the run
    # raises it again at its next safe point.
    if isinstance(args.exc_value, KeyboardInterrupt) and _received is not None:
        return
    previous(args)


def install() -> None:
    """Install the handlers (main thread only; elsewhere signals are left alone)."""
    global _installed
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        signal.signal(sig, _handler)
    sys.unraisablehook = _unraisable
    _installed = True


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """The handlers for the length of a command, the previous ones restored after it."""
    global _received, _installed
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    hook, was = sys.unraisablehook, _installed
    install()
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.unraisablehook, _installed = hook, was
        _received = None


def check() -> None:
    """A safe point: raise the interruption again if a signal came and its exception was
    swallowed on the way."""
    if _received is not None and _installed:
        raise Interrupted(_what(_received), 128 + _received)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold the interruption back while a step that must not be cut in two runs (the
    report's footer): a signal that comes meanwhile is recorded, and raised right after it.
    (A flag, not a signal mask: the mask is per thread, and a signal another thread takes
    still runs its handler in the main thread.)"""
    global _deferring
    if _deferring:
        yield
        return
    _deferring = True
    try:
        yield
    finally:
        _deferring = False
    check()
