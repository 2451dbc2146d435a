"""The call input (section 3.2), the execution record (section 3.3) and the registry's
private per-call state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .jsvalue import JsValue, UNDEFINED
from .scenario import Tool
from .scheduler import Signal

@dataclass
class Input:
    """A call input (section 3.2), as the caller hands it to ``execute``."""
    callId: str
    name: str
    arguments: JsValue
    signal: Any
    agent: str | None = None
    rootCallId: str | None = None
    parent: str | None = None
    # The scenario language's, not DSH's: the signal an ``abort caller`` step of a participant
    # aborts. A run_code sub-call's participants abort the run_code call's caller, since the
    # run's own signal belongs to the bridge (scenario.Abort); None: this input's signal.
    abort_target: Signal | None = None


IDENTITY = ("callId", "rootCallId", "name", "agent", "parent", "arguments", "token")


@dataclass
class Record:
    """What every participant of one call receives (P22). Identity fields never change
    (P24); ``signal`` is writable until the record is frozen before ``tools/result`` (P60,
    P99). The fields after ``frozen`` are the registry's own bookkeeping, invisible to
    participants."""

    token: str
    callId: str
    rootCallId: str
    name: str
    agent: str | None
    parent: str | None
    arguments: JsValue
    signal: Signal
    deferred: list[JsValue] = field(default_factory=list)
    concluded: bool = False
    frozen: bool = False
    # registry-private state
    caller: Signal | None = None
    abort_target: Signal | None = None  # what an ``abort caller`` step aborts (Input.abort_target)
    body_invoked: bool = False  # P59
    finalizer: Tool | None = None  # P26: captured at entry
    # results the registry built for this call (P63), by id: (the result, the record's token
    # when it was built: the reference's P24 departure recognizes one only by its token now)
    built: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    sub_calls: int = 0  # run_code: binding calls accepted for this execution so far (P119), across retries (P69)
    extra: dict[str, Any] = field(default_factory=dict)  # properties participants added
    # The callId a participant wrote (the reference's P24 departure, oracle.departures): what
    # later stages read as the record's callId. ``callId`` stays the scenario's call, the one
    # the trace files the call's observations under (as the adapter does).
    written_call_id: str | None = None

    @property
    def current_call_id(self) -> str:
        """The record's ``callId`` as a participant reads it now."""
        return self.callId if self.written_call_id is None else self.written_call_id

    def view(self, signals: dict[str, Signal]) -> dict[str, Any]:
        """What an ``observe record`` step records (comparable across implementations)."""
        if self.signal is self.caller:
            which = "caller"
        else:
            which = next((n for n, s in signals.items() if s is self.signal), "fused")
        out: dict[str, Any] = {
            "callId": self.current_call_id,
            "rootCallId": self.rootCallId,
            "name": self.name,
            "hasAgent": self.agent is not None,
            "hasParent": self.parent is not None,
            "arguments": self.arguments,
            "signal": self.signal_view(which),
            "frozen": self.frozen,
        }
        if self.agent is not None:
            out["agent"] = self.agent
        return out

    def signal_view(self, which: str) -> dict[str, Any]:
        out: dict[str, Any] = {"is": which, "aborted": self.signal.aborted}
        if self.signal.aborted:
            out["reason"] = self.signal.reason
        return out

    def has(self, key: str) -> bool:
        if key in ("agent", "parent"):
            return getattr(self, key) is not None
        return key in IDENTITY or key in ("signal", "deferContext", "concludeTurn") or key in self.extra

    def get_arguments(self) -> JsValue:
        return self.arguments if self.arguments is not None else UNDEFINED
