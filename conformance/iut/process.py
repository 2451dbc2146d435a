"""Process implementations: ``ProcessIUT`` runs a command and speaks the line protocol with it
(``iut.protocol``): it owns the timeouts, notices a crash, a hang, garbage on stdout or an
answer to another sequence number, and can restart the process, whose whole tree its keeper
(``iut.reaper``) ends on Linux. ``PythonIUT`` is a ``ProcessIUT`` that serves a Python
implementation module (``py:MODULE``) from a worker process of its own (``iut.python_host``).
What is guaranteed whatever the process does: ``iut.connection``'s docstring."""

from __future__ import annotations

import collections
import json
import os
import queue
import select
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dsh_conformance.defaults import DEFAULT_START_TIMEOUT, DEFAULT_TIMEOUT
from dsh_conformance.iut.connection import IUTFailure, NotAnImplementation, ended, first_error, validate_message
from dsh_conformance.iut.protocol import (
    Errored,
    Skipped,
    Started,
    Traced,
    dumps,
    parse_answer,
    parse_started,
    seq_error,
)
from dsh_conformance.iut.python_host import MARK, USAGE_STATUS
from dsh_conformance.kit.jsonio import MAX_MESSAGE_DEPTH, InputLimitError, loads


EXIT_GRACE = 2.0  # seconds between noticing the IUT's exit and deciding that no answer is coming


STOP_GRACE = 5.0  # seconds an IUT has to exit after {"cmd":"stop"} before its group is killed


MAX_LINE_BYTES = 64 * 1024 * 1024  # one protocol line from the IUT


STDERR_TAIL_BYTES = 64 * 1024  # how much of the IUT's log is kept


_POLL = 0.2  # seconds between looks at a silent process


REAPER = Path(__file__).with_name("reaper.py")


# The reaper needs Linux's prctl (a child subreaper, a signal when its parent dies); elsewhere
# the IUT is started directly and its process group is what is killed.
REAPED = sys.platform.startswith("linux")


