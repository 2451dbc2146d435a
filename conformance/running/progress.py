"""Progress of a long run, on an interactive terminal.

A run that lasts longer than a couple of seconds shows one line on stderr, redrawn in
place: the phase (the corpus, then the generated scenarios) with cases done of the
total, failures so far, time elapsed and an estimate of the phase's time left, and the
case running now. A background ticker redraws it, so a case that hangs still shows which
one it is and how long the run has been going. Nothing is written when stderr is not a
terminal or the run is ``--quiet``; the line is erased when the run ends.

Generated scenarios: hypothesis stops drawing at the first unexpected failure and
shrinks it; the line then says so and counts the shrinking steps instead of an estimate.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

from dsh_conformance.reporting.report import BROKEN, Outcome
from dsh_conformance.textio.terminal import one_line

DELAY = 2.0  # seconds of a run before its progress shows
INTERVAL = 0.25  # seconds between redraws
WIDTH = 100  # columns of a terminal that reports none (or 0)
MIN_WIDTH = 40  # the narrowest line drawn: phase, counts and clock still fit


def _clock(seconds: float) -> str:
    s = int(seconds + 1e-6)  # a difference of two clock readings may fall just short of the whole second
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


class Progress:
    """Call ``phase`` before each part of a run, ``begin`` and ``done`` around each case,
    and ``close`` at the end (also when the run is interrupted)."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False, delay: float = DELAY) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and bool(getattr(self.stream, "isatty", lambda: False)())
        self.delay = delay
        self.t0 = time.monotonic()
        self.name, self.total, self.count = "", 0, 0
        self.phase_t0 = self.t0
        self.failed = self.expected = 0
        self.current = ""
        self.shrinking = False
        self.shrink_steps = 0
        self.shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.enabled:
            self._ticker = threading.Thread(target=self._tick, name="dsh-progress", daemon=True)
            self._ticker.start()

    # ------------------------------------------------------------------ what the run tells

    def phase(self, name: str, total: int) -> None:
        with self._lock:
            self.name, self.total, self.count = name, total, 0
            self.phase_t0 = time.monotonic()
            self.shrinking, self.shrink_steps, self.current = False, 0, ""

    def begin(self, label: str) -> None:
        with self._lock:
            self.current = one_line(label)  # a case id is a file's name: shown, never obeyed (conformance.terminal)

    def done(self, outcome: Outcome) -> None:
        with self._lock:
            if self.shrinking:
                self.shrink_steps += 1
                return
            self.count += 1
            if outcome == Outcome.XFAIL:
                self.expected += 1
            elif outcome == Outcome.FAIL or outcome in BROKEN:
                self.failed += 1
                # The first unexpected divergence among generated scenarios is shrunk next
                # (a timeout, a crash or an error is recorded as drawn, never shrunk).
                self.shrinking = self.name == "generated" and outcome == Outcome.FAIL

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self._lock:
            if self.shown:
                self._write("\r\x1b[K")
                self.shown = False

    # ------------------------------------------------------------------ the line

    def line(self, now: float | None = None) -> str:
        """The progress line as it reads at ``now``."""
        now = time.monotonic() if now is None else now
        parts = [f"{self.name} {self.count}/{self.total}"]
        fails = [f"{self.failed} failed"] + ([f"{self.expected} expected"] if self.expected else [])
        parts.append(", ".join(fails))
        clock = f"{_clock(now - self.t0)} elapsed"
        if self.shrinking:
            clock += f", shrinking the failure (step {self.shrink_steps + 1})"
        elif self.count and self.total > self.count:
            left = (now - self.phase_t0) / self.count * (self.total - self.count)
            clock += f", ~{_clock(left)} left"
        parts.append(clock)
        if self.current:
            parts.append(self.current)
        return " | ".join(parts)

    def _tick(self) -> None:
        while not self._stop.wait(INTERVAL):
            with self._lock:
                if time.monotonic() - self.t0 < self.delay or not self.name:
                    continue
                self._write("\r\x1b[K" + self._fit(self.line()))
                self.shown = True

    def _fit(self, text: str) -> str:
        width = self.width()
        return text if len(text) < width else text[: width - 2] + "…"

    def width(self) -> int:
        """The terminal's columns: ``$COLUMNS`` when set, else what the terminal reports;
        a terminal that reports 0 columns (a serial console, some CI runners' ptys) or none
        gets ``WIDTH``, never a line cut to nothing."""
        env = os.environ.get("COLUMNS", "")
        if env.isdigit() and int(env) > 0:
            return max(int(env), MIN_WIDTH)
        try:
            reported = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            reported = 0
        return max(reported, MIN_WIDTH) if reported > 0 else WIDTH

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self._stop.set()  # the terminal went away: stop drawing, the run goes on


__all__ = ["Progress", "DELAY"]
