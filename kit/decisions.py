"""What participants decide (spec section 3.6): pre-execute and post-execute decisions, the
approval request and outcome, and a guard's verdict.

The vocabularies are tables defined here: the pipeline reads them (``PRE_REASONS`` and
``POST_KINDS`` in oracle/pipeline.py, ``OUTCOMES`` and ``GRANTED`` in oracle/approval.py), so
do the laws (conformance/laws/), and the ``Literal`` types below are built from them, so the
generated schema (catalogs/decisions.schema.json), the oracle's branches and the laws cannot
drift apart.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from .results import ContentBlock, UserMessage

ReasonRule = Literal["ignored", "string", "absent-or-string"]

PRE_REASONS: dict[str, ReasonRule] = {"allow": "ignored", "deny": "string", "ask": "absent-or-string"}
"""P31: the kinds of a well-formed pre-execute decision, each with what its ``reason`` must
be: an allow's is not read, a deny's is a string, an ask's is absent or a string."""
PRE_KINDS = tuple(PRE_REASONS)
"""The kinds of a well-formed pre-execute decision (P31); the classes below name each one."""
POST_KINDS = ("accept", "block")
"""The kinds of a well-formed post-execute decision (P78)."""
OUTCOMES = ("allowed-once", "rejected", "cancelled", "unavailable")
"""The closed vocabulary of approval outcomes (P40)."""
GRANTED = "allowed-once"
"""The one outcome that grants (P40); every other outcome of the vocabulary denies."""


class _Decision(BaseModel):
    # A well-formed decision may carry extra properties; the registry ignores them (P31).
    model_config = ConfigDict(extra="allow")


class Allow(_Decision):
    kind: Literal["allow"]


class Deny(_Decision):
    kind: Literal["deny"]
    reason: str


class Ask(_Decision):
    kind: Literal["ask"]
    reason: str | None = Field(default=None, description="absent or a string")


PreExecuteDecision = Annotated[Union[Allow, Deny, Ask], Field(discriminator="kind")]
"""What the ``tools/pre-execute`` waterfall resolves to (P31); anything else is not well formed."""

ApprovalOutcome = Literal[OUTCOMES]  # type: ignore[valid-type]
"""The closed vocabulary of ``ctx.approval`` (P40); any other value is a throw."""


class ApprovalRequest(BaseModel):
    """What ``ctx.approval.request`` receives (P39); ``signal`` is the record's signal then."""
    model_config = ConfigDict(extra="forbid")
    agent: str = Field(description="the agent (an object; named by its id on the wire)")
    toolName: str
    callId: str
    reason: str | None = None


class Accept(_Decision):
    """Accept the result: with ``content`` (replaces the content only, P80), with ``value``
    (recomputed through the output contract, P81), or neither (unchanged, P77)."""
    kind: Literal["accept"]
    content: Any = None
    value: Any = None
    additionalContexts: list[UserMessage] | None = None


class Block(_Decision):
    """Block: a failure whose content is ``feedback`` (P83, P84)."""
    kind: Literal["block"]
    feedback: list[ContentBlock]
    additionalContexts: list[UserMessage] | None = None


PostExecuteDecision = Annotated[Union[Accept, Block], Field(discriminator="kind")]
"""What the ``tools/post-execute`` waterfall resolves to (P78)."""
