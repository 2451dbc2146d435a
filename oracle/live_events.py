"""Live events (dispatched on the event bus while a call runs) and services (spec 3.9).

A live event has a mode: a ``waterfall`` passes a value through its listeners, each of which
may call ``next()`` and transform what it returns; an ``emit`` notifies listeners and takes
no answer. ``arguments`` and ``returns`` point into the generated catalogs' schemas.
The scenario language lets a scenario listen to ``kit.scenario.EVENTS``; the tests check
that every one of them is described here with the mode the oracle gives it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Mode = Literal["waterfall", "emit"]


@dataclass(frozen=True)
class Argument:
    name: str
    type: str
    schema: str | None = None  # a JSON pointer into a catalog file, when JSON can describe it


@dataclass(frozen=True)
class LiveEvent:
    name: str
    mode: Mode
    arguments: tuple[Argument, ...]
    returns: str
    returns_schema: str | None
    dispatched_by: Literal["registry", "approval-service", "code-mode-bridge", "tool-body", "agent-loop"]
    rules: tuple[str, ...]
    summary: str

    @property
    def signature(self) -> str:
        """The listener's signature, in the spec's notation."""
        args = ", ".join(f"{a.name}: {a.type}" for a in self.arguments)
        if self.mode == "waterfall":
            return f"({args}, next: () => Promise<{self.returns}>) => Promise<{self.returns}>"
        return f"({args}) => void"


RECORD = Argument("exec", "ToolExecution")

EVENTS: tuple[LiveEvent, ...] = (
    LiveEvent("tools/pre-execute", "waterfall", (RECORD,), "PreToolDecision",
              "decisions.schema.json#/$defs/PreExecuteDecision", "registry", ("P5", "P30", "P31"),
              "policy before anything runs: allow, deny or ask"),
    LiveEvent("tools/execute", "waterfall", (RECORD,), "ToolExecutionResult",
              "results.schema.json#/$defs/ToolExecutionResult", "registry", ("P5", "P54", "P62"),
              "wraps the dispatch of the body; the innermost next() runs it"),
    LiveEvent("tools/post-execute", "waterfall",
              (RECORD, Argument("result", "ToolExecutionResult", "results.schema.json#/$defs/ToolExecutionResult")),
              "PostToolDecision", "decisions.schema.json#/$defs/PostExecuteDecision", "registry",
              ("P5", "P76", "P78"), "accept, block or replace a post-bound result, and add context"),
    LiveEvent("tools/result", "emit",
              (RECORD, Argument("result", "ToolExecutionResult", "results.schema.json#/$defs/ToolExecutionResult")),
              "void", None, "registry", ("P98", "P99", "P100"),
              "synchronous notification of the frozen, authoritative outcome"),
    LiveEvent("tools/change", "emit", (), "void", None, "registry", ("P56",),
              "the registered, restricted or presented tools changed (what resolves by name may differ)"),
    LiveEvent("tools/code-dispatch-log", "waterfall",
              (Argument("entry", "{exec, agent?, subCallId, name, isError, content}"),),
              "ContentBlock[]", None, "code-mode-bridge", ("P122", "P123"),
              "shapes the content a tool/code-dispatch event logs"),
    LiveEvent("approval/request", "waterfall",
              (Argument("request", "ApprovalRequest", "decisions.schema.json#/$defs/ApprovalRequest"),),
              "ApprovalOutcome", "decisions.schema.json#/$defs/ApprovalOutcome", "approval-service",
              ("P43",), "the shipped approval service's answerers"),
    LiveEvent("fs/write-intent", "waterfall", (Argument("intent", "FsWriteIntent"),), "FsDecision", None,
              "tool-body", ("P71",), "a filesystem tool body asks before it writes a file"),
    LiveEvent("fs/edit-intent", "waterfall", (Argument("intent", "FsEditIntent"),), "FsDecision", None,
              "tool-body", ("P71",), "a filesystem tool body asks before it edits a file"),
    LiveEvent("fs/observed", "emit",
              (Argument("target", "FsTarget"), Argument("observation", "FsObservation"),
               Argument("actor", "object | undefined")),
              "void", None, "tool-body", ("P71",),
              "a filesystem tool body reports what it read or wrote"),
    LiveEvent("agent/pre-step", "waterfall",
              (Argument("payload", "{messages: UserMessage[], turn, step, signal}"),),
              "{kind: 'enter', messages: UserMessage[]} | {kind: 'reject'}", None, "agent-loop", ("P110",),
              "a step boundary: the claimed messages go in as the step's user/message events, rewritten or rejected"),
)


@dataclass(frozen=True)
class Service:
    name: str
    type: str
    methods: tuple[str, ...]
    mechanism: str
    rules: tuple[str, ...]


SERVICES: tuple[Service, ...] = (
    Service("ctx.approval", "ApprovalService", ("request(request: ApprovalRequest): Promise<ApprovalOutcome>",),
            "approval/request", ("P36", "P37", "P39", "P40", "P43")),
    # The registry itself (rc.8's ToolRuntime): its public methods are names the docs use
    # (`ctx.tools.execute()` runs a call through the pipeline, `ctx.tools.guard()` adds a guard).
    Service("ctx.tools", "ToolRuntime", (
        "execute(exec: ToolExecutionInput): Promise<ToolExecutionResult>",
        "register(definition: ToolDefinition): () => void",
        "guard(guard: ToolGuard): () => void",
        "restrict(filter: ToolRestriction): () => void",
        "presentAs(mode: ToolPresentationMode): () => void",
        "get(name: string, scope?: ScopeKey): ToolDefinition | undefined",
        "schemas(scope?: ScopeKey): ToolSchema[]",
        "executionMode(exec: ToolExecutionInput): ToolExecutionMode",
    ), "tools/pre-execute", ("P1", "P22", "P45", "P56", "P114")),
)
