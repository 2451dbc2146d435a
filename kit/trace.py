"""The trace language: what running a scenario shows, in order.

A trace holds:

- ``observations``: every stage boundary and every participant invocation, as a probe
  installed outermost on each seam would see it (stage ``start``/``end``), plus what each
  scripted participant did (``call``, ``return``, ``throw``, ``mutate``, ``observe``).
  Observations of the *internal* stages (entry, route, checkpoint, materialize) explain
  the oracle's reasoning; an implementation under test may omit them.
- ``events``: the session-log events written to agents' sessions.
- ``results``: each call's final result, whether it is deeply frozen and whether it is
  the very object the ``tools/result`` observers received (P98).
- ``warnings``: contained failures reported as warnings (P101).

Every observation names the rules behind it, so reports can group verdicts by rule.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .schema_doc import schema_document
from . import jsontext
from .jsvalue import clone as _clone

TRACE_FORMAT = "dsh-conformance/trace/v1"

Stage = Literal[
    "entry", "pre-execute", "approval", "guards", "checkpoint", "execute", "dispatch", "body",
    "post-execute", "materialize", "finalize", "result", "route", "classify", "render",
    "presentationMeta", "loop", "fs-intent", "tool-event", "presentCall", "presentResult",
    "program", "code-mode", "code-dispatch-log", "getter", "pre-step",
]

# The stages a call's participants run at, in pipeline order (P1): the one list every other
# module reads (a test holds the project to it).
PIPELINE_STAGES: tuple[str, ...] = ("pre-execute", "approval", "guards", "execute", "body", "post-execute",
                                    "finalize", "result")

# The stage a listener's observations carry, by the event it listens to (every participant
# event of the scenario language; the oracle and a port's listeners both read it here).
EVENT_STAGES: dict[str, str] = {
    "tools/pre-execute": "pre-execute", "tools/execute": "execute", "tools/post-execute": "post-execute",
    "approval/request": "approval", "fs/write-intent": "fs-intent", "fs/edit-intent": "fs-intent",
    "tools/code-dispatch-log": "code-dispatch-log", "tools/result": "result"}

What = Literal[
    "start", "end", "throw", "call", "return", "mutate", "observe", "to", "abort", "snapshot",
    "resolve", "request", "outcome", "deny", "collapse", "defer", "conclude", "register",
    "unregister", "inject", "commit", "synthetic", "append", "abandon",
    "bind", "settle", "log", "late", "submit", "cancel", "hide", "cursor",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Observation(_Model):
    call: str | None = None
    stage: Stage
    what: What
    who: str | None = None
    value: Any = None
    rules: tuple[str, ...] = ()


class Event(_Model):
    """A session-log event. ``seq`` numbers the events of one agent's session from 1."""
    agent: str
    seq: int
    type: str
    data: Any
    sourceEventSeqs: list[int] | None = None
    at: int | None = Field(default=None, ge=0, description=(
        "how many portable observations (those an implementation reports) were recorded before the "
        "event was appended: where it falls among them (optional; laws use it, comparisons do not)"))


class CallResult(_Model):
    callId: str
    result: Any
    frozen: bool
    observed: bool = Field(description="the returned object is the one tools/result observers received (P98)")


class Trace(_Model):
    format: Literal["dsh-conformance/trace/v1"] = Field(default=TRACE_FORMAT, alias="$format")
    scenario: str | None = None
    observations: list[Observation] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    results: list[CallResult] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def to_json(self, detached: bool = True) -> dict[str, Any]:
        """The trace as a JSON document: what ``_ADAPTER.dump_python(self, by_alias=True)``
        gives, field for field, without pydantic's generic walk (every field is JSON-typed
        already, and Python objects keep lone surrogates, which JSON mode cannot). Values
        are copies unless not ``detached`` (for a document written out at once)."""
        clone = _clone if detached else _same
        return {
            "$format": self.format,
            "scenario": self.scenario,
            "observations": [{"call": o.call, "stage": o.stage, "what": o.what, "who": o.who,
                              "value": clone(o.value), "rules": list(o.rules)} for o in self.observations],
            "events": [{"agent": e.agent, "seq": e.seq, "type": e.type, "data": clone(e.data),
                        "sourceEventSeqs": None if e.sourceEventSeqs is None else list(e.sourceEventSeqs),
                        "at": e.at} for e in self.events],
            "results": [{"callId": r.callId, "result": clone(r.result), "frozen": r.frozen, "observed": r.observed}
                        for r in self.results],
            "warnings": list(self.warnings),
        }

    def dumps(self) -> str:
        """The canonical text of the trace: same trace, same bytes. Valid JSON with one
        list item per line, so that a diff of two traces points at the step that differs."""
        doc = self.to_json(detached=False)
        lines = ["{"]
        keys = list(doc)
        for n, key in enumerate(keys):
            comma = "," if n < len(keys) - 1 else ""
            value = doc[key]
            if isinstance(value, list) and value:
                lines.append(f" {_dump(key)}: [")
                lines += [f"  {_dump(item)}{',' if i < len(value) - 1 else ''}" for i, item in enumerate(value)]
                lines.append(f" ]{comma}")
            else:
                lines.append(f" {_dump(key)}: {_dump(value)}{comma}")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def rules(self) -> set[str]:
        return {r for o in self.observations for r in o.rules}


