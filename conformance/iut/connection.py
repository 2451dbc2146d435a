"""Connections to implementations under test (IUTs): what every kind shares (``IUTFailure``,
the schema check of ``--validate``), and what each kind guarantees. The kinds:
``iut.process`` (``ProcessIUT``, ``PythonIUT``) and ``iut.in_process`` (``InProcessIUT``).

``ProcessIUT`` runs a command and speaks the protocol of ``conformance.protocol`` with it:
it owns the timeouts, notices a crash, a hang, garbage on stdout or an answer to another
sequence number, and can restart the process. ``PythonIUT`` is a ``ProcessIUT`` that serves
a Python implementation module (``py:MODULE``) from a worker process of its own
(``conformance.python_host``). ``InProcessIUT`` runs a trusted Python callable (the
embedded oracle, the mutants of ``mutate``) without a process, on a worker thread under the
same timeout.

Every failure of the IUT itself is an ``IUTFailure`` whose ``kind`` becomes the case's
outcome (``timeout``, ``error``, ``invalid``).

What is guaranteed, whatever the IUT does (docs/reference/reliability.md):

- no wait is unbounded: the handshake has ``start_timeout``, every run ``timeout`` (writing
  the scenario to a process that does not read counts into it), a process that closes its
  stdout or exits is noticed within ``EXIT_GRACE`` seconds even when a process it started
  still holds the pipe;
- a process IUT is started in a session of its own and, on Linux, by its keeper
  (``conformance.reaper``), which ends the IUT's whole tree (descendants that left its
  process group or session included) when the IUT exits, when it is restarted or closed,
  and when the suite dies, even by SIGKILL; elsewhere its process group is killed;
- an in-process IUT that does not return in time is abandoned: its thread is asked to stop
  (an exception raised inside it at its next Python instruction) and a fresh worker thread
  serves the next case.
"""

from __future__ import annotations

import signal
from typing import Any

import jsonschema
from pydantic import ValidationError

from dsh_conformance.iut.protocol import message_schemas


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


# The failures that count towards declaring an IUT broken (the runner's early stop).
HARD_FAILURES = frozenset({"timeout", "crash", "start"})


_SCHEMAS: dict[str, jsonschema.protocols.Validator] = {}


def ended(status: int) -> str:
    """How a process ended, from its return code: ``exited (status 1)``, or ``was killed by
    signal 9 (SIGKILL)`` (the OOM killer's, say; a negative code is a signal's)."""
    if status >= 0:
        return f"exited (status {status})"
    try:
        name = f" ({signal.Signals(-status).name})"
    except ValueError:
        name = ""
    return f"was killed by signal {-status}{name}"


def validate_message(name: str, doc: Any) -> None:
    """Schema-check one IUT message (``--validate``) against the protocol catalog."""
    if not _SCHEMAS:
        for file, schema in message_schemas().items():
            _SCHEMAS[file] = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(_SCHEMAS[f"{name}.schema.json"].iter_errors(doc))
    if error is not None and error.context and name == "protocol-answer" and isinstance(doc, dict):
        # The branch of the answer's own kind (Traced | Skipped | Errored, as parse_answer
        # chooses it): its error names a field; "valid under none of the schemas" does not.
        branch = 1 if "skipped" in doc else 2 if "errored" in doc else 0
        mine = [e for e in error.context if e.relative_schema_path and e.relative_schema_path[0] == branch]
        error = jsonschema.exceptions.best_match(mine) or error
    if error is not None:
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        message = error.message if len(error.message) <= 300 else error.message[:300] + "..."  # it may quote the whole value
        raise IUTFailure("invalid", f"IUT sent invalid data at {path}: {message}")


def first_error(e: ValidationError) -> str:
    err = e.errors(include_url=False)[0]
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
    return f"{path}: {err['msg']}"


class NotAnImplementation(ValueError):
    """``py:MODULE`` names a module that cannot be imported or has no ``started()`` and
    ``answer()``: a usage error (found by the worker process, which alone imports it)."""
