"""Canonical texts of the reference profile (spec section 6), in one place.

Each function returns the exact text the reference release produces; the rule that fixes
it is named beside it. ``LOOSE`` lists the texts whose tail the spec leaves to the
implementation (schema violation wording, section 1.3; the wording of a failed write to
a frozen object, section 1): comparators check only their fixed prefix.
"""

from __future__ import annotations

ARGS_NOT_LOSSLESS = "tool execution arguments must be losslessly JSON-serializable"  # P27
ABORTED_BEFORE_DISPATCH = "tool call aborted before dispatch"  # P29, P42, P53, P61, P68, P88
ABORTED = "tool call aborted"  # P61, P68, P88
INVALID_PRE_DECISION = "invalid tools/pre-execute decision"  # P35
INVALID_POST_DECISION = "invalid tools/post-execute decision"  # P79
RESULT_NOT_LOSSLESS = "tool result must be losslessly JSON-serializable"  # P47, P91, P96
ACCEPT_BOTH = "tools/post-execute accept decision cannot replace both value and content"  # P82
ACCEPT_VALUE_ON_FAILURE = "tools/post-execute cannot replace the value of a failed result"  # P82
BLOCK_FALLBACK = "tool result blocked by post-execute policy"  # P84
UNPRINTABLE = "<unprintable thrown value>"  # P9
NO_AGENT_SESSION = "append: the call has no agent, so no session to append to"  # the scenario language's own
NO_OPEN_TURN = (  # P43
    "approval.request() outside an open turn: the approval/asked + approval/decided audit pair "
    "must be turn-enclosed (a bare event between turns is crash-tail garbage on reload). Ask "
    "from inside the turn that needs the decision."
)
NULLISH_WRAPPER_RESULT = "tools/execute returned no result"  # P63: implementation-defined
FEEDBACK_NOT_ARRAY = "block feedback is not an array"  # P84: implementation-defined
# Messages the spec leaves wholly to the implementation: comparisons accept any text there.
IMPLEMENTATION_DEFINED = frozenset({NULLISH_WRAPPER_RESULT, FEEDBACK_NOT_ARRAY})


def approval_not_supported(name: str) -> str:  # P38
    return f'tool "{name}" requires approval (not yet supported)'


def approval_no_agent(name: str) -> str:  # P38
    return f'tool "{name}" requires approval, but the call has no agent to route it through'


def approval_rejected(name: str) -> str:  # P41
    return f'the user rejected tool "{name}"'


def approval_cancelled(name: str) -> str:  # P41
    return f'approval for tool "{name}" was cancelled'


def approval_unavailable(name: str) -> str:  # P41
    return f'tool "{name}" requires approval, but no approval channel is available'


def approval_unreachable(rendered: str) -> str:  # P41
    return f"unreachable variant in ApprovalOutcome: {rendered}"


def unknown_tool(name: str) -> str:  # P56
    return f'unknown tool "{name}"'


def collapsed(name: str) -> str:  # P28
    return (f'unknown tool "{name}": only `run_code` is callable directly \u2014 '
            f"call `{name}` from inside a `run_code` program instead")


def invalid_output(name: str, violations: list[str]) -> str:  # P73
    return f'tool "{name}" returned invalid output: ' + "; ".join(violations)


def invalid_args(violations: list[str]) -> str:  # P75
    return "invalid arguments: " + "; ".join(violations)


def timed_out(ms: int) -> str:  # P70
    return f"tool call timed out after {ms}ms"


OBSERVER_FAILED = ": tools/result observer failed: "


def observer_failed(name: str, call_id: str, message: str) -> str:  # P101
    return f'tool "{name}" ({call_id}){OBSERVER_FAILED}{message}'


# Output-contract violation texts (P73).
VALUE_NOT_LOSSLESS = "value is not lossless JSON"
RENDER_NOT_LOSSLESS = "output.render returned non-lossless JSON"
META_NOT_LOSSLESS = "output.presentationMeta returned non-lossless JSON"


def value_snapshot_failed(m: str) -> str:
    return f"value snapshot failed: {m}"


def render_failed(m: str) -> str:
    return f"output.render failed: {m}"


def meta_failed(m: str) -> str:
    return f"output.presentationMeta failed: {m}"


# Failed writes to frozen or identity fields raise a TypeError whose wording belongs to the
# engine, not the spec (section 1). The oracle uses V8's wording so that traces read
# naturally next to the real package's.
def frozen_set(key: str) -> str:
    return f"Cannot assign to read only property '{key}' of object '#<Object>'"


def frozen_add(key: str) -> str:
    return f"Cannot add property {key}, object is not extensible"


def frozen_delete(key: str) -> str:
    return f"Cannot delete property '{key}' of #<Object>"


def frozen_define(key: str) -> str:
    return f"Cannot redefine property: {key}"


def getter_only(key: str) -> str:
    return f"Cannot set property {key} of #<Object> which has only a getter"


# A refused write raises a TypeError whose wording the engine chooses (and which depends on
# how the implementation protects the object): any of these stands for any other.
WRITE_REFUSALS: tuple[str, ...] = (
    "Cannot assign to read only property ", "Cannot add property ", "Cannot delete property ",
    "Cannot redefine property: ", "Cannot define property ", "Cannot create property ",
    "Cannot set properties of ", "Cannot set property ",
)

# Prefixes whose tails are implementation-defined (compared by prefix only).
LOOSE_PREFIXES: tuple[str, ...] = (
    "invalid arguments: ",
    "Cannot assign to read only property ",
    "Cannot add property ",
    "Cannot delete property ",
    "Cannot redefine property: ",
    NULLISH_WRAPPER_RESULT,
)
LOOSE_OUTPUT_SCHEMA = " returned invalid output: "  # only when a schema step produced it
