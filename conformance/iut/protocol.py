"""The IUT protocol, version 1: JSON lines over a child process's stdin and stdout.

The runner starts the implementation under test (IUT) as a process and talks to it one
message per line, each a JSON object (Bowtie's shape):

1. runner -> IUT ``{"cmd": "start", "version": 1}``
   IUT -> runner ``{"version": 1, "implementation": {"name", "version", "language", ...},
   "profiles": ["core", ...], "features": [...]}`` (the handshake).
2. runner -> IUT ``{"cmd": "run", "seq": N, "scenario": {...}}``
   IUT -> runner exactly one of
   ``{"seq": N, "trace": {...}}`` (the trace language of ``kit.trace``),
   ``{"seq": N, "skipped": true, "reason": "..."}`` (a scenario feature it cannot express;
   never approximate one silently),
   ``{"seq": N, "errored": true, "message": "...", "details": ...}`` (it broke on this one).
3. runner -> IUT ``{"cmd": "stop"}``; the IUT exits with status 0.

Anything an IUT writes to stderr is kept as its log. A line on stdout that is not a JSON
object, an answer with another ``seq``, or a message that breaks its schema is a protocol
violation. The runner owns timeouts and restarts a crashed IUT.

What an IUT reports in a trace is the *portable* part of the trace language: the
observation catalog (``catalogs/observations.catalog.json``, ``docs/observations.md``) lists
each observation, its value's schema, who reports it and the rules it witnesses; the answer
schema holds observations to it. The oracle's other observations explain its reasoning and
are not compared.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from dsh_conformance.kit import jsontext
from dsh_conformance.kit.schema_doc import schema_document
from dsh_conformance.kit.trace import Trace
from dsh_conformance.spec.contract import install

PROTOCOL_VERSION = 1


# Strict: a field of the wrong JSON type is refused, with or without --validate (lax
# parsing would read "1" as the sequence number 1 and 1 as true). The trace inside an
# answer is parsed by its own model (kit.trace).
class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


def _exactly(expected: object) -> object:
    """A before-validator: the value is ``expected`` itself, of its JSON type (``1`` is not
    ``true``, and ``true`` is not ``1``, though Python finds them equal)."""
    def check(cls: type, value: object) -> object:
        if type(value) is not type(expected) or value != expected:
            raise ValueError(f"must be {jsontext.dumps(expected)}, not {jsontext.dumps(value)[:40]}")
        return value
    return classmethod(check)


# ------------------------------------------------------------------ runner -> IUT

class Start(_Model):
    cmd: Literal["start"]
    version: Literal[1] = 1


class Run(_Model):
    cmd: Literal["run"]
    seq: int = Field(ge=0)
    scenario: dict[str, Any]


class Stop(_Model):
    cmd: Literal["stop"]


# ------------------------------------------------------------------ IUT -> runner

class Implementation(_Open):
    name: str
    version: str
    language: str
    homepage: str | None = None


class Started(_Model):
    version: Literal[1]
    _version = field_validator("version", mode="before")(_exactly(1))
    implementation: Implementation
    profiles: list[Literal["core", "reference", "loop", "code-mode"]] = Field(min_length=1)
    features: list[str] = Field(default_factory=list)


class Traced(_Model):
    seq: int
    trace: Trace


class Skipped(_Model):
    seq: int
    skipped: Literal[True]
    reason: str
    _skipped = field_validator("skipped", mode="before")(_exactly(True))


class Errored(_Model):
    seq: int
    errored: Literal[True]
    message: str
    _errored = field_validator("errored", mode="before")(_exactly(True))
    details: Any = None


Answer = Traced | Skipped | Errored

_STARTED: TypeAdapter[Started] = TypeAdapter(Started)


def parse_started(line: dict[str, Any]) -> Started:
    return _STARTED.validate_python(line)


def parse_answer(line: dict[str, Any]) -> Answer:
    """The answer, of the kind its keys say (so that an error names a field of that kind,
    not of the first kind of the union): ``skipped``, ``errored``, else a trace."""
    model = Skipped if "skipped" in line else Errored if "errored" in line else Traced
    return model.model_validate(line)


def seq_error(line: dict[str, Any]) -> str | None:
    """What is wrong with an answer's sequence number, read before anything else of it."""
    seq = line.get("seq")
    if type(seq) is not int:
        return f"$.seq: must be a whole number, not {jsontext.dumps(seq)[:40]}" if "seq" in line else "$.seq: missing"
    return None


def dumps(message: BaseModel | dict[str, Any]) -> str:
    doc = message.model_dump(mode="python", by_alias=True, exclude_none=True) if isinstance(message, BaseModel) else message
    # Lone surrogates travel as JSON escapes: the stream itself stays valid UTF-8 (kit.jsontext).
    return jsontext.dumps(doc, separators=(",", ":")) + "\n"


def _same(doc: dict[str, Any]) -> dict[str, Any]:
    return doc


def message_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas of every protocol message, by catalog file name."""
    return {f"{name}.schema.json": (install if name == "protocol-answer" else _same)(
                schema_document(model, f"{name}.schema.json"))
            for name, model in (("protocol-start", Start), ("protocol-run", Run), ("protocol-stop", Stop),
                                ("protocol-started", Started), ("protocol-answer", Answer))}
