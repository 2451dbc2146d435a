"""Files the suite writes, so that a reader never sees a torn one, and no planted link or
full disk turns a write into damage or a traceback.

- ``write_atomic``: the whole text goes to a temporary file beside the target (created with
  ``O_EXCL``, so never through a planted link), which is then renamed onto it (a rename
  within a directory is atomic on POSIX, and replaces a symbolic link at the target
  itself, never the file it points to): a reader sees the old file or the new one, never a
  mix. The file gets the mode a new file gets under the umask (0644 under umask 022), or
  the mode of the regular file it replaces.
- ``OutputLock``: a run holds an exclusive lock on each path it writes (an ``flock`` on a
  hidden ``.NAME.lock`` beside it, released by the kernel when the process dies, removed at
  the end), so that a second run asked to write the same path is refused at once instead
  of both corrupting it. The lock file is opened with ``O_NOFOLLOW`` and must be a regular
  file of one link: a symbolic or hard link planted there is refused, never written through.
- ``check_writable``: a path can be written (its directory exists and is writable, it is
  no directory, device or pipe), asked before any work so that a bad ``--report`` or
  ``--junit`` fails in the first second, not after the whole run. ``check_distinct``: an
  output is none of the command's inputs.

A write that fails once the work has begun (a full disk) raises ``OutputWriteError``: the
command says which file could not be completed and exits ``EXIT_OUTPUT`` (4).

- ``Ledger``: what a run wrote at each output (device, inode, size and a running SHA-256
  of the bytes it wrote), so that a file another process put in its place or changed
  while an implementation ran (a hostile one ``os.replace``-ing a forged all-pass report
  onto the ``--report`` path it read from the suite's command line) is found, checked
  before the footer and at the end, said in one line, removed, and exit 4: a file at an
  output path is one the suite can vouch for, or none. ``clear``: an earlier run's outputs
  are removed when a run starts, so that a run that fails before its report begins leaves
  no earlier green file standing for it.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import TextIO

from dsh_conformance.textio.terminal import one_line

EXIT_OUTPUT = 4  # an output could not be written completely once the work had begun


class OutputError(Exception):
    """A path the suite cannot write, or one that another run is writing (found before any work)."""


class OutputWriteError(OutputError):
    """A write that failed once the work had begun (a full disk, a file system gone read-only)."""


class OutputTampered(OutputWriteError):
    """A file the run wrote was replaced or changed by another process (see ``Ledger``)."""


def _umask() -> int:
    # Read where the kernel shows it: setting it to read it back would, for an instant, give
    # another thread's new files the wrong mode.
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    """The mode of the regular file ``path`` replaces, else that of a new file under the umask."""
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except OSError:
        pass
    return 0o666 & ~_umask()


def write_atomic(path: str | Path, text: str | bytes, ledger: "Ledger | None" = None) -> os.stat_result:
    """Replace ``path`` whole by ``text``; OutputWriteError (one line) if it cannot be done.
    The new file's status (its device and inode); with a ``ledger``, the file is recorded in
    it (see ``Ledger``)."""
    p = Path(path)
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
    except OSError as e:
        raise OutputWriteError(f"{p}: cannot write: {e.strerror or e}") from None
    try:
        os.fchmod(fd, _mode_for(p))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            st = os.fstat(f.fileno())  # a rename keeps the device and inode: what the ledger checks
        os.replace(tmp, p)
        if ledger is not None:
            ledger.add(Written(p, st, data))
        return st
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise OutputWriteError(f"{p}: cannot write: {e.strerror or e}; the file was left as it was") from None
        raise


def create_new(path: Path, data: bytes) -> None:
    """Create ``path`` holding ``data``, exclusively: never replaces or follows anything that
    is already there, or a link planted meanwhile (what ``kit py`` and ``kit js`` write)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except FileExistsError:
        raise OutputError(f"{path}: appeared while the kit was being written; nothing there was overwritten") from None
    except OSError as e:
        raise OutputWriteError(f"{path}: cannot create: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError as e:
        raise OutputWriteError(f"{path}: cannot write: {e.strerror or e}; the file is incomplete") from None


def holds(path: str | Path, text: str) -> bool:
    """Whether ``path`` is a regular file (not a link, a pipe or a device) holding ``text``:
    read only then, and only as many bytes as the text has."""
    data = text.encode("utf-8", "surrogatepass")
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
            return False
        with open(path, "rb") as f:
            return f.read(len(data) + 1) == data
    except OSError:
        return False


def _probe(directory: Path) -> str | None:
    """Why a file cannot be created in ``directory`` (a read-only mount, an immutable
    directory), asked by creating one: root passes every mode-bit check."""
    try:
        with tempfile.TemporaryFile(dir=directory, prefix=".dsh-conformance-probe."):
            return None
    except OSError as e:
        return e.strerror or str(e)


def _nameable(p: Path, option: str) -> None:
    """OutputError (one line) for a path the system cannot even look up: a name too long
    (ENAMETOOLONG; pathlib's ``exists`` raises it as a traceback), no search permission."""
    try:
        os.stat(p)
    except OSError as e:
        if e.errno not in (errno.ENOENT, errno.ENOTDIR):
            raise OutputError(f"{option} {p}: {e.strerror or e}") from None


def check_writable(path: str | Path, option: str) -> Path:
    """The path as given, or OutputError naming the option and what is wrong with it."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    _nameable(p, option)
    if p.is_dir():
        raise OutputError(f"{option} {p}: is a directory")
    if not parent.is_dir():
        raise OutputError(f"{option} {p}: no such directory {parent}")
    try:
        st = os.stat(p)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{option} {p}: not a regular file (a device, a pipe or a socket); name a file")
    problem = _probe(parent)
    if problem is not None:
        raise OutputError(f"{option} {p}: the directory {parent} is not writable ({problem})")
    if st is not None and not os.access(p, os.W_OK):
        raise OutputError(f"{option} {p}: the file is not writable")
    return p


def check_directory(path: str | Path, option: str, create: bool = True) -> Path:
    """A directory the suite writes files in, checked before any work: created when missing
    (``create``), else the nearest directory that exists must be one files can be created in."""
    p = Path(path)
    _nameable(p, option)
    if p.exists() and not p.is_dir():
        raise OutputError(f"{option} {p}: not a directory")
    if create:
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"{option} {p}: cannot create the directory ({e.strerror or e})") from None
    existing = p
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"{option} {p}: {existing} is not a directory")
    problem = _probe(existing)
    if problem is not None:
        raise OutputError(f"{option} {p}: the directory {existing} is not writable ({problem})")
    return p


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(os.path.abspath(a)) == Path(os.path.abspath(b))


def check_distinct(output: str | Path, option: str, inputs: list[str | Path]) -> None:
    """OutputError if ``output`` is one of ``inputs`` (writing it would replace what is read)."""
    for given in inputs:
        if _same(Path(output), Path(given)):
            raise OutputError(f"{option} {output}: the same file as the input {given}; writing it would replace "
                              "what is read (choose another path)")


def incomplete_outputs(problems: list[str | None], stream: TextIO) -> int:
    """EXIT_OUTPUT after saying on ``stream`` what could not be written (a report cut short
    by a full disk, a counterexample not saved), else 0: a run whose outputs are incomplete
    says so."""
    found = [p for p in problems if p]
    for p in found:
        stream.write(f"error: {one_line(p)}\n")
    return EXIT_OUTPUT if found else 0


class OutputLock:
    """An exclusive hold on ``path`` for this process (see the module's doc)."""

    def __init__(self, path: str | Path, option: str) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(f".{self.path.name}.lock")
        self.option = option
        self.fd: int | None = None

    def _open(self) -> int:
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise OutputError(f"{self.option} {self.path}: its lock file {self.lock_path} is a symbolic link; "
                                  "the suite does not write through it (remove it)") from None
            raise OutputError(f"{self.option} {self.path}: cannot create its lock file {self.lock_path} "
                              f"({e.strerror or e})") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            what = "not a regular file" if not stat.S_ISREG(st.st_mode) else f"a file of {st.st_nlink} links"
            raise OutputError(f"{self.option} {self.path}: its lock file {self.lock_path} is {what}; the suite "
                              "does not write it (remove it)")
        return fd

    def acquire(self) -> "OutputLock":
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                holder = _read_pid(fd)
                os.close(fd)
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    who = f" (process {holder})" if holder else ""
                    raise OutputError(f"{self.option} {self.path}: another run{who} is writing this file; "
                                      "wait for it or choose another path") from None
                raise OutputError(f"{self.option} {self.path}: cannot lock {self.lock_path} ({e.strerror})") from None
            # The holder before us may have removed the lock file after we opened it: then
            # our lock is on a file nobody else will see; start over on the current one.
            if self._still_ours(fd):
                try:
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{os.getpid()}\n".encode())
                except OSError:
                    pass  # the pid is a courtesy to a second run's message; a full disk does not refuse the lock
                self.fd = fd
                return self
            os.close(fd)

    def _still_ours(self, fd: int) -> bool:
        try:
            return os.fstat(fd).st_ino == os.lstat(self.lock_path).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        if self.fd is None:
            return
        # While still holding it (see acquire), and only the file we hold: never a link or
        # file put in its place since.
        if self._still_ours(self.fd):
            try:
                os.unlink(self.lock_path)
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


class Written:
    """What the suite wrote at one output path: the file's device and inode, how many bytes
    it wrote and a running digest of them, to tell that the file at the path is still the
    one the suite wrote, holding exactly what it wrote (see ``Ledger``)."""

    def __init__(self, path: Path, st: os.stat_result, data: bytes = b"") -> None:
        self.path = path
        self.key = (st.st_dev, st.st_ino)
        self.size = 0
        self.digest = hashlib.sha256()
        self.spoiled: str | None = None  # the first problem found: a file once forged stays untrusted
        self.append(data)

    def append(self, data: bytes) -> None:
        self.size += len(data)
        self.digest.update(data)

    def check(self) -> str | None:
        """``problem``, kept in ``spoiled`` once found (a forger that puts the bytes back
        later does not make the file the run's again: it has no footer)."""
        if self.spoiled is None:
            self.spoiled = self._problem()
        return self.spoiled

    def _problem(self) -> str | None:
        """Why the file at the path is not the one the suite wrote, or None."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return f"{self.path}: removed by another process while the run wrote it"
        except OSError as e:
            if e.errno == errno.ELOOP:
                return f"{self.path}: replaced by a symbolic link while the run wrote it"
            return f"{self.path}: cannot be read back ({e.strerror or e})"
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != self.key:
                return f"{self.path}: replaced by another file while the run wrote it (not the file the run wrote)"
            if st.st_size != self.size:
                return (f"{self.path}: changed by another process while the run wrote it ({st.st_size} bytes, "
                        f"the run wrote {self.size})")
            digest = hashlib.sha256()
            while chunk := os.read(fd, 1 << 20):
                digest.update(chunk)
            if digest.digest() != self.digest.digest():
                return f"{self.path}: changed by another process while the run wrote it (not the bytes the run wrote)"
            return None
        finally:
            os.close(fd)


class Ledger:
    """The outputs a run wrote (``Written``), checked before its report's footer and at its
    end: a file replaced, changed or removed by another process (an implementation runs with
    the user's rights and can reach every file the user can) is said in one line and exit 4,
    and removed, so that no file the suite cannot vouch for stands at an output path."""

    def __init__(self) -> None:
        self.files: dict[Path, Written] = {}

    def add(self, written: Written) -> None:
        self.files[written.path] = written

    def forget(self, path: Path) -> None:
        """No longer vouch for ``path`` (a write to it failed: said as incomplete already)."""
        self.files.pop(path, None)

    def problems(self) -> list[str]:
        return [p for w in self.files.values() if (p := w.check())]

    def settle(self) -> list[str]:
        """The problems, each with the foreign file removed (the link itself, never its
        target: ``unlink`` does not follow one)."""
        found = []
        for w in self.files.values():
            p = w.check()
            if p is None:
                continue
            try:
                os.unlink(w.path)
                p += "; it was removed, since the suite cannot vouch for it"
            except FileNotFoundError:
                pass
            except OSError as e:
                p += f"; it could not be removed ({e.strerror or e}): do not trust it"
            found.append(p)
        return found


def clear(paths: list[Path]) -> None:
    """Remove the files at ``paths`` (an earlier run's outputs) as a run starts, so that a
    run that fails before it writes them (a handshake refused, exit 3) leaves none of an
    earlier run standing for it. A directory or a missing file is left; a symbolic link is
    removed, never its target. OutputError if one cannot be removed."""
    for p in paths:
        try:
            if stat.S_ISDIR(os.lstat(p).st_mode):
                continue
            os.unlink(p)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise OutputError(f"{p}: cannot remove the previous file ({e.strerror or e}); a run does not leave an "
                              "earlier run's output in place") from None
