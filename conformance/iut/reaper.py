"""The keeper of one process IUT (Linux): ``python -I -S reaper.py SUITE_PID STATUS_FD ARGV...``.

The suite starts each process IUT through this small program, which starts the IUT and
then only waits. It stands between the suite and everything the IUT starts:

- it is a *child subreaper* (``PR_SET_CHILD_SUBREAPER``): a descendant whose parent exits is
  re-parented to it, not to init, so every process of the IUT's tree stays its descendant,
  whatever session or process group it moves to (``setsid``, ``setpgid``);
- it asks the kernel for SIGTERM when the suite dies (``PR_SET_PDEATHSIG``), even when the
  suite is SIGKILLed (a CI timeout that kills the job's process group);
- on SIGTERM, SIGINT or SIGHUP, and when the IUT process exits, it SIGKILLs every
  descendant it has, until none is left, then exits with the IUT's own status (a signal
  that ended the IUT ends it the same way), so the suite sees what the IUT did.

It imports only the standard library, and is run with ``-I -S`` (no site, no current
directory on ``sys.path``): it starts in milliseconds, and nothing of the IUT's
environment can change what it runs. It writes one message on ``STATUS_FD`` and closes it:
``ok PID`` when the IUT was started, ``error: STRERROR`` when it could not be.

What escapes it: a process that someone SIGKILLs *it* with (the suite never does; it sends
SIGTERM), and whatever is no longer a descendant (a process handed to another service).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
KILL_ROUNDS_SECONDS = 10.0  # bound on the clean-up (a tree that forks faster than it is killed)


class _Stop(Exception):
    """A signal asked the reaper to end the tree."""


def _on_signal(signum: int, frame: object) -> None:
    raise _Stop()


def prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def descendants(root: int) -> list[int]:
    """The live (not zombie) descendants of ``root``, read from /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after the command name, which may hold spaces
        if fields[0] == b"Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            out.append(pid)
            todo.append(pid)
    return out


def _reap(main: int, status: int | None) -> tuple[int | None, bool]:
    """Collect every exited child: the main child's wait status once it is known, and
    whether any child is left."""
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status, False
        if pid == 0:
            return status, True
        if pid == main:
            status = st


def kill_tree(main: int, status: int | None) -> int | None:
    """SIGKILL every descendant, round after round (the children of a killed process are
    re-parented to this one and found in the next round), until no child is left."""
    deadline = time.monotonic() + KILL_ROUNDS_SECONDS
    me = os.getpid()
    while time.monotonic() < deadline:
        for pid in descendants(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        status, left = _reap(main, status)
        if not left:
            return status
        time.sleep(0.005)
    return status


def _exit_like(status: int | None) -> None:
    if status is None:
        os._exit(0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the IUT's crash was reported; no core of ours
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # no handler can be set for these (EINVAL): the
            signal.signal(sig, signal.SIG_DFL)            # keeper died of that, and an OOM kill read "status 1"
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def main(argv: list[str]) -> None:
    suite, status_fd, command = int(argv[1]), int(argv[2]), argv[3:]
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != suite:  # the suite died before the request took effect
        os._exit(1)
    os.set_inheritable(status_fd, False)  # the IUT must not hold it: the suite reads it to its end
    main_pid = 0
    status: int | None = None
    try:
        try:
            # SIGPIPE and SIGXFSZ back to their defaults: Python ignores them, a program it starts must not
            main_pid = os.posix_spawnp(command[0], command, os.environ,
                                       setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM,
                                                  signal.SIGINT, signal.SIGHUP))
        except OSError as e:
            os.write(status_fd, f"error: {e.strerror or e}".encode())
            os._exit(127)
        os.write(status_fd, f"ok {main_pid}".encode())
        os.close(status_fd)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the IUT's pipes are held by its own tree only: its exit is seen at once
            os.dup2(null, fd)
        os.close(null)
        while status is None:
            pid, st = os.waitpid(-1, 0)
            if pid == main_pid:
                status = st
    except _Stop:
        pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # the clean-up runs to its end
    status = kill_tree(main_pid, status)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv)
