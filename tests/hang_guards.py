"""No test's verdict depends on the machine's load (issue 44, item 9): every wall-clock limit
a test sets is a hang guard, there to end a test that hangs, never to judge one that is slow.
A limit written for an idle machine is multiplied by ``HANG_FACTOR`` (``$DSH_TEST_HANG_FACTOR``,
default 10: ``make test`` once took an hour at load 3 to 16 on 2 cores, where an idle run takes
minutes):

- the ``timeout`` a test module passes to ``subprocess.run``, ``Popen.communicate`` and
  ``Popen.wait`` (``install``, from ``conftest.py``: a call from the suite's own code, the code
  under test, keeps its limit);
- the other limits a test sets (a poll's deadline, an implementation's per-scenario timeout)
  through ``hang_guard(seconds)``.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

HANG_FACTOR = float(os.environ.get("DSH_TEST_HANG_FACTOR", "10"))


def hang_guard(seconds: float) -> float:
    """A limit written for an idle machine, as a hang guard."""
    return seconds * HANG_FACTOR


def guarded(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with the ``timeout`` a test module passes it made a hang guard."""
    if getattr(function, "hang_guarded", False):
        return function

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if kwargs.get("timeout") is not None and caller.split(".")[0] == "tests":
            kwargs["timeout"] = hang_guard(kwargs["timeout"])
        return function(*args, **kwargs)

    call.hang_guarded = True  # type: ignore[attr-defined]
    return call


def install() -> None:
    subprocess.run = guarded(subprocess.run)  # type: ignore[assignment]
    subprocess.Popen.communicate = guarded(subprocess.Popen.communicate)  # type: ignore[method-assign]
    subprocess.Popen.wait = guarded(subprocess.Popen.wait)  # type: ignore[method-assign]
