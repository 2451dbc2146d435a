"""What participants decide: pre-execute decisions (P31), post-execute decisions (P78),
results a ``tools/execute`` wrapper authors (P62, P63), approval outcomes (P41) and guard
denials, well formed and not."""

from __future__ import annotations

from hypothesis import strategies as st

from dsh_conformance.strategies.basics import S, UNDEF, text, weighted
from dsh_conformance.strategies.values import boundary_values, contents, context_lists, lossless_values


PRE_ALLOW = [{"kind": "allow"}, {"kind": "allow", "arguments": {"x": 99}, "name": "forged", "callId": "forged"}]
PRE_DENY = [{"kind": "deny", "reason": "policy says no"}, {"kind": "deny", "reason": ""}]
PRE_ASK = [{"kind": "ask"}, {"kind": "ask", "reason": "please confirm"}, {"kind": "ask", "reason": UNDEF}]
PRE_MALFORMED = [
    UNDEF, None, 0, "allow", [], {"kind": "deny"}, {"kind": "deny", "reason": 5}, {"kind": "ask", "reason": 1},
    {"kind": "maybe"}, {"kind": {"$js": "getter-throws", "message": "kind getter"}},
    {"kind": "deny", "reason": {"$js": "getter-throws", "message": "reason getter"}},
    {"$js": "promise", "resolves": {"kind": "deny", "reason": "decided later"}},
    {"$js": "null-proto", "entries": {"kind": "allow"}},
]
# A deny is well formed only with a string reason (P31); these are contract violations, drawn
# on every pre-execute listener (not only a focused one), so that 100 draws meet them.
PRE_DENY_NO_REASON = [{"kind": "deny"}, {"kind": "deny", "reason": 5}, {"kind": "deny", "reason": None}]
pre_decisions: S = weighted((2, st.sampled_from(PRE_ALLOW)), (2, st.sampled_from(PRE_DENY)),
                            (4, st.sampled_from(PRE_ASK)), (2, st.sampled_from(PRE_MALFORMED)),
                            (1, st.sampled_from(PRE_DENY_NO_REASON)))
"""Pre-execute decisions (P31): well formed, asks often, and not well formed."""

# P84's edges too: a one-character message, and one that is the separator alone (it is not empty)
FEEDBACKS = [[text("blocked")], [], [text("a"), {"type": "image", "attachment": {}}],
             [{"type": "text", "text": 5}, {"type": "text"}], "not an array", [text("x")], [text(""), text("")]]
post_decisions: S = weighted(
    (2, st.just({"kind": "accept"})),
    # decisions in every object form (P78: any non-null object): null-prototype ones
    (1, st.sampled_from([{"$js": "null-proto", "entries": {"kind": "accept", "value": {"np": 1}}},
                         {"$js": "null-proto", "entries": {"kind": "accept", "content": [text("np")]}},
                         {"$js": "null-proto", "entries": {"kind": "block", "feedback": [text("np")]}}])),
    (2, st.builds(lambda c: {"kind": "accept", "content": c}, contents)),
    (2, st.builds(lambda v: {"kind": "accept", "value": v}, boundary_values)),
    (2, st.builds(lambda f: {"kind": "block", "feedback": f}, st.sampled_from(FEEDBACKS))),
    (1, st.builds(lambda cs: {"kind": "accept", "additionalContexts": cs}, context_lists)),
    (1, st.builds(lambda cs: {"kind": "block", "feedback": [text("blocked")], "additionalContexts": cs},
                  context_lists)),
    (1, st.sampled_from([{"kind": "accept", "content": [text("c")], "value": 1},
                         {"kind": "accept", "value": UNDEF}, {"kind": "accept", "content": UNDEF}])),
    (1, st.sampled_from([UNDEF, None, "accept", {"kind": "reject"},
                         {"kind": {"$js": "getter-throws", "message": "kind getter"}},
                         {"$js": "promise", "resolves": {"kind": "accept"}}])),
)
"""Post-execute decisions (P78): accept with content, value or contexts; block; both;
not well formed."""

authored_results: S = weighted(
    (2, st.builds(lambda v: {"isError": False, "value": v}, boundary_values)),
    (1, st.sampled_from([{"$js": "null-proto", "entries": {"isError": False, "value": {"np": 1}}},
                         {"$js": "null-proto", "entries": {"isError": True, "error": {"message": "np"},
                                                           "content": [text("Error: np")]}}])),
    (1, st.builds(lambda v, cs: {"isError": False, "value": v, "content": [text("ignored")],
                                 "additionalContexts": cs}, lossless_values, context_lists)),
    (2, st.builds(lambda c: {"isError": True, "error": {"message": "wrapper failed"}, "content": c}, contents)),
    (1, st.just({"isError": True, "error": {"message": "w", "info": {"name": "WrapError", "code": "W"}},
                 "content": [text("Error: w")], "meta": {"m": 1}, "additionalContexts": []})),
    (1, st.sampled_from([{"isError": True, "content": [text("no error field")]},
                         {"isError": 1, "error": {"message": "truthy"}, "content": []},
                         {"isError": True, "error": {"message": {"$js": "NaN"}}, "content": []},
                         {"value": 3}, 42, "text", None, UNDEF,
                         {"$js": "promise", "resolves": {"isError": False, "value": 5}}])),
)
"""What a ``tools/execute`` wrapper returns instead of ``next()``'s result (P62, P63)."""

OUTCOMES = ["allowed-once", "rejected", "cancelled", "unavailable"]
approval_outcomes: S = weighted(
    (6, st.sampled_from(OUTCOMES)),
    (1, st.sampled_from(["maybe", 7, UNDEF, {"o": 1}, {"$js": "bigint", "value": "9"},
                         {"$js": "promise", "resolves": "allowed-once"},
                         # P41 (revision 2026-12-01): String of a symbol; JSON.stringify's own throw
                         {"$js": "symbol", "description": "q"}, {"o": {"$js": "bigint", "value": "1"}}])),
)

GUARD_DENIALS = ["guard says no", "", None, False, 0, 7, {"why": "x"}, ["a", 1], {"$js": "NaN"},
                 {"$js": "promise", "resolves": UNDEF}, {"$js": "bigint", "value": "3"},
                 {"$js": "symbol", "description": "deny"}, {"$js": "function", "name": "g"}]
