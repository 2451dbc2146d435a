"""Content blocks, user messages and the pipeline's results (spec sections 3.5 and 3.7).

The oracle builds these shapes as plain JSON (oracle/pipeline.py, oracle/loop.py); these
types describe them so that catalogs/results.schema.json can be generated, and the tests
validate every result of the corpus's traces against that schema. JSON values are ``Any``:
the pipeline only requires lossless JSON, it never validates a block's shape (3.7).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Open(BaseModel):
    # Content blocks are an open union: a block may carry keys beyond the ones named here.
    model_config = ConfigDict(extra="allow")


class TextBlock(_Open):
    type: Literal["text"]
    text: str


class ReasoningBlock(_Open):
    type: Literal["reasoning"]
    text: str


class ImageBlock(_Open):
    type: Literal["image"]
    attachment: Any


class ToolCallBlock(_Open):
    type: Literal["tool-call"]
    id: str
    name: str
    arguments: str = Field(description="the model's raw JSON text")


class ToolResultBlock(_Open):
    type: Literal["tool-result"]
    toolCallId: str
    content: Any
    isError: bool | None = None


ContentBlock = Annotated[Union[TextBlock, ReasoningBlock, ImageBlock, ToolCallBlock, ToolResultBlock],
                         Field(discriminator="type")]


class MessageSource(_Open):
    kind: Literal["user", "plugin", "tool", "model"]
    plugin: str | None = None
    callId: str | None = None


class UserMessage(_Open):
    """A user message; contexts (``additionalContexts``) are user messages."""
    id: str | None = None
    role: Literal["user"]
    content: Any
    source: MessageSource | None = None


class ErrorInfo(_Model):
    """``info(x)`` of P9: a HarnessError's ``name`` and ``code`` as they are (strings,
    unless a participant threw one whose fields are not)."""
    name: Any
    code: Any


class ToolError(_Model):
    message: Any = Field(description=(
        "a string, except for a guard denial with a non-string value (P47) and a thrown Error "
        "whose message is not a string (P9: an Error's message is used as it is)"))
    info: ErrorInfo | None = Field(default=None, description="present only where a rule says so")


class ToolSuccess(_Model):
    """A success (P72): ``value`` is lossless JSON; ``concludesTurn`` only when marked (P67)."""
    isError: Literal[False]
    value: Any
    content: Any
    meta: Any = None
    additionalContexts: list[Any] | None = None
    concludesTurn: Literal[True] | None = None


class ToolFailure(_Model):
    """A failure: never ``value`` nor ``concludesTurn``."""
    isError: Literal[True]
    error: ToolError
    content: Any
    meta: Any = None
    additionalContexts: list[Any] | None = None


ToolExecutionResult = Annotated[Union[ToolSuccess, ToolFailure], Field(discriminator="isError")]