_ADAPTER: TypeAdapter[Trace] = TypeAdapter(Trace)


def _same(v: Any) -> Any:
    return v


# ------------------------------------------------------------------ the oracle's own records

# Every field is given, so the set of fields given is the same for every record of a class:
# one set shared by all (pydantic only ever adds a field's name to it, on an assignment,
# and every name is in it already). A set per record was a fifth of what the cyclic
# collector walked after a run.
OBSERVATION_FIELDS = set(Observation.model_fields)  # RunState.obs makes the oracle's observations
_EVENT_FIELDS = set(Event.model_fields)
_RESULT_FIELDS = set(CallResult.model_fields)
_new = object.__new__
# BaseModel's slots, set through their descriptors (object.__setattr__ looks them up each time).
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields = BaseModel.__pydantic_fields_set__.__set__  # type: ignore[attr-defined]
_set_extra = BaseModel.__pydantic_extra__.__set__  # type: ignore[attr-defined]
_set_private = BaseModel.__pydantic_private__.__set__  # type: ignore[attr-defined]


def unvalidated(cls: type[_Model], values: dict[str, Any], fields: set[str]) -> Any:
    # What ``model_construct`` does, without its per-field walk over defaults and aliases:
    # the oracle records tens of these per call, each with every field given, typed where
    # it is made (the golden traces and the trace schema test hold them to the schema).
    # An IUT's trace is always validated (``parse_trace``). The reference cache restores
    # the models it kept with it, as they were made.
    o = _new(cls)
    _set_dict(o, values)
    _set_fields(o, fields)
    _set_extra(o, None)
    _set_private(o, None)
    return o


# What ``unvalidated`` does, for the one maker that writes it out inline: the oracle's
# observations (``RunState.obs``, tens a call; a call of its own cost some 1.5%).
MODEL_MAKING = (_new, _set_dict, _set_fields, _set_extra, _set_private)


def event(agent: str, seq: int, type_: str, data: Any, source: list[int] | None, at: int | None) -> Event:
    """A session event the oracle records (not validated: see ``unvalidated``)."""
    return unvalidated(Event, {"agent": agent, "seq": seq, "type": type_, "data": data, "sourceEventSeqs": source,
                           "at": at}, _EVENT_FIELDS)

def call_result(call_id: str, result: Any, frozen: bool, observed: bool) -> CallResult:
    """A call's result as the oracle records it (not validated: see ``unvalidated``)."""
    return unvalidated(CallResult, {"callId": call_id, "result": result, "frozen": frozen, "observed": observed},
                   _RESULT_FIELDS)


ANY: dict[str, str] = {"$js": "any"}
"""In the oracle's trace only: a value the spec leaves to the implementation (for example
the abort reason of the timeout policy's deadline signal). Comparisons accept anything
there; an implementation never sends it."""

# The stage boundaries an outermost probe on each seam can see in any implementation. An
# IUT reports these and every observation of a scripted participant (the observation
# catalog, conformance/spec/contract.py, describes each, with its value's schema); the oracle's other
# observations (entry, routes, checkpoints, materialization, resolution, classification,
# loop bookkeeping) explain its reasoning and are never compared.
PROBE_POINTS = frozenset({
    ("pre-execute", "start"), ("pre-execute", "end"), ("pre-execute", "throw"),
    ("approval", "request"), ("approval", "outcome"), ("approval", "throw"),
    ("execute", "start"), ("execute", "end"), ("execute", "throw"),
    ("post-execute", "start"), ("post-execute", "end"), ("post-execute", "throw"),
    ("result", "start"),
})
BUILTIN_PARTICIPANTS = frozenset({"timeout-policy"})  # shipped code: not instrumented


def is_portable(o: Observation) -> bool:
    """Whether an implementation under test reports this observation (protocol v1)."""
    return portable(o.stage, o.what, o.who)


def portable(stage: str, what: str, who: str | None) -> bool:
    """``is_portable`` of an observation with these fields (before it is made)."""
    if who is not None:
        return who not in BUILTIN_PARTICIPANTS
    return (stage, what) in PROBE_POINTS


def _dump(v: Any) -> str:
    # U+2028 and U+2029 stay escaped: they are line breaks to many readers of a text file
    # (and to the golden-trace files), and the JSON value is the same either way.
    return jsontext.dumps(v, separators=(",", ":")).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def parse_trace(data: Any) -> Trace:
    return _ADAPTER.validate_python(data)


def trace_json_schema() -> dict[str, Any]:
    return schema_document(_ADAPTER, "trace.schema.json")
