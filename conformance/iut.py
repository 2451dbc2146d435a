"""Connections to implementations under test (IUTs).

``ProcessIUT`` runs a command and speaks the protocol of ``conformance.protocol`` with it:
it owns the timeouts, notices a crash, a hang, garbage on stdout or an answer to another
sequence number, and can restart the process. ``InProcessIUT`` runs a Python callable the
same way without a process (for Python implementations and the embedded oracle).

Every failure of the IUT itself is an ``IUTFailure`` whose ``kind`` becomes the case's
outcome (``timeout``, ``error``, ``invalid``).
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import jsonschema
from pydantic import ValidationError

from oracle import jsontext

from .protocol import Errored, Skipped, Started, Traced, dumps, message_schemas, parse_answer, parse_started


class IUTFailure(Exception):
    """The IUT broke the protocol or its promises. ``kind``: ``start`` (cannot start or
    handshake), ``timeout``, ``crash``, ``invalid`` (schema-invalid data), ``protocol``."""

    def __init__(self, kind: str, message: str, stderr: str = "", restart: bool = True) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.stderr = stderr
        # A well-framed answer with bad content leaves the stream in step: no restart needed.
        self.restart = restart


_SCHEMAS: dict[str, jsonschema.protocols.Validator] = {}


def _validate(name: str, doc: Any) -> None:
    """Schema-check one IUT message (``--validate``) against the protocol catalog."""
    if not _SCHEMAS:
        for file, schema in message_schemas().items():
            _SCHEMAS[file] = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(_SCHEMAS[f"{name}.schema.json"].iter_errors(doc))
    if error is not None:
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise IUTFailure("invalid", f"IUT sent invalid data at {path}: {error.message}")


class ProcessIUT:
    """An IUT behind a command line (``argv``)."""

    def __init__(self, argv: list[str] | str, timeout: float = 30.0, validate: bool = False,
                 cwd: str | None = None, env: dict[str, str] | None = None) -> None:
        self.argv = shlex.split(argv) if isinstance(argv, str) else list(argv)
        self.timeout = timeout
        self.validate = validate
        self.cwd = cwd
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        self.started: Started | None = None
        self.restarts = 0

    # ---------------------------------------------------------------- process

    def start(self) -> Started:
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, encoding="utf-8", errors=jsontext.STREAM_ERRORS, bufsize=1, cwd=self.cwd,
                env={**os.environ, **(self.env or {})})
        except OSError as e:
            raise IUTFailure("start", f"cannot start {shlex.join(self.argv)}: {e.strerror or e}") from None
        self.lines = queue.Queue()
        self.stderr = []
        proc = self.proc
        threading.Thread(target=self._pump_stdout, args=(proc, self.lines), daemon=True).start()
        threading.Thread(target=self._pump_stderr, args=(proc, self.stderr), daemon=True).start()
        try:
            self._send({"cmd": "start", "version": 1})
            doc = self._receive("the handshake")
            if self.validate:
                _validate("protocol-started", doc)
            self.started = parse_started(doc)
        except IUTFailure as e:
            self.close()
            raise IUTFailure("start", f"handshake failed: {e.message}", e.stderr) from None
        except ValidationError as e:
            self.close()
            raise IUTFailure("start", f"handshake failed: not a valid start answer: {_first_error(e)}",
                             self.stderr_text()) from None
        return self.started

    @staticmethod
    def _pump_stdout(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)  # end of stream

    @staticmethod
    def _pump_stderr(proc: subprocess.Popen[str], sink: list[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if len(sink) < 2000:  # keep the log bounded: a chatty IUT must not exhaust memory
                sink.append(line)

    def stderr_text(self) -> str:
        return "".join(self.stderr[-50:])

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(dumps(msg))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise IUTFailure("crash", f"the IUT exited (status {self.proc.poll()})", self.stderr_text()) from None

    def _receive(self, what: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(remaining, 0.001))
            except queue.Empty:
                raise IUTFailure("timeout", f"no answer to {what} within {self.timeout:g}s", self.stderr_text()) from None
            if line is None:
                assert self.proc is not None
                status = self.proc.wait()
                raise IUTFailure("crash", f"the IUT exited (status {status}) before answering {what}",
                                 self.stderr_text())
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                raise IUTFailure("protocol", f"not a JSON line on stdout: {line[:200]!r}", self.stderr_text()) from None
            if not isinstance(doc, dict):
                raise IUTFailure("protocol", f"not a JSON object on stdout: {line[:200]!r}", self.stderr_text())
            return doc

    def run(self, seq: int, scenario: dict[str, Any]) -> Traced | Skipped | Errored:
        if self.proc is None or self.proc.poll() is not None:
            self.restart()
        self._send({"cmd": "run", "seq": seq, "scenario": scenario})
        doc = self._receive(f"run {seq}")
        if doc.get("seq") != seq:
            raise IUTFailure("protocol", f"answer for seq {doc.get('seq')!r} while waiting for {seq}", self.stderr_text())
        if self.validate:
            try:
                _validate("protocol-answer", doc)
            except IUTFailure as e:
                e.restart = False
                raise
        try:
            return parse_answer(doc)
        except ValidationError as e:
            kind = "invalid" if self.validate else "protocol"
            raise IUTFailure(kind, f"IUT sent invalid data: {_first_error(e)}", self.stderr_text(),
                             restart=False) from None

    def restart(self) -> Started:
        self.close()
        self.restarts += 1
        return self.start()

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.write(dumps({"cmd": "stop"}))
                proc.stdin.flush()
                proc.stdin.close()
                proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                proc.kill()
                proc.wait()
        for stream in (proc.stdout, proc.stderr, proc.stdin):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def __enter__(self) -> "ProcessIUT":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_error(e: ValidationError) -> str:
    err = e.errors(include_url=False)[0]
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
    return f"{path}: {err['msg']}"


class InProcessIUT:
    """A Python implementation called directly: ``answer(seq, scenario) -> answer dict``."""

    def __init__(self, started: dict[str, Any], answer: Callable[[int, dict[str, Any]], dict[str, Any]],
                 validate: bool = False) -> None:
        self._started = started
        self._answer = answer
        self.validate = validate
        self.started: Started | None = None
        self.restarts = 0

    def start(self) -> Started:
        self.started = parse_started(self._started)
        return self.started

    def run(self, seq: int, scenario: dict[str, Any]) -> Traced | Skipped | Errored:
        doc = self._answer(seq, scenario)
        if self.validate:
            _validate("protocol-answer", doc)
        try:
            return parse_answer(doc)
        except ValidationError as e:
            raise IUTFailure("invalid" if self.validate else "protocol", f"IUT sent invalid data: {_first_error(e)}") from None

    def restart(self) -> Started:
        self.restarts += 1
        return self.start()

    def close(self) -> None:
        pass


def embedded_oracle(validate: bool = False) -> InProcessIUT:
    from oracle.serve import answer, started

    return InProcessIUT(started(), answer, validate)
