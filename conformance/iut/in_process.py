"""In-process implementations: ``InProcessIUT`` runs a trusted Python callable (the embedded
oracle, the mutants of ``mutate``) without a process, on a worker thread under the same
timeout; one that does not return in time is abandoned (its thread is asked to stop at its
next Python instruction) and a fresh worker thread serves the next case."""

from __future__ import annotations

import ctypes
import queue
import threading
import traceback
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from dsh_conformance.defaults import DEFAULT_START_TIMEOUT, DEFAULT_TIMEOUT
from dsh_conformance.iut.connection import IUTFailure, first_error, validate_message
from dsh_conformance.iut.protocol import Errored, Skipped, Started, Traced, parse_answer, parse_started, seq_error
from dsh_conformance.oracle.serve import answer, started


class _Abandoned(SystemExit):
    """Raised inside an abandoned worker thread to stop what it runs: not an Exception, so
    that an implementation's ``except Exception`` does not swallow it, and a SystemExit, so
    that a thread it ends is ended silently."""


class Worker:
    """A daemon thread that runs calls one at a time, so that the caller can stop waiting."""

    def __init__(self) -> None:
        self.inbox: queue.Queue[tuple[Callable[[], Any], queue.Queue[tuple[str, Any, str]]]] = queue.Queue()
        self.thread = threading.Thread(target=self._serve, daemon=True, name="dsh-conformance in-process IUT")
        self.thread.start()

    def _serve(self) -> None:
        while True:
            fn, reply = self.inbox.get()
            try:
                reply.put(("ok", fn(), ""))
            except _Abandoned:
                return
            except BaseException as e:  # noqa: BLE001 - whatever the implementation raises is its crash
                reply.put(("raised", e, traceback.format_exc()))
                if not isinstance(e, Exception):
                    return  # SystemExit and the like: this thread is done

    def call(self, fn: Callable[[], Any], timeout: float) -> tuple[str, Any, str]:
        reply: queue.Queue[tuple[str, Any, str]] = queue.Queue()
        self.inbox.put((fn, reply))
        try:
            return reply.get(timeout=timeout)
        except queue.Empty:
            return ("timeout", None, "")

    def abandon(self) -> None:
        """Ask the thread to stop at its next Python instruction (it cannot be killed)."""
        ident = self.thread.ident
        if ident is not None and self.thread.is_alive():
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(_Abandoned))


class InProcessIUT:
    """A Python implementation called directly: ``answer(seq, scenario) -> answer dict``;
    ``started`` is the handshake answer or a function returning it. Each call runs on a
    worker thread under ``timeout``; an exception is the implementation's crash."""

    def __init__(self, started: dict[str, Any] | Callable[[], dict[str, Any]],
                 answer: Callable[[int, dict[str, Any]], dict[str, Any]], validate: bool = False,
                 timeout: float = DEFAULT_TIMEOUT, start_timeout: float = DEFAULT_START_TIMEOUT) -> None:
        self._started = started
        self._answer = answer
        self.validate = validate
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.started: Started | None = None
        self.restarts = 0
        self.pid: int | None = None  # it runs in the suite's process: no process of its own
        self._worker: Worker | None = None

    @property
    def pipeline(self) -> None:
        """Each run is a call that returns its answer: nothing is sent ahead."""
        return None

    def _call(self, fn: Callable[[], Any], limit: float, what: str, kind: str) -> Any:
        if self._worker is None:
            self._worker = Worker()
        status, value, tb = self._worker.call(fn, limit)
        if status == "ok":
            return value
        if status == "timeout":
            self._worker.abandon()
            self._worker = None
            raise IUTFailure(kind if kind == "start" else "timeout",
                             f"no answer to {what} within {limit:g}s (the call was abandoned)")
        if not isinstance(value, Exception):
            self._worker = None  # its thread ended
        raise IUTFailure(kind, f"{what} raised {type(value).__name__}: {value}", tb)

    def start(self) -> Started:
        started = self._started
        if callable(started):
            try:
                doc = self._call(started, self.start_timeout, "started()", "start")
            except IUTFailure as e:
                raise IUTFailure("start", f"handshake failed: {e.message}", e.stderr) from None
        else:
            doc = started
        try:
            if self.validate:
                validate_message("protocol-started", doc)
            self.started = parse_started(doc)
        except (ValidationError, IUTFailure) as e:
            detail = first_error(e) if isinstance(e, ValidationError) else e.message
            raise IUTFailure("start", f"handshake failed: not a valid start answer: {detail}") from None
        return self.started

    def run(self, seq: int, scenario: dict[str, Any]) -> Traced | Skipped | Errored:
        doc = self._call(lambda: self._answer(seq, scenario), self.timeout, f"run {seq}", "crash")
        if not isinstance(doc, dict):
            raise IUTFailure("protocol", f"answer() returned {type(doc).__name__}, not a dict", restart=False)
        if (wrong := seq_error(doc)) is not None:
            raise IUTFailure("invalid" if self.validate else "protocol", f"IUT sent invalid data: {wrong}",
                             restart=False)
        if doc.get("seq") != seq:
            raise IUTFailure("protocol", f"answer for seq {doc.get('seq')!r} while waiting for {seq}", restart=False)
        if self.validate:
            try:
                validate_message("protocol-answer", doc)
            except IUTFailure as e:
                e.restart = False
                raise
        try:
            return parse_answer(doc)
        except ValidationError as e:
            raise IUTFailure("invalid" if self.validate else "protocol", f"IUT sent invalid data: {first_error(e)}",
                             restart=False) from None

    def restart(self) -> Started:
        if self._worker is not None and not self._worker.thread.is_alive():
            self._worker = None
        self.restarts += 1
        return self.start()

    def close(self, graceful: bool = True) -> None:
        if self._worker is not None:
            self._worker.inbox.put((_stop, queue.Queue()))  # an idle worker waits on its inbox
            self._worker = None


def _stop() -> None:
    raise _Abandoned()


def embedded_oracle(validate: bool = False, timeout: float = DEFAULT_TIMEOUT) -> InProcessIUT:
    return InProcessIUT(started, answer, validate, timeout)
