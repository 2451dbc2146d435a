"""Semantic expectations of a corpus case, checked against a trace.

A corpus case says, next to its scenario, what the spec requires of its trace, in a few
plain forms (all optional):

``results``      ``{callId: pattern}``: the call's final result matches the pattern.
``participants`` ``{id: n}``: the participant was invoked exactly n times.
``order``        ``[id, ...]``: these participants were first invoked in this order.
``stages``       ``{callId: {"ran": [stage...], "skipped": [stage...]}}``: which stages
                 started for the call (``pre-execute``, ``approval``, ``guards``,
                 ``execute``, ``body``, ``post-execute``, ``finalize``, ``result``).
``events``       ``[pattern, ...]``: the session events, in order, exactly (each a pattern).
``eventTypes``   ``["tool/call:c1", "user/message", ...]``: the session event types in
                 order, with the call id after a colon where the event has one.
``mutations``    ``[{"target": ..., "outcome": "failed"|"applied"}, ...]``, in order.
``observations`` ``[pattern, ...]``: these observations occur, in this order (a subsequence).
``warnings``     ``[text, ...]``: exactly these warnings.

A pattern matches a value when it is equal to it, except that a pattern object matches
any object having at least its keys with matching values; ``{"$absent": true}`` as a
key's pattern requires the key to be absent, ``{"$present": true}`` only present, and
``{"$prefix": "text"}`` matches a string that starts with the text (for messages whose
tail is implementation-defined).
"""

from __future__ import annotations

from typing import Any

from dsh_conformance.kit.jsvalue import same_value
from dsh_conformance.kit.trace import PIPELINE_STAGES, Trace

STAGES = PIPELINE_STAGES


def matches(pattern: Any, value: Any) -> bool:
    if isinstance(pattern, dict) and set(pattern) == {"$prefix"}:
        return isinstance(value, str) and value.startswith(pattern["$prefix"])
    if isinstance(pattern, dict) and set(pattern) == {"$present"}:
        return True  # used as a key's pattern: the key exists, with any value
    if isinstance(pattern, dict) and "$js" not in pattern:
        if not isinstance(value, dict):
            return False
        for k, p in pattern.items():
            if isinstance(p, dict) and p.get("$absent") is True:
                if k in value:
                    return False
            elif k not in value or not matches(p, value[k]):
                return False
        return True
    if isinstance(pattern, list):
        return isinstance(value, list) and len(pattern) == len(value) and all(
            matches(p, v) for p, v in zip(pattern, value, strict=False))
    return same_value(pattern, value)


def _stages_of(trace: Trace, call: str) -> set[str]:
    ran = set()
    for o in trace.observations:
        if o.call != call:
            continue
        if o.stage in STAGES and o.what in ("start", "call"):
            ran.add(o.stage)
    return ran


def _event_label(e: Any) -> str:
    data = e.data if isinstance(e.data, dict) else {}
    call = data.get("callId")
    if call is None and isinstance(data.get("message"), dict):
        call = data["message"].get("source", {}).get("callId")
    return f"{e.type}:{call}" if call is not None and e.type in ("tool/call", "tool/result") else e.type


def check(expect: dict[str, Any], trace: Trace) -> list[str]:
    """Every way ``trace`` falls short of ``expect``, as readable sentences."""
    problems: list[str] = []
    results = {r.callId: r for r in trace.results}
    for call, pattern in expect.get("results", {}).items():
        got = results.get(call)
        if got is None:
            problems.append(f"no final result for call {call}")
        elif not matches(pattern, got.result):
            problems.append(f"result of {call}: expected {pattern}, got {got.result}")
        elif not (got.frozen and got.observed):
            problems.append(f"result of {call} is not the frozen object observers received")
    calls: dict[str, int] = {}
    first: list[str] = []
    for o in trace.observations:
        if o.what == "call" and o.who is not None:
            calls[o.who] = calls.get(o.who, 0) + 1
            if o.who not in first:
                first.append(o.who)
    for who, n in expect.get("participants", {}).items():
        if calls.get(who, 0) != n:
            problems.append(f"participant {who}: expected {n} invocation(s), got {calls.get(who, 0)}")
    order = expect.get("order")
    if order is not None:
        seen = [w for w in first if w in order]
        if seen != order:
            problems.append(f"participants first invoked in order {seen}, expected {order}")
    for call, spec in expect.get("stages", {}).items():
        ran = _stages_of(trace, call)
        for stage in spec.get("ran", []):
            if stage not in ran:
                problems.append(f"call {call}: stage {stage} did not run")
        for stage in spec.get("skipped", []):
            if stage in ran:
                problems.append(f"call {call}: stage {stage} ran but must not")
    if "eventTypes" in expect:
        got_types = [_event_label(e) for e in trace.events]
        if got_types != expect["eventTypes"]:
            problems.append(f"session events {got_types}, expected {expect['eventTypes']}")
    if "events" in expect:
        got_events = [e.model_dump(mode="python", exclude_none=True) for e in trace.events]
        if not matches(expect["events"], got_events):
            problems.append(f"session events do not match: got {got_events}")
    if "mutations" in expect:
        got_mut = [o.value for o in trace.observations if o.what == "mutate"]
        if not matches(expect["mutations"], got_mut):
            problems.append(f"mutation attempts {got_mut}, expected {expect['mutations']}")
    if "observations" in expect:
        pending = list(expect["observations"])
        for o in trace.observations:
            if pending and matches(pending[0], o.model_dump(mode="python")):
                pending.pop(0)
        if pending:
            problems.append(f"observation not found in order: {pending[0]}")
    if "warnings" in expect and trace.warnings != expect["warnings"]:
        problems.append(f"warnings {trace.warnings}, expected {expect['warnings']}")
    return problems
