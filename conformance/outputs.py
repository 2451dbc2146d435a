"""Files the suite writes, so that a reader never sees a torn one.

- ``write_atomic``: the whole text goes to a temporary file beside the target, which is then
  renamed onto it (a rename within a directory is atomic on POSIX): a reader sees the old
  file or the new one, never a mix.
- ``OutputLock``: a run holds an exclusive lock on each path it writes (an ``flock`` on a
  hidden ``.NAME.lock`` beside it, released by the kernel when the process dies, removed at
  the end), so that a second run asked to write the same path is refused at once instead
  of both corrupting it.
- ``check_writable``: a path can be written (its directory exists and is writable), asked
  before any work so that a bad ``--report`` or ``--junit`` fails in the first second, not
  after the whole run.
"""

from __future__ import annotations

import errno
import fcntl
import os
import tempfile
from pathlib import Path


class OutputError(Exception):
    """A path the suite cannot write, or one that another run is writing."""


def write_atomic(path: str | Path, text: str) -> None:
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def check_writable(path: str | Path, option: str) -> Path:
    """The path as given, or OutputError naming the option and what is wrong with it."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise OutputError(f"{option} {p}: is a directory")
    if not parent.is_dir():
        raise OutputError(f"{option} {p}: no such directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {p}: the directory {parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputError(f"{option} {p}: the file is not writable")
    return p


class OutputLock:
    """An exclusive hold on ``path`` for this process (see the module's doc)."""

    def __init__(self, path: str | Path, option: str) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(f".{self.path.name}.lock")
        self.option = option
        self.fd: int | None = None

    def acquire(self) -> "OutputLock":
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                holder = _read_pid(fd)
                os.close(fd)
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    who = f" (process {holder})" if holder else ""
                    raise OutputError(f"{self.option} {self.path}: another run{who} is writing this file; "
                                      "wait for it or choose another path") from None
                raise
            # The holder before us may have removed the lock file after we opened it: then
            # our lock is on a file nobody else will see; start over on the current one.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self.fd = fd
                return self
            os.close(fd)

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.lock_path)  # while still holding it: see acquire
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> "OutputLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_pid(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode().strip()
    except (OSError, UnicodeDecodeError):
        return ""
