"""No test's verdict depends on the machine's load (issue 44): a limit a test sets on how long
something may take is a hang guard, there to end a test that hangs, never to judge one that is
slow, and it is read from the watched processes' progress, not from the wall clock. A load of
16 on 2 cores makes every process eight times slower or worse; it does not stop one from using
the CPU. So a guard fires only when the processes it watches

- used no CPU at all for ``IDLE`` seconds (blocked for good: a deadlock, a read that never
  returns; no correct program of this suite waits that long on nothing), or
- used more CPU seconds since the watch began than the limit written for an idle machine
  allows all the cores, times ``HANG_FACTOR`` (``$DSH_TEST_HANG_FACTOR``, default 10:
  spinning; CPU time, unlike the wall clock, does not grow with the load).

Where it applies:

- the ``timeout`` a test module passes to ``subprocess.run``, ``Popen.communicate`` and
  ``Popen.wait`` (``install``, from ``conftest.py``), over the child and its descendants; a
  call from the suite's own code, the code under test, keeps its limit;
- a test's polls (``wait_until``) and its watches of other processes (``Progress``).

An implementation's per-scenario timeout that a test gives the suite (``--timeout``, an IUT's
``timeout=``) is the product's own wall-clock limit, measured by the product: a test that
wants no timeout from a correct implementation gives it ``hang_guard(seconds)``, a margin of
thousands over a scenario's milliseconds.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HANG_FACTOR = float(os.environ.get("DSH_TEST_HANG_FACTOR", "10"))
IDLE = 120.0  # seconds without any CPU used by the watched processes: they are blocked for good
SLICE = 0.25  # seconds between two looks at a watched process
PROC = Path("/proc")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_RUN = threading.local()  # the limit subprocess.run passes on to its own communicate()


def hang_guard(seconds: float) -> float:
    """A wall-clock limit written for an idle machine, made a hang guard by its factor (for the
    product's own per-scenario timeout, and where /proc cannot be read)."""
    return seconds * HANG_FACTOR


def _stat(pid: int | str) -> tuple[int, int] | None:
    """(parent, CPU ticks of the process and its reaped children), or None when it is gone
    (``pid`` may also be ``"PID/task/TID"``: one thread)."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), sum(int(f) for f in fields[11:15])  # ppid; utime stime cutime cstime


def _runtime(pid: int | str) -> int:
    """Nanoseconds the process ran (schedstat: precise where stat counts 10 ms ticks)."""
    try:
        return int((PROC / str(pid) / "schedstat").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return 0


def tree(pid: int) -> list[int]:
    """``pid`` and its live descendants."""
    parents: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents.setdefault(stat[0], []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        found.append(current := todo.pop())
        todo.extend(parents.get(current, ()))
    return found


class Progress:
    """Whether the processes ``pids()`` names still make progress (see the module's text)."""

    def __init__(self, pids: Callable[[], Collection[int | str]], seconds: float) -> None:
        self.pids = pids
        self.seconds = seconds
        self.cpu_budget = hang_guard(seconds) * (os.cpu_count() or 1)
        self.wall_budget = hang_guard(seconds)  # only without /proc
        self.started = self.moved = time.monotonic()
        self.sample: object = None
        self.before: dict[str, int] | None = None  # CPU ticks of the processes there at the start

    def stalled(self) -> str | None:
        """Why the watched processes count as hung, or None while they make progress."""
        now = time.monotonic()
        if not PROC.is_dir():
            return f"still going after {now - self.started:.0f} s" if now - self.started > self.wall_budget else None
        seen = {pid: (_stat(pid), _runtime(pid)) for pid in self.pids()}
        sample = sorted((str(pid), stat[1], ran) for pid, (stat, ran) in seen.items() if stat is not None)
        if sample != self.sample:
            self.sample, self.moved = sample, now
        elif now - self.moved > IDLE:
            return f"no CPU used for {IDLE:g} s by processes {[pid for pid, _, _ in sample]} (blocked)"
        if self.before is None:  # what was used before the watch began is not counted
            self.before = {pid: ticks for pid, ticks, _ in sample}
        cpu = sum(ticks - self.before.get(pid, 0) for pid, ticks, _ in sample) / _TICK
        if cpu > self.cpu_budget:
            return f"{cpu:.0f} CPU seconds used, past {self.cpu_budget:g} (a limit of {self.seconds:g} s idle)"
        return None


def watch(proc: subprocess.Popen[Any], seconds: float) -> Progress:
    return Progress(lambda: tree(proc.pid), seconds)


def wait_until(condition: Callable[[], object], proc: subprocess.Popen[Any] | None, seconds: float,
               pids: Callable[[], Collection[int]] | None = None, pause: float = 0.1) -> None:
    """Poll until ``condition()``; fail if ``proc`` ended first, or if the processes watched
    (``proc``'s tree, or ``pids()``) stall (``Progress``)."""
    guard = Progress(pids, seconds) if pids is not None else watch(proc, seconds) if proc is not None else None
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process ended (exit {proc.returncode}) first: {proc.communicate()}")
        if guard is not None and (why := guard.stalled()):
            raise AssertionError(f"hung: {why}")
        time.sleep(pause)


@contextmanager
def watchdog(seconds: float) -> Iterator[list[str]]:
    """For a block that waits on this process's children through a library with wall-clock
    timeouts of its own (Playwright: switch them off): once the children and this process's
    main thread stall (``Progress``), the children are killed, so that the call waiting on them
    fails instead of hanging. Yields the list the reason is added to."""
    me, fired, stop = os.getpid(), [], threading.Event()

    def watched() -> list[int | str]:
        return [f"{me}/task/{me}", *(pid for pid in tree(me) if pid != me)]  # not the watchdog's own thread

    progress = Progress(watched, seconds)

    def patrol() -> None:
        while not stop.wait(SLICE):
            if why := progress.stalled():
                fired.append(why)
                for pid in watched()[1:]:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                return

    thread = threading.Thread(target=patrol, name="hang-watchdog", daemon=True)
    thread.start()
    try:
        yield fired
    finally:
        stop.set()
        thread.join()


def _progressing(call: Callable[..., Any], proc: subprocess.Popen[Any], first: dict[str, Any], seconds: float) -> Any:
    """``call(proc, timeout=...)`` in short slices until it returns; its TimeoutExpired only
    once the child's tree stalls."""
    guard = watch(proc, seconds)
    while True:
        try:
            return call(proc, **first, timeout=SLICE)
        except subprocess.TimeoutExpired as expired:
            first = {}  # communicate() takes its input once; a retry loses no output
            if why := guard.stalled():
                expired.add_note(f"hang guard: {why}")
                raise


def _from_tests() -> bool:
    return str(sys._getframe(2).f_globals.get("__name__", "")).split(".")[0] == "tests"


def _guarded_run(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("timeout") is None or not _from_tests():
            return function(*args, **kwargs)
        _RUN.seconds = kwargs["timeout"]
        try:
            return function(*args, **kwargs)
        finally:
            _RUN.seconds = None

    run.hang_guarded = True  # type: ignore[attr-defined]
    return run


def _guarded_communicate(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def communicate(self: subprocess.Popen[Any], input: Any = None, timeout: float | None = None) -> Any:
        seconds, _RUN.seconds = getattr(_RUN, "seconds", None), None  # subprocess.run's own call
        if timeout is not None and (seconds is not None or _from_tests()):
            return _progressing(function, self, {"input": input}, timeout)
        return function(self, input, timeout)

    communicate.hang_guarded = True  # type: ignore[attr-defined]
    return communicate


def _guarded_wait(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wait(self: subprocess.Popen[Any], timeout: float | None = None) -> Any:
        if timeout is not None and _from_tests():
            return _progressing(function, self, {}, timeout)
        return function(self, timeout)

    wait.hang_guarded = True  # type: ignore[attr-defined]
    return wait


def install() -> None:
    if getattr(subprocess.run, "hang_guarded", False):
        return
    subprocess.run = _guarded_run(subprocess.run)  # type: ignore[assignment]
    subprocess.Popen.communicate = _guarded_communicate(subprocess.Popen.communicate)  # type: ignore[method-assign]
    subprocess.Popen.wait = _guarded_wait(subprocess.Popen.wait)  # type: ignore[method-assign]