class _Log:
    """The tail of a process's stderr, filled by its pump thread."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        with self.lock:
            self.data += chunk
            if len(self.data) > 2 * STDERR_TAIL_BYTES:  # keep it bounded: a chatty IUT must not exhaust memory
                del self.data[:-STDERR_TAIL_BYTES]

    def text(self, lines: int = 50) -> str:
        with self.lock:
            data = bytes(self.data[-STDERR_TAIL_BYTES:])
        return "".join(data.decode("utf-8", errors="replace").splitlines(keepends=True)[-lines:])


_LIVE: "weakref.WeakSet[ProcessIUT]" = weakref.WeakSet()  # started and not closed (kill_all)
_TOO_LONG: Any = object()  # a line over MAX_LINE_BYTES
_EOF = None  # the stdout pump's last item: end of stream


class ProcessIUT:
    """An IUT behind a command line (``argv``)."""

    def __init__(self, argv: list[str] | str, timeout: float = DEFAULT_TIMEOUT, validate: bool = False,
                 cwd: str | None = None, env: dict[str, str] | None = None,
                 start_timeout: float = DEFAULT_START_TIMEOUT) -> None:
        self.argv = shlex.split(argv) if isinstance(argv, str) else list(argv)
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.validate = validate
        self.cwd = cwd
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None  # the IUT's own process (proc is its reaper on Linux)
        self.lines: queue.Queue[Any] = queue.Queue()
        self.log = _Log()
        self.started: Started | None = None
        self.restarts = 0
        self.generation = 0  # counts the processes started: a run sent to an earlier one is lost
        # Runs sent and not answered yet, in order: (seq, when it was sent). The IUT answers one
        # run at a time, in order; the runner may send the next before reading an answer.
        self.pending: collections.deque[tuple[int, float]] = collections.deque()
        self.answered_at = 0.0  # when the latest answer arrived
        self._stderr_pump: threading.Thread | None = None

    @property
    def pipeline(self) -> ProcessIUT:
        """Runs may be sent ahead (``submit``, ``collect``): the process reads its input
        while the suite judges the answer before (``connect.IUT.pipeline``)."""
        return self

    # ---------------------------------------------------------------- process

    def _not_started(self, why: str) -> str:
        """Why the command did not start, naming the program when it is what is missing: "node"
        not on PATH reads otherwise as a missing adapter file (issue 44)."""
        program = self.argv[0] if self.argv else ""
        if program and os.sep not in program:
            path = {**os.environ, **(self.env or {})}.get("PATH", os.defpath)
            if shutil.which(program, path=path) is None:
                return f"the program {program!r} is not on PATH ({why})"
        elif program and not Path(self.cwd or ".", program).exists():
            return f"no such program: {program} ({why})"
        return why

    def start(self) -> Started:
        self.generation += 1
        self.pending.clear()
        self.pid = None
        status_r, status_w = os.pipe() if REAPED else (-1, -1)
        try:
            # A session of its own: the IUT and everything it starts form one process group
            # that close() can end, and a Ctrl-C on the suite's terminal is the suite's to handle.
            # On Linux the IUT is started by its reaper (conformance/iut/reaper.py), which ends its
            # whole tree, also when the suite itself is killed.
            argv = ([sys.executable, "-I", "-S", str(REAPER), str(os.getpid()), str(status_w), *self.argv]
                    if REAPED else self.argv)
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=self.cwd, env={**os.environ, **(self.env or {})}, start_new_session=True,
                pass_fds=(status_w,) if REAPED else ())
        except (OSError, ValueError) as e:
            if REAPED:
                os.close(status_r)
                os.close(status_w)
            raise IUTFailure("start", f"cannot start {shlex.join(self.argv)}: "
                             f"{self._not_started(getattr(e, 'strerror', None) or str(e))}") from None
        _LIVE.add(self)
        if REAPED:
            os.close(status_w)
            started = _read_status(status_r, self.start_timeout)
            if not started.startswith("ok "):
                self.close(graceful=False)
                why = started.removeprefix("error: ") or "its reaper exited"
                raise IUTFailure("start", f"cannot start {shlex.join(self.argv)}: {self._not_started(why)}")
            self.pid = int(started[3:])
        else:
            self.pid = self.proc.pid
        self.lines = queue.Queue()
        self.log = _Log()
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        os.set_blocking(proc.stdin.fileno(), False)  # writes are bounded by the deadline (_send)
        threading.Thread(target=_pump_stdout, args=(proc.stdout, self.lines), daemon=True).start()
        self._stderr_pump = threading.Thread(target=_pump_stderr, args=(proc.stderr, self.log), daemon=True)
        self._stderr_pump.start()
        try:
            deadline = time.monotonic() + self.start_timeout
            self._send({"cmd": "start", "version": 1}, deadline, "the handshake", self.start_timeout)
            doc = self._receive("the handshake", deadline, self.start_timeout)
            if self.validate:
                validate_message("protocol-started", doc)
            self.started = parse_started(doc)
        except IUTFailure as e:
            self.close(graceful=False)
            raise IUTFailure("start", f"handshake failed: {e.message}", e.stderr) from None
        except ValidationError as e:
            stderr = self.stderr_text()
            self.close(graceful=False)
            raise IUTFailure("start", f"handshake failed: not a valid start answer: {first_error(e)}", stderr) from None
        return self.started

    def stderr_text(self) -> str:
        # An IUT that exited may have written its last words an instant before its stdout
        # closed: give the stderr pump a moment to take them in (a descendant that keeps the
        # pipe open costs at most that moment).
        pump = getattr(self, "_stderr_pump", None)
        if pump is not None and self.proc is not None and self.proc.poll() is not None:
            pump.join(timeout=1.0)
        return self.log.text()

    def _send(self, msg: dict[str, Any] | str, deadline: float, what: str, limit: float) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        data = memoryview((msg if isinstance(msg, str) else dumps(msg)).encode("utf-8"))
        fd = self.proc.stdin.fileno()
        while data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise IUTFailure("timeout", f"the IUT did not read {what} within {limit:g}s", self.stderr_text())
            try:
                _, writable, _ = select.select([], [fd], [], remaining)
                if writable:
                    data = data[os.write(fd, data):]
            except BlockingIOError:
                continue
            except OSError:  # EPIPE: nobody reads the other end any more
                status = self.proc.poll()
                raise IUTFailure("crash", f"the IUT {ended(status)}" if status is not None else
                                 "the IUT closed its stdin", self.stderr_text()) from None

    def _receive(self, what: str, deadline: float, limit: float) -> dict[str, Any]:
        assert self.proc is not None
        exited_at: float | None = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise IUTFailure("timeout", f"no answer to {what} within {limit:g}s", self.stderr_text())
            try:
                line = self.lines.get(timeout=min(remaining, _POLL))
            except queue.Empty:
                status = self.proc.poll()
                if status is not None:
                    # It exited, but its stdout is still open: a process it started holds the pipe.
                    exited_at = exited_at or time.monotonic()
                    if time.monotonic() - exited_at >= EXIT_GRACE:
                        raise IUTFailure("crash", f"the IUT {ended(status)} before answering {what} "
                                                  "(a process it started still holds its stdout)", self.stderr_text())
                continue
            if line is _EOF:
                try:
                    status = self.proc.wait(timeout=EXIT_GRACE)
                except subprocess.TimeoutExpired:
                    raise IUTFailure("crash", f"the IUT closed its stdout before answering {what} and did not exit",
                                     self.stderr_text()) from None
                raise IUTFailure("crash", f"the IUT {ended(status)} before answering {what}",
                                 self.stderr_text())
            if line is _TOO_LONG:
                raise IUTFailure("protocol", f"a line on stdout longer than {MAX_LINE_BYTES} bytes", self.stderr_text())
            if not line.strip():
                continue
            try:
                doc = loads(line, MAX_MESSAGE_DEPTH, surrogates=True)  # the input limits of kit.jsonio
            except InputLimitError as e:
                if e.message.startswith("not JSON"):
                    raise IUTFailure("protocol", f"not a JSON line on stdout: {line[:200]!r}", self.stderr_text()) from None
                raise IUTFailure("protocol", f"an unreadable line on stdout ({e}): {line[:200]!r}",
                                 self.stderr_text()) from None
            if not isinstance(doc, dict):
                raise IUTFailure("protocol", f"not a JSON object on stdout: {line[:200]!r}", self.stderr_text())
            return doc

    def run(self, seq: int, scenario: dict[str, Any]) -> Traced | Skipped | Errored:
        self.submit(seq, scenario)
        return self.collect(seq)

    def submit(self, seq: int, scenario: dict[str, Any], text: str | None = None) -> None:
        """Send run ``seq``; ``collect`` reads its answer. A run sent while another is still
        unanswered waits its turn: its time starts when the answer before it arrives.
        ``text``: the scenario's compact JSON text (``protocol.dumps``' encoding), when it is
        at hand: the message is spliced around it, the same bytes, not encoded again."""
        if self.proc is None or self.proc.poll() is not None:
            if self.pending:  # the runs before this one are lost with it: collect() says so first
                raise IUTFailure("crash", "the IUT exited with runs unanswered", self.stderr_text())
            self.restart()
        sent_at = time.monotonic()
        message = run_message(seq, scenario, text)
        self._send(message, sent_at + self.timeout, f"run {seq}", self.timeout)
        self.pending.append((seq, sent_at))

    def collect(self, seq: int) -> Traced | Skipped | Errored:
        """The answer to run ``seq``, the oldest run sent and not answered yet."""
        sent, sent_at = self.pending.popleft()
        assert sent == seq, f"collect({seq}) while run {sent} is the oldest unanswered"
        deadline = max(sent_at, self.answered_at) + self.timeout
        doc = self._receive(f"run {seq}", deadline, self.timeout)
        self.answered_at = time.monotonic()
        if (wrong := seq_error(doc)) is not None:
            raise IUTFailure("invalid" if self.validate else "protocol", f"IUT sent invalid data: {wrong}",
                             self.stderr_text(), restart=False)
        if doc.get("seq") != seq:
            raise IUTFailure("protocol", f"answer for seq {doc.get('seq')!r} while waiting for {seq}", self.stderr_text())
        if self.validate:
            try:
                validate_message("protocol-answer", doc)
            except IUTFailure as e:
                e.restart = False
                raise
        try:
            return parse_answer(doc)
        except ValidationError as e:
            kind = "invalid" if self.validate else "protocol"
            raise IUTFailure(kind, f"IUT sent invalid data: {first_error(e)}", self.stderr_text(),
                             restart=False) from None

    def restart(self) -> Started:
        self.close(graceful=False)  # it hung, crashed or broke the protocol: no stop message
        self.restarts += 1
        return self.start()

    def close(self, graceful: bool = True) -> None:
        """End the IUT and its whole process group: asked to stop first when ``graceful``
        (up to ``STOP_GRACE`` seconds), killed otherwise. Never waits unbounded."""
        proc, self.proc = self.proc, None
        self.pending.clear()  # whatever was sent to it is lost
        if proc is None:
            return
        assert proc.stdin is not None
        if graceful and proc.poll() is None:
            try:  # non-blocking: an IUT that does not read its input has no say in how long this takes
                os.write(proc.stdin.fileno(), dumps({"cmd": "stop"}).encode())
            except OSError:
                pass
        try:
            proc.stdin.close()  # end of input: an IUT that reads to the end exits
        except OSError:
            pass
        if graceful:
            try:
                proc.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                pass
        _LIVE.discard(self)
        if REAPED and proc.poll() is None:
            # Its reaper ends the whole tree, whatever group or session a descendant moved to
            # (SIGKILL to the group could end the reaper first and leave those behind).
            try:
                os.kill(proc.pid, signal.SIGTERM)
                proc.wait(timeout=STOP_GRACE)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        # The group outlives its leader: children of an IUT that exited are still in it.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            pass  # a process in uninterruptible sleep: the kernel ends it when it can
        # stdout and stderr are closed by their pump threads at end of stream: closing a
        # stream another thread is blocked reading would block until that read returns.

    def __enter__(self) -> "ProcessIUT":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_message(seq: int, scenario: dict[str, Any], text: str | None = None) -> str:
    """The protocol line of run ``seq``: ``dumps({"cmd": "run", "seq": seq, "scenario":
    scenario})``, spliced around ``text`` (the scenario's text in that encoding: compact, a
    member's text does not depend on where it stands) when it is given."""
    if text is None:
        return dumps({"cmd": "run", "seq": seq, "scenario": scenario})
    return f'{{"cmd":"run","seq":{int(seq)},"scenario":{text}}}\n'


def _read_status(fd: int, limit: float) -> str:
    """The reaper's word on the start: ``ok PID`` or ``error: WHY`` (empty: it died first)."""
    data = b""
    deadline = time.monotonic() + limit
    try:
        while (remaining := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def kill_all() -> None:
    """End every process IUT still running, at once (a forced exit: no stop message, no
    waiting). On Linux their reapers end their trees, and would when the suite exits anyway."""
    for iut in list(_LIVE):
        proc = iut.proc
        if proc is None:
            continue
        try:
            if REAPED:
                os.kill(proc.pid, signal.SIGTERM)
            else:
                os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass


def _pump_stdout(stream: Any, lines: queue.Queue[Any]) -> None:
    try:
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if len(line) > MAX_LINE_BYTES:
                lines.put(_TOO_LONG)
                break  # the IUT is restarted; what follows is not read
            lines.put(line)
    except (OSError, ValueError):
        pass
    finally:
        lines.put(_EOF)
        try:
            stream.close()
        except OSError:
            pass


def _pump_stderr(stream: Any, log: _Log) -> None:
    try:
        while chunk := stream.read1(65536):
            log.add(chunk)
    except (OSError, ValueError):
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass


_HOST_BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[2]); "
              "from dsh_conformance.iut.python_host import main; main(sys.argv)")


