"""Value probes: more side calls (``conformance.strategies.side_calls``) whose body hands
the pipeline one of the rarer value shapes of spec 3.10 and 3.11, so that the generated
default run meets each of them, not only the corpus.

A drawn value is one of many in long lists (``values.THROWN``, ``values.JS_ONLY``...), and
in a hundred draws a given entry is often never picked. The probes are few, each aimed at
one conversion the pipeline makes of a participant's value, and four are drawn per draw
that has side calls:

- a thrown value whose ``message(x)`` (P9) is an Error's missing message (the empty
  string, not ``undefined``), a hostile value or a symbol met by ``ToString`` inside an
  array (P9: unprintable), a double zero of either sign (``String`` gives ``"0"``);
- a body value whose snapshot (P12, P13) orders an index key before a key that starts
  with a digit but is no index, meets a double ``-0`` (not lossless), or reads a getter
  that throws a value of its own;
- a ``tools/execute`` wrapper that authors a result whose ``isError`` is a number
  (P63: truthiness, 0 is a success, 1 a failure) or that is a null-prototype object, and
  a post-execute decision that is one (P78: read through its entries) or an array (an
  object, but not well formed);
- where the scenario's approval service can answer it (none, or a custom one, which steps
  aside), a fifth call asked about and answered with an outcome outside the vocabulary
  whose JSON text (P41) meets a cycle (JSON.stringify throws), one object reached twice
  (written twice) or a getter that throws (its throw propagates).

Every drawn participant steps aside for the probe calls (as for the other side calls) and
no decision of the side-call recipe is aimed at them, so only the probe decides their fate.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import DELEGATE

from dsh_conformance.strategies.basics import S, err, message

PROBE_CALLS = ("p1", "p2", "p3", "p4")
PROBE_TOOL = "tp"

# What a probe call's body does, what a wrapper of its own returns instead of calling next()
# (None: no wrapper, the body's outcome is the result), and what a post-execute listener of
# its own decides (None: no decision).
PROBES: list[tuple[list[dict[str, Any]], Any, Any]] = [
    ([{"do": "throw", "value": {"$js": "error", "class": "Error"}}], None, None),  # P9: message "" (own none)
    ([{"do": "throw", "value": {"$js": "error", "class": "TypeError", "name": "Named"}}], None, None),
    ([{"do": "throw", "value": ["a", {"$js": "hostile"}]}], None, None),  # P9: ToString of an element throws
    ([{"do": "throw", "value": [{"$js": "symbol", "description": "nested"}]}], None, None),  # 3.1: ToString(symbol) throws
    ([{"do": "throw", "value": -0.0}], None, None),  # a double -0 in the document: String(-0) is "0"
    ([{"do": "throw", "value": [0.0, 1]}], None, None),
    # P13: index keys first, then insertion order; P73: the JSON text escapes lone surrogates
    ([{"do": "return", "value": {"10": 1, "07": 2, "a": "lone \udc00", "k\ud800": 3, "2": 4}}], None, None),
    ([{"do": "return", "value": {"z": -0.0}}], None, None),  # P12: -0 is not lossless
    ([{"do": "return", "value": {"g": {"$js": "getter-throws", "thrown": err("thrown by a getter", "RangeError")}}}],
     None, None),  # P13: the read's own throw
    ([{"do": "return", "value": 1}], {"isError": 0, "value": "zero is no error", "content": []}, None),  # P63
    ([{"do": "return", "value": 1}], {"isError": 1, "error": {"message": "one is an error"}, "content": []}, None),
    # P63, P78: a result and a decision that are null-prototype objects (read through their
    # entries), a decision that is an array (an object, but no decision: not well formed)
    ([{"do": "return", "value": 1}], {"$js": "null-proto", "entries": {"isError": False, "value": {"np": "\ud800"}}}, None),
    ([{"do": "return", "value": 2}], None, {"$js": "null-proto", "entries": {"kind": "accept", "value": "np"}}),
    ([{"do": "throw", "value": "probe failed"}], None, {"$js": "null-proto", "entries": {"kind": "block",
                                                                                     "feedback": [[1], "why"]}}),
    ([{"do": "return", "value": 3}], None, [{"kind": "accept", "value": "in an array"}]),
    # P78, P83: a block whose feedback is no array throws (the listener's TypeError); awaiting
    # a hostile decision reads its `then`, which throws; a wrapper's rejected promise is its throw
    ([{"do": "return", "value": 5}], None, {"kind": "block", "feedback": "not an array"}),
    ([{"do": "return", "value": 6}], None, {"$js": "hostile"}),
    ([{"do": "return", "value": 7}], {"$js": "promise", "rejects": err("the wrapper's promise rejected")}, None),
    ([{"do": "return", "value": {"$js": "array", "items": [1, [2]], "extra": {"k": 1}}}], None, None),  # P12
    # P78: a decision a listener returns as a promise is awaited, one that resolves to a promise
    # too; P81, P85: its value replaces the result, which then carries the decision's context
    ([{"do": "return", "value": 4}], None, {"$js": "promise", "resolves": {"$js": "promise", "resolves": {
        "kind": "accept", "value": "awaited twice", "additionalContexts": [message("mp", "from a probe's decision")]}}}),
]

probes: S = st.integers(0, len(PROBES) - 1).map(
    lambda i: [PROBES[(i + k) % len(PROBES)] for k in range(len(PROBE_CALLS))])
"""The probes of one draw, one per probe call: consecutive ones of the list, so that a draw
has no probe twice and the default run's draws with side calls (some thirty in a hundred)
meet each of them."""

WRAPPER_ID, POST_ID = "Lp-exec", "Lp-post"


def probe_listeners(drawn: list[tuple[list[dict[str, Any]], Any, Any]]) -> list[dict[str, Any]]:
    """The listeners of the probe calls' ``drawn`` probes: a ``tools/execute`` wrapper that
    authors a result, a ``tools/post-execute`` listener that decides (each for its probes
    only, delegating for every other call)."""
    wrapped = {p: r for p, (_, r, _) in zip(PROBE_CALLS, drawn) if r is not None}
    decided = {p: d for p, (_, _, d) in zip(PROBE_CALLS, drawn) if d is not None}
    return [_listener(i, event, by) for i, event, by in ((WRAPPER_ID, "tools/execute", wrapped),
                                                          (POST_ID, "tools/post-execute", decided)) if by]


def _listener(lid: str, event: str, by_call: dict[str, Any]) -> dict[str, Any]:
    return {"id": lid, "event": event, "script": {
        "steps": list(DELEGATE),
        "byCall": {cid: [{"do": "return", "value": result}] for cid, result in by_call.items()}}}


ASKED_CALL = "p5"
PROBE_AGENT = "ap"
OUTCOME_PROBES: list[Any] = [
    {"outcome": "allowed-once", "self": {"$js": "cycle", "up": 1}},
    [{"up": [{"$js": "cycle", "up": 2}]}],
    {"a": {"$js": "shared", "id": "sp1", "value": {"k": [1, True]}}, "b": {"$js": "shared", "id": "sp1"}},
    {"n": 1, "g": {"$js": "getter-throws", "message": "outcome getter"}},
]
outcome_probes: S = st.sampled_from(OUTCOME_PROBES)


def asked_probe(doc: dict[str, Any], outcome: Any, asks: bool) -> dict[str, Any] | None:
    """The asked probe call (see the module's doc), set up in ``doc`` in place: an agent of
    its own, a pre-execute listener that asks for it alone, and the approval service's
    answer for it. None, and ``doc`` untouched, where the scenario's service is not a
    custom one, or where it has none and ``asks`` (something drawn asks: it would meet
    the service this adds)."""
    approval = doc.get("approval")
    answer = [{"do": "return", "value": outcome}]
    if approval is None and not asks:
        doc["approval"] = {"service": "custom", "script": {"steps": [{"do": "return", "value": "allowed-once"}],
                                                           "byCall": {ASKED_CALL: answer}}}
    elif approval is not None and approval.get("service") == "custom":
        script = approval.get("script")
        script = {"steps": script} if isinstance(script, list) else dict(script or {})
        script["byCall"] = {**script.get("byCall", {}), ASKED_CALL: answer}
        approval["script"] = script
    else:
        return None
    doc.setdefault("agents", []).append({"id": PROBE_AGENT})
    doc.setdefault("listeners", []).append({"id": "Lp-ask", "event": "tools/pre-execute", "prepend": True, "script": {
        "steps": list(DELEGATE), "byCall": {ASKED_CALL: [{"do": "return", "value": {"kind": "ask"}}]}}})
    return {"callId": ASKED_CALL, "name": PROBE_TOOL, "arguments": {"x": 1}, "agent": PROBE_AGENT}
