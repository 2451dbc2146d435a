"""What Linux's /proc says of a running process: its CPU time and its peak memory, for the
benchmark's figures of an implementation's own process (None where it cannot be read)."""

from __future__ import annotations

import os
from pathlib import Path


def process_cpu_seconds(pid: int | None) -> float | None:
    """CPU seconds of process ``pid`` so far (Linux: /proc), or None. The scheduler's count
    of each thread's time on a CPU is in nanoseconds; /proc/PID/stat's user and system time
    is in clock ticks (10 ms), too coarse for a few cases of a fast implementation, whose
    difference would then read 0. The ticks serve where the scheduler's count is missing."""
    if pid is None:
        return None
    try:
        return sum(int(t.read_text().split()[0]) for t in Path(f"/proc/{pid}/task").glob("*/schedstat")) / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def peak_rss_kib(pid: int) -> float | None:
    """A process's peak resident memory (Linux: VmHWM), or None where it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1])
    except OSError:
        pass
    return None
