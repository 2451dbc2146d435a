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
NO_OPEN_TURN = (  # P43
    "approval.request() outside an open turn: the approval/asked + approval/decided audit pair "
    "must be turn-enclosed (a bare event between turns is crash-tail garbage on reload). Ask "
    "from inside the turn that needs the decision."
)
NULLISH_WRAPPER_RESULT = "tools/execute returned no result"  # P63: implementation-defined
FEEDBACK_NOT_ARRAY = "block feedback is not an array"  # P84: implementation-defined
# P114 says run_code "cannot be registered"; how the refusal is worded is the implementation's.
RUN_CODE_RESERVED = "run_code is reserved for the Code Mode transport and cannot be registered"
# Messages the spec leaves wholly to the implementation: comparisons accept any text there.
IMPLEMENTATION_DEFINED = frozenset({NULLISH_WRAPPER_RESULT, FEEDBACK_NOT_ARRAY, RUN_CODE_RESERVED})


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


def value_snapshot_failed(m: str) -> str:
    return f"value snapshot failed: {m}"


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
    # JSON.stringify's TypeError for a value that contains itself (P41): V8 adds lines
    # saying where the circle closes, which depend on the value's shape, not on the pipeline.
    "Converting circular structure to JSON",
)
LOOSE_OUTPUT_SCHEMA = " returned invalid output: "  # only when a schema step produced it


# ----------------------------------------------------------------------------- Code Mode (5.15)

BLANK_DESCRIPTION = "invalid description: expected a non-empty string"  # P115
RUN_CODE_NO_OUTPUT = "(run_code completed with no output)"  # P128
BINDING_ARGS_NOT_LOSSLESS = (  # P118
    "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)")
CODE_MODE_PLUGIN = "tools-code-mode"  # P126: the source plugin of an image-bearing sub-call's context


def no_code_runtime(mode: str) -> str:  # P115: <mode> is the deployment's configured mode
    return (f'dsh-tools: mode "{mode}" requires a code runtime \u2014 load a ctx.codeRuntime implementation '
            '(e.g. @deepseek-ai/dsh-code-runtime-worker-thread) or set tools mode to "native"')


def binding_args_failed(m: str) -> str:  # P118
    return f"tool arguments must be lossless JSON: {m}"


def run_over(reason: str, name: str, what: str) -> str:  # P118, P125
    """``what``: ``not dispatched`` (P118), ``tool call abandoned``, ``result discarded`` (P125)."""
    return f"run_code run is over ({reason}); {name} {what}"


NOT_DISPATCHED, ABANDONED, DISCARDED = "not dispatched", "tool call abandoned", "result discarded"
RUN_SETTLED = "run_code settled"  # P125: the run signal's abort reason when the program settles


CAPTURED_OUTPUT = "\nCaptured output:\n"  # P128: what follows a run failure's message when it printed


def code_run_failed(kind: str, message: str, logs: list[str]) -> str:  # P128
    captured = CAPTURED_OUTPUT + "\n".join(logs) if logs else ""
    return f"code run failed ({kind}): {message}{captured}"


def dispatch_log_failed(name: str, m: str) -> str:  # P123
    return f"tools: code-dispatch-log listener failed for {name}: {m}; logging the original settled content"


# The texts of the scenario's scripted code runtime are the kit's (kit/program.py).

# Code Mode's own texts (section 2: exact texts of code-mode rules belong to that profile):
# comparisons under the code-mode profile compare strings with these prefixes exactly.
CODE_MODE_PREFIXES: tuple[str, ...] = (
    "run_code run is over (", "tool arguments must be lossless JSON", "code run failed (",
    RUN_CODE_NO_OUTPUT, BLANK_DESCRIPTION, 'dsh-tools: mode "', "tools: code-dispatch-log listener failed for ",
)
