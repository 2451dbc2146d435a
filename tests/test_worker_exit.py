"""Issue 26: no stray KeyboardInterrupt traceback at the end of a passing ``pytest -n``.

A real ``pytest -n 2`` session whose workers are still cleaning up when execnet's 5 s grace
ends, once the controller has asked them to exit (they clean up until then, so the session is
the same on a loaded machine): execnet sends each such worker a SIGINT, which used
to land in hypothesis' gc callback and be printed as an unraisable ``KeyboardInterrupt``
(``conformance/worker_exit.py`` has the mechanism). With the plugin the run ends clean;
without it (``-p no:dsh_conformance``) the same session shows the traceback, so the
session below does reproduce what ``make test`` showed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

AFTER = 300  # rounds of clean-up a worker still does once its gateway has sent the SIGINT

CONFTEST = '''
import gc, os, signal, threading

SENT = threading.Event()
_kill = os.kill


def _delivered(signum, frame):
    # Python's own SIGINT handler, and a note that it ran: the interrupt may land anywhere in
    # the worker's last steps (in the clean-up below, in the collector's callback, in execnet).
    with open(os.environ["DELIVERED"], "a") as f:
        f.write("SIGINT\\n")
    raise KeyboardInterrupt


def _kill_and_tell(pid, sig):
    _kill(pid, sig)
    if pid == os.getpid() and sig == 2:  # execnet's gateway interrupting its own worker
        SENT.set()


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        os.kill = _kill_and_tell
        signal.signal(signal.SIGINT, _delivered)  # the plugin, where loaded, ignores SIGINT later


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        return
    # A worker's slow last seconds, the collector busy: until the gateway has given up waiting
    # (5 s) and sent its SIGINT, then some rounds more for it to land: what happens, whatever
    # the machine's load, is execnet's interrupt during the clean-up.
    after = 0
    try:
        while after < int(os.environ["AFTER"]):
            junk = [[] for _ in range(2000)]
            for a, b in zip(junk, junk[1:]):
                a.append(b); b.append(a)
            del junk
            gc.collect(0)
            after += SENT.is_set()
    except KeyboardInterrupt:  # landed here, not in a gc callback: execnet swallows it, so say so
        with open(os.environ["INTERRUPTED"], "a") as f:
            f.write(config.workerinput["workerid"] + "\\n")
    assert SENT.is_set()
'''

TESTS = '''
from hypothesis import given, strategies as st

@given(st.integers())  # installs hypothesis' gc callback in the worker
def test_a_property(x):
    assert isinstance(x, int)

def test_plain():
    pass
'''


def _session(tmp_path: Path, name: str, *options: str) -> subprocess.Popen[str]:
    where = tmp_path / name
    where.mkdir()
    (where / "conftest.py").write_text(CONFTEST)
    (where / "test_lingering.py").write_text(TESTS)
    env = {**os.environ, "AFTER": str(AFTER), "PYTHONDONTWRITEBYTECODE": "1",
           "INTERRUPTED": str(where / "interrupted.txt"), "DELIVERED": str(where / "delivered.txt")}
    return subprocess.Popen([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider",
                             *options, str(where)], cwd=where, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_an_interrupted_worker_leaves_no_traceback(tmp_path: Path) -> None:
    fixed, bare = _session(tmp_path, "fixed"), _session(tmp_path, "bare", "-p", "no:dsh_conformance")
    out, _ = fixed.communicate(timeout=60)
    control, _ = bare.communicate(timeout=60)
    assert fixed.returncode == 0 and "2 passed" in out, out
    assert "KeyboardInterrupt" not in out and "Traceback" not in out, out
    assert not (tmp_path / "fixed" / "interrupted.txt").exists()
    assert not (tmp_path / "fixed" / "delivered.txt").exists()
    # The same session without the plugin: a worker was interrupted (a KeyboardInterrupt raised
    # in it), shown as the traceback when it came inside hypothesis' gc callback (as in make
    # test), silent where execnet swallowed it.
    assert bare.returncode == 0 and "2 passed" in control, control
    assert (tmp_path / "bare" / "delivered.txt").exists(), control
