"""Value probes: two more side calls (``conformance.strategies.side_calls``) whose body hands
the pipeline one of the rarer value shapes of spec 3.10 and 3.11, so that the generated
default run meets each of them, not only the corpus.

A drawn value is one of many in long lists (``values.THROWN``, ``values.JS_ONLY``...), and
in a hundred draws a given entry is often never picked. The probes are few, each aimed at
one conversion the pipeline makes of a participant's value, and two are drawn per draw
that has side calls:

- a thrown value whose ``message(x)`` (P9) is an Error's missing message (the empty
  string, not ``undefined``), a hostile value or a symbol met by ``ToString`` inside an
  array (P9: unprintable), a double zero of either sign (``String`` gives ``"0"``);
- a body value whose snapshot (P12, P13) orders an index key before a key that starts
  with a digit but is no index, meets a double ``-0`` (not lossless), or reads a getter
  that throws a value of its own;
- a ``tools/execute`` wrapper that authors a result whose ``isError`` is a number
  (P63: truthiness, 0 is a success, 1 a failure);
- where the scenario's approval service can answer it (none, or a custom one, which steps
  aside), a third call asked about and answered with an outcome outside the vocabulary
  whose JSON text (P41) meets a cycle (JSON.stringify throws), one object reached twice
  (written twice) or a getter that throws (its throw propagates).

Every drawn participant steps aside for the probe calls (as for the other side calls) and
no decision of the side-call recipe is aimed at them, so only the probe decides their fate.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import DELEGATE

from .basics import S, err

PROBE_CALLS = ("p1", "p2")
PROBE_TOOL = "tp"

# What a probe call's body does, and what a wrapper of its own returns instead of calling
# next() (None: no wrapper, the body's outcome is the result).
PROBES: list[tuple[list[dict[str, Any]], Any]] = [
    ([{"do": "throw", "value": {"$js": "error", "class": "Error"}}], None),  # P9: message "" (own none)
    ([{"do": "throw", "value": {"$js": "error", "class": "TypeError", "name": "Named"}}], None),
    ([{"do": "throw", "value": ["a", {"$js": "hostile"}]}], None),  # P9: ToString of an element throws
    ([{"do": "throw", "value": [{"$js": "symbol", "description": "nested"}]}], None),  # 3.1: ToString(symbol) throws
    ([{"do": "throw", "value": -0.0}], None),  # a double -0 in the document: String(-0) is "0"
    ([{"do": "throw", "value": [0.0, 1]}], None),
    ([{"do": "return", "value": {"10": 1, "07": 2, "a": 3, "2": 4}}], None),  # P13: index keys first, then insertion order
    ([{"do": "return", "value": {"z": -0.0}}], None),  # P12: -0 is not lossless
    ([{"do": "return", "value": {"g": {"$js": "getter-throws", "thrown": err("thrown by a getter", "RangeError")}}}],
     None),  # P13: the read's own throw
    ([{"do": "return", "value": 1}], {"isError": 0, "value": "zero is no error", "content": []}),  # P63
    ([{"do": "return", "value": 1}], {"isError": 1, "error": {"message": "one is an error"}, "content": []}),
    ([{"do": "return", "value": {"s": "lone \udc00", "k\ud800": 1}}], None),  # P73: the JSON text escapes them
]

probes: S = st.lists(st.sampled_from(PROBES), min_size=len(PROBE_CALLS), max_size=len(PROBE_CALLS))
"""The probes of one draw, one per probe call."""

WRAPPER_ID = "Lp-exec"


def probe_wrapper(wrapped: dict[str, Any]) -> dict[str, Any] | None:
    """The ``tools/execute`` listener that authors the results of ``wrapped`` (call id to
    result), calling next() for every other call; None when no probe has a wrapper."""
    if not wrapped:
        return None
    return {"id": WRAPPER_ID, "event": "tools/execute", "script": {
        "steps": list(DELEGATE),
        "byCall": {cid: [{"do": "return", "value": result}] for cid, result in wrapped.items()}}}


ASKED_CALL = "p3"
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