class PythonIUT(ProcessIUT):
    """A Python implementation module (``py:MODULE``), run in a worker process of its own
    (``conformance.python_host``) and spoken to over the protocol, as any process IUT: its
    death is a crash, its threads die with it, and it cannot patch the judging process. A
    crash message is the host's own account of it (``answer() raised ValueError: ...``)."""

    def __init__(self, module: str, timeout: float = DEFAULT_TIMEOUT, validate: bool = False,
                 start_timeout: float = DEFAULT_START_TIMEOUT) -> None:

        self.module = module
        super().__init__([sys.executable, "-c", _HOST_BOOT, module, json.dumps(sys.path)], timeout, validate,
                         start_timeout=start_timeout)

    def _host_says(self) -> str | None:
        """The host's last word on stderr (why it ended), once its stderr has been read to the end."""
        if self._stderr_pump is not None:
            self._stderr_pump.join(timeout=EXIT_GRACE)
        said = [line[len(MARK):] for line in self.log.text(200).splitlines() if line.startswith(MARK)]
        return said[-1] if said else None

    def start(self) -> Started:
        try:
            return super().start()
        except IUTFailure as e:
            said = self._host_says()
            if said is None:
                raise
            if f"(status {USAGE_STATUS})" in e.message:
                raise NotAnImplementation(f"--impl py:{self.module}: {said}") from None
            raise IUTFailure("start", f"handshake failed: {said}", e.stderr) from None

    def collect(self, seq: int) -> Traced | Skipped | Errored:
        try:
            return super().collect(seq)
        except IUTFailure as e:
            if e.kind == "crash" and (said := self._host_says()) is not None:
                e.message = said
            raise
