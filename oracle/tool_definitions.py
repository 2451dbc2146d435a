"""Tool definitions: what a definition holds (spec 3.4), the tools the page names
(``run_code``), and the packages the page names.

``ToolSchema`` is what the model is offered for a tool (name, description, parameters);
``MEMBERS`` lists every member of a ``ToolDefinition`` with its signature, and names the
field of the scenario language's ``kit.scenario.Tool`` that scripts it, so the tests can
check the two stay in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..kit.scenario_checks import RUN_CODE as RUN_CODE_NAME
from ..kit.scenario import Output, Tool


class ToolSchema(BaseModel):
    """The part of a definition offered to the model."""
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    description: str
    parameters: dict[str, Any] = Field(description="a JSON Schema of the arguments")


@dataclass(frozen=True)
class Member:
    name: str
    signature: str
    optional: bool
    scenario_field: str | None  # the kit.scenario.Tool field that scripts this member
    summary: str


MEMBERS: tuple[Member, ...] = (
    Member("name", "string", False, "name", "the name the model calls"),
    Member("description", "string", False, "description", "offered to the model"),
    Member("parameters", "JSONSchema", False, "parameters", "the arguments' schema offered to the model"),
    Member("output", "{schema, render, presentationMeta?}", False, "output",
           "the output contract every successful value goes through (P72, P73)"),
    Member("execute", "(args, exec: ToolExecution) => Promise<unknown>", False, "body",
           "the body (P58); defineTool validates the arguments first (P75)"),
    Member("finalizeContent", "(exec: ToolExecution, result: ToolExecutionResult) => ContentBlock[] | undefined",
           True, "finalizeContent", "synchronous last word on the content of every outcome (P93, P94)"),
    Member("timeoutMs", "number", True, "timeoutMs", "budget for the optional timeout wrapper (P70)"),
    Member("isConcurrencySafe", "(args) => boolean", True, "concurrencySafe", "scheduling classifier (P19)"),
    Member("presentCall", "(args) => unknown", True, "presentCall", "UI pending card; never called by the pipeline (P14)"),
    Member("presentResult", "(args, result: {content, isError, meta?}) => unknown", True, "presentResult",
           "UI completed card; never called by the pipeline (P14)"),
)

RESULT_MEMBERS: tuple[Member, ...] = (
    Member("isError", "boolean", False, None, "false for a success, true for a failure"),
    Member("value", "JsonValue", True, None, "a success's value; never on a failure"),
    Member("content", "ContentBlock[]", False, None, "the model-facing content"),
    Member("error", "{message, info?}", True, None, "a failure's error"),
    Member("meta", "JsonValue", True, None, "presentation metadata of top-level calls (P74)"),
    Member("additionalContexts", "UserMessage[]", True, None,
           "contexts that ride on the result to the next step (P85, P102, P109)"),
    Member("concludesTurn", "true", True, None, "the execution asked to conclude the turn (P67)"),
)

# What listeners, wrappers and bodies see of a call (rc.8's ToolExecution, extended by
# ToolRunContext for a body): names a page uses ("`exec.signal`", "`concludeTurn()`").
EXECUTION_MEMBERS: tuple[Member, ...] = (
    Member("callId", "CallId", False, None, "the call's id (P22)"),
    Member("rootCallId", "CallId", False, None, "the root model-requested call (P22)"),
    Member("name", "string", False, None, "the tool's name (P22)"),
    Member("arguments", "JsonValue", False, None, "the materialized, frozen arguments (P23)"),
    Member("agent", "Agent", True, None, "the calling agent (P22)"),
    Member("parent", "ToolExecutionToken", True, None, "the parent's token, for a nested call (P22)"),
    Member("signal", "AbortSignal", False, None, "the caller's signal; only tools/execute may replace it (P60)"),
    Member("token", "ToolExecutionToken", False, None, "registry-assigned identity (P22)"),
)
RUN_CONTEXT_MEMBERS: tuple[Member, ...] = (
    Member("deferContext", "(context: UserMessage) => void", False, None,
           "defers a context onto this execution's own result (P67)"),
    Member("concludeTurn", "() => void", False, None, "marks a success as concluding the turn (P67, P106)"),
)

# The variants of the listeners' decisions (rc.8's PreToolDecision and PostToolDecision), by
# their `kind`: the page says "return `ask` from `tools/pre-execute`".
PRE_DECISIONS: tuple[Member, ...] = (
    Member("allow", "{kind: 'allow'}", False, None, "the call goes on to the guards (P31)"),
    Member("deny", "{kind: 'deny', reason: string}", False, None, "the body is skipped; a denial result (P32)"),
    Member("ask", "{kind: 'ask', reason?: string}", False, None, "ctx.approval is asked once (P36)"),
)
POST_DECISIONS: tuple[Member, ...] = (
    Member("accept", "{kind: 'accept', content?, value?, additionalContexts?}", False, None,
           "the result is kept or replaced (P80, P81)"),
    Member("block", "{kind: 'block', feedback: ContentBlock[], additionalContexts?}", False, None,
           "the result becomes a failure with the feedback (P83)"),
)

RUN_CODE = ToolSchema(
    name="run_code",
    description=("Code Mode's reserved transport: runs a program whose tool calls go through the "
                 "pipeline as sub-calls. Visible only to agents in mode code or both (P114)."),
    parameters={
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "the program: the body of an async function"},
            "description": {"type": "string", "description": "a short summary of what the program does"},
        },
        "required": ["code", "description"],
    },
)


RUN_CODE_OUTPUT_SCHEMA: dict[str, Any] = {  # P128: {logs: string[], result?: JSON}
    "type": "object",
    "additionalProperties": False,
    "properties": {"logs": {"type": "array", "items": {"type": "string"}}, "result": {}},
    "required": ["logs"],
}


class RunCodeTool(Tool):
    """The reserved ``run_code`` transport as a definition (P114, P115): a ``defineTool``
    tool whose arguments are ``{code: string, description: string}``. Its body and its render
    are the Code Mode bridge's (``oracle.code_mode``), not scripts; it has no finalizer,
    classifier, timeout or ``presentationMeta``."""


RUN_CODE_TOOL = RunCodeTool(
    name=RUN_CODE_NAME, define=True, description=RUN_CODE.description,
    parameters={"type": "object",
                "properties": {"code": {"type": "string"}, "description": {"type": "string"}},
                "required": ["code", "description"]},
    output=Output(schema=RUN_CODE_OUTPUT_SCHEMA))


@dataclass(frozen=True)
class ToolEntry:
    schema: ToolSchema
    package: str
    rules: tuple[str, ...]


TOOLS: tuple[ToolEntry, ...] = (
    ToolEntry(RUN_CODE, "@deepseek-ai/dsh-tools", ("P114", "P115")),
)


@dataclass(frozen=True)
class Package:
    name: str  # the short name the page uses
    package: str
    dispatches: tuple[str, ...]
    summary: str


PACKAGES: tuple[Package, ...] = (
    Package("tools", "@deepseek-ai/dsh-tools", ("tools/pre-execute", "tools/execute", "tools/post-execute",
                                                "tools/result", "tools/code-dispatch-log"),
            "the tool registry and Code Mode"),
    Package("tool-fs", "@deepseek-ai/dsh-tool-fs", ("fs/write-intent", "fs/edit-intent", "fs/observed"),
            "the filesystem tools (read, write, edit)"),
)
