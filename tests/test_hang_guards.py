"""No test's verdict depends on the machine's load (issue 44; ``tests/hang_guards.py``): a test
module's subprocess timeouts and its polls are hang guards read from the watched processes'
progress, not from the wall clock."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from . import hang_guards
from .conftest import ROOT
from .hang_guards import Progress, install, wait_until, watchdog

pytestmark = pytest.mark.rules("P1")

TESTS = sorted((ROOT / "tests").glob("*.py"))
# A child that works as it would on a machine loaded far past the guard's factor: a sliver of
# CPU now and then, for longer than the limit times the factor in wall time.
LOADED = "import time\nend = time.monotonic() + 1.5  # not a limit: how long the child runs\n" \
         "while time.monotonic() < end:\n    t = time.process_time()\n" \
         "    while time.process_time() - t < 0.002: pass\n    time.sleep(0.05)\nprint('done')"


@pytest.fixture
def tight(monkeypatch):
    """The guards with a factor of 1 and a short blocked-for-good window, as a test of them needs."""
    monkeypatch.setattr(hang_guards, "HANG_FACTOR", 1.0)
    monkeypatch.setattr(hang_guards, "IDLE", 1.0)


def test_a_slow_child_that_makes_progress_is_not_cut_off(tight):
    # On the wall clock this is past 0.2 s times the factor: the guard read the wall before.
    done = subprocess.run([sys.executable, "-c", LOADED], capture_output=True, text=True, timeout=0.2)
    assert done.stdout.strip() == "done"


def test_a_blocked_child_is_ended(tight):
    with pytest.raises(subprocess.TimeoutExpired) as caught:  # long before the 600 s of its sleep
        subprocess.run([sys.executable, "-c", "import time; time.sleep(600)"], capture_output=True, timeout=300)
    assert "no CPU used for 1 s" in "".join(caught.value.__notes__)


def test_a_spinning_child_is_ended(tight, monkeypatch):
    monkeypatch.setattr(hang_guards, "HANG_FACTOR", 0.1)
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with pytest.raises(subprocess.TimeoutExpired) as caught:
            proc.wait(timeout=1)
        assert "CPU seconds used" in "".join(caught.value.__notes__)
    finally:
        proc.kill()
        proc.wait()


def test_a_poll_fails_when_its_process_ends_first_or_stalls(tight):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    with pytest.raises(AssertionError, match="ended"):
        wait_until(lambda: False, proc, 10)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with pytest.raises(AssertionError, match="no CPU used"):
            wait_until(lambda: False, sleeper, 10)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_watchdog_kills_stalled_children_and_spares_busy_ones(tight):
    with watchdog(10) as fired:
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        sleeper.wait()  # unguarded: only the watchdog can end it
    assert sleeper.returncode == -9 and "no CPU used" in fired[0]
    with watchdog(10) as fired:
        subprocess.run([sys.executable, "-c", LOADED], check=True)
    assert fired == []


def test_cpu_used_before_a_watch_is_not_counted(tight, monkeypatch):
    """A watchdog over a worker's children sees those of other tests too (a server a module
    keeps): the CPU they used before is not this wait's."""
    monkeypatch.setattr(hang_guards, "HANG_FACTOR", 0.01)
    proc = subprocess.Popen([sys.executable, "-c", "import time\nwhile time.process_time() < 1: pass\n"
                             "print('ready', flush=True)\ntime.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        assert Progress(lambda: [proc.pid], 10).stalled() is None  # 1 s used, past 0.2: before the watch
    finally:
        proc.kill()
        proc.wait()


def test_the_code_under_test_keeps_its_limits():
    seen = []

    class Fake:
        pid = 0

        def wait(self, timeout=None):
            seen.append(timeout)

    wait = hang_guards._guarded_wait(Fake.wait)
    exec(compile("wait(proc, timeout=30)", "<suite>", "exec"),
         {"__name__": "dsh_conformance.iut.connection", "wait": wait, "proc": Fake()})  # a call from the suite's own module
    assert seen == [30]


def test_subprocess_is_guarded_for_every_test():
    install()  # twice is once
    for function in (subprocess.run, subprocess.Popen.communicate, subprocess.Popen.wait):
        assert getattr(function, "hang_guarded", False), function
        assert not getattr(getattr(function, "__wrapped__", None), "hang_guarded", False), function


def test_no_test_sets_a_wall_clock_limit_of_its_own():
    """A deadline on the wall clock, a select or Playwright wait with a limit, a hypothesis
    deadline, a pytest-timeout mark: each would be a verdict on the machine's speed. Waits go
    through ``wait_until``, ``watch`` and ``watchdog``."""
    patterns = [r"monotonic\(\) *\+", r"monotonic\(\) *- *\w+ *<", r"deadline=(?!None)", r"\.select\((?!SLICE)\w",
                r"mark\.timeout", r"browser_page\((?![^)]*timeout_ms=0)", r"watched_page\((?![^)]*timeout_ms=0)"]
    bare = []
    for path in TESTS:
        if path.name in ("hang_guards.py", "test_hang_guards.py"):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "not a limit" in line or line.lstrip().startswith(("from ", "import ")):
                continue
            if any(re.search(p, line) for p in patterns):
                bare.append(f"{path.name}:{n}: {line.strip()}")
    assert not bare, "\n".join(bare)
