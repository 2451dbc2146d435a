"""Session-log events: the durable events written to an agent's session (spec section 3.8).

The agent loop and the approval service of the oracle write the events of ``WRITTEN`` (see
oracle/loop.py, oracle/pipeline.py); the page also names events that code outside the
oracle writes (a tool body, the run_code bridge, hook bridges). Each event has a payload
type, a badge (``surface`` events are part of the model-facing history, ``log-only`` ones
are not) and the party that writes it. catalogs/session-events.schema.json is generated
from ``SessionEvent``; the tests validate every event of the corpus's traces against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from .decisions import ApprovalOutcome
from .results import ContentBlock, UserMessage


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepRef(_Payload):
    turn: int = Field(ge=1)
    step: int = Field(ge=1)


class ToolCallData(StepRef):
    callId: str
    name: str
    arguments: str = Field(description="the model's raw argument string (P18)")


class ToolResultMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str | None = None
    role: Literal["user"]
    source: dict[str, Any]
    content: list[ContentBlock]


class ErrorRef(_Payload):
    name: str
    code: str | None


class ToolResultData(StepRef):
    message: ToolResultMessage
    error: ErrorRef | None = Field(default=None, description="the failure's error.info (P104)")
    meta: Any = None


class CodeDispatchStartData(_Payload):
    rootCallId: str
    parentCallId: str
    subCallId: str
    name: str
    arguments: Any = Field(description="an independent copy of the dispatched snapshot")


class CodeDispatchData(CodeDispatchStartData):
    isError: bool
    content: list[ContentBlock]


class ApprovalAskedData(_Payload):
    id: str
    toolName: str
    callId: str | None = None
    reason: str | None = None


class ApprovalDecidedData(_Payload):
    id: str
    outcome: ApprovalOutcome


class InboxSplicedData(_Payload):
    target: str
    start: int = Field(ge=0)
    removedCount: int | None = Field(default=None, ge=0)
    inserted: list[UserMessage]
    outcome: Any = None


class AssistantMessageData(StepRef):
    model_config = ConfigDict(extra="allow")
    content: list[ContentBlock]


class TodoItem(_Payload):
    content: str
    status: Literal["pending", "in_progress", "completed"]


class TodoWriteData(_Payload):
    todos: list[TodoItem]


class HookInvokedData(_Payload):
    turn: int
    point: str = Field(description="the hook point, e.g. PreToolUse")
    dialect: str = Field(description="the bridge that ran the hook command")
    matcher: str | None = None
    handlerId: str


class HookResultData(_Payload):
    turn: int
    point: str
    handlerId: str
    decision: str
    exitCode: int | None = None
    stderrSummary: str | None = None
    durationMs: float = Field(ge=0)


def _event(name: str, payload: Any, title: str) -> type[BaseModel]:
    # One model per event: {"type": <name>, "data": <payload>} (the trace's event shape).
    return type(title, (BaseModel,), {
        "__annotations__": {"type": Literal[name], "data": payload},  # type: ignore[valid-type]
        "model_config": ConfigDict(extra="allow", title=title),
        "__doc__": f"The session-log event `{name}`.",
    })


@dataclass(frozen=True)
class EventSpec:
    name: str
    payload: Any
    surface: bool
    written_by: Literal["loop", "approval-service", "code-mode-bridge", "tool-body", "hook-bridge", "agent-inbox"]
    rules: tuple[str, ...]
    summary: str

    @property
    def badge(self) -> str:
        return "surface" if self.surface else "log-only"


EVENTS: tuple[EventSpec, ...] = (
    EventSpec("assistant/message", AssistantMessageData, True, "loop", (),
              "the model's message for a step; its tool-call blocks are the step's calls"),
    EventSpec("tool/call", ToolCallData, False, "loop", ("P18",),
              "a tool-call block, logged immediately before the call enters the registry"),
    EventSpec("tool/result", ToolResultData, True, "loop", ("P103", "P104"),
              "the single model-facing outcome of a call; cites its tool/call"),
    EventSpec("tool/code-dispatch-start", CodeDispatchStartData, False, "code-mode-bridge", ("P122",),
              "a run_code sub-call starts, before it enters the registry"),
    EventSpec("tool/code-dispatch", CodeDispatchData, False, "code-mode-bridge", ("P122",),
              "a run_code sub-call settled, with its model-facing outcome"),
    EventSpec("approval/asked", ApprovalAskedData, False, "approval-service", ("P43",),
              "the shipped approval service asks"),
    EventSpec("approval/decided", ApprovalDecidedData, False, "approval-service", ("P43",),
              "the shipped approval service's outcome for an ask"),
    EventSpec("agent/inbox/spliced", InboxSplicedData, False, "agent-inbox", ("P109", "P110"),
              "the next-step queue changed: contexts accepted, or claimed at a step start"),
    EventSpec("user/message", UserMessage, True, "loop", ("P110",),
              "a user message; accepted contexts become these at the next step's start"),
    EventSpec("step/start", StepRef, False, "loop", ("P110",), "a step starts"),
    EventSpec("step/end", StepRef, False, "loop", ("P105",), "a step ends"),
    EventSpec("todo/write", TodoWriteData, False, "tool-body", ("P71",),
              "the todo tool's body writes the whole list"),
    EventSpec("hook/invoked", HookInvokedData, False, "hook-bridge", ("P71",),
              "a hook bridge invoked a hook command"),
    EventSpec("hook/result", HookResultData, False, "hook-bridge", ("P71",),
              "a hook command's outcome, paired to hook/invoked by handlerId"),
)

WRITTEN_BY_ORACLE = frozenset({"loop", "approval-service", "agent-inbox", "tool-body",  # tool-body: a scripted body's append step
                               "code-mode-bridge"})


def event_class_name(name: str) -> str:
    """The schema definition name of an event: ``tool/call`` -> ``ToolCallEvent``."""
    return "".join(p[:1].upper() + p[1:] for p in name.replace("-", "/").split("/")) + "Event"


SessionEvent = Annotated[
    Union[tuple(_event(e.name, e.payload, event_class_name(e.name)) for e in EVENTS)],  # type: ignore[misc]
    Field(discriminator="type"),
]
"""A session-log event, as a trace carries it: ``type`` and ``data``."""
