"""Laws of immutability and identity (P11, P22..P25, P99): no write into what is protected
succeeds, a record shows its own call's identity, handed results are frozen."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dsh_conformance.kit.jsvalue import same_value
from dsh_conformance.kit.trace import Observation

from dsh_conformance.laws.framework import (
    ABSENT,
    IDENTITY_FIELDS,
    UI_STAGES,
    UNDEFINED,
    UNKNOWN,
    View,
    Violation,
    law,
    own_props,
)


NO_RESULT_STAGES = ("pre-execute", "approval", "guards", "body", "render", "presentationMeta", "classify")


def _write_fails(value: Any, path: list[str], op: str) -> bool | None:
    """Whether a strict-mode write at ``path`` inside ``value`` throws, when every object
    in ``value`` is frozen (None: cannot tell). A write under ``undefined`` or a primitive
    throws; in a frozen object a set or define throws, and a delete throws only when the
    key is present."""
    if value is UNKNOWN:
        return True if op != "delete" else None
    node: Any = value
    for part in path[:-1]:
        node = _child(node, part)
    key = path[-1]
    if node is UNKNOWN:
        return True if op != "delete" else None
    if not _is_container(node):
        if node is ABSENT or node == UNDEFINED or node is None:
            return True  # TypeError: cannot set (or delete) properties of undefined / null
        return op != "delete"  # a primitive: setting throws, deleting succeeds
    return op != "delete" or _child(node, key) is not ABSENT


def _is_container(v: Any) -> bool:
    return isinstance(v, list) or own_props(v) is not None


def _child(node: Any, key: str) -> Any:
    if node is UNKNOWN:
        return UNKNOWN
    if isinstance(node, list):
        return node[int(key)] if key.isdigit() and int(key) < len(node) else ABSENT
    props = own_props(node)
    if props is None:
        return ABSENT
    return props.get(key, ABSENT)


def _handed(v: View, o: Observation) -> Any:
    """The result handed to the participant that made observation ``o``, if the trace shows it."""
    if o.stage in NO_RESULT_STAGES:
        return ABSENT
    ct = v.calls.get(o.call) if o.call is not None else None
    if ct is None:
        return UNKNOWN
    if o.stage == "post-execute" and (start := ct.first("post-execute", "start")) is not None:
        return start[1].value
    if o.stage == "result" and (res := v.result(o.call)) is not ABSENT:
        return res
    return UNKNOWN


def protected_write(v: View, o: Observation) -> str | None:
    """The rule that makes the write of mutation observation ``o`` fail, or None when it
    may succeed (or the trace cannot tell)."""
    target, op = str(o.value.get("target", "")), str(o.value.get("op", "set"))
    root, *path = target.split(".")
    spec = v.calls[o.call].spec if o.call in v.calls else None
    if root in ("input", "request") or spec is None:
        return None  # the caller's own object and the approval request are not protected
    if not path:
        return "P24"  # a participant cannot rebind the record, its arguments or its result
    if root == "args":
        if o.stage in ("fs-intent", *UI_STAGES):
            return None  # an intent's target, a projection's parsed copy: not the call's arguments
        value = spec.arguments if o.stage == "body" else ABSENT
        return "P25" if _write_fails(value, path, op) else None
    if root == "result":
        return "P11" if _write_fails(_handed(v, o), path, op) else None
    head = path[0]
    exists = {"agent": spec.agent is not None, "parent": spec.parent}.get(head, head in IDENTITY_FIELDS)
    frozen = o.stage == "result"  # frozen in full before tools/result (P99)
    if len(path) == 1:
        if head in IDENTITY_FIELDS:
            return "P24" if op != "delete" or exists else None
        return "P99" if frozen and op != "delete" else None
    if head == "arguments":
        return "P25" if _write_fails(spec.arguments, path[1:], op) else None
    if head in ("callId", "rootCallId", "name", "token"):
        return "P24" if op != "delete" else None  # a primitive string
    if head in ("agent", "parent") and not exists:
        return "P24"  # undefined: the write throws
    return None  # the agent and signal objects are not frozen (P24); other fields: unknown


@law
def no_protected_write_succeeds(v: View) -> Iterator[Violation]:
    """P11, P24, P25, P99: no write to a protected target succeeds: the record's identity
    fields and the arguments snapshot at any depth, any result handed to a participant
    (and the absent result of one handed none), and any field of the record once it is
    frozen before tools/result. Writes follow strict-mode JavaScript: deleting a key a
    frozen object does not have succeeds; the agent and signal objects, the approval
    request and the caller's input object are not protected."""
    for o in v.obs:
        if o.what != "mutate" or not isinstance(o.value, dict) or o.value.get("outcome") != "applied":
            continue
        rule = protected_write(v, o)
        if rule is not None:
            yield Violation(rule, f"call {o.call}: {o.who} ({o.stage}) wrote {o.value.get('target')} "
                                  f"({o.value.get('op')}) and it succeeded")


@law
def identity_is_the_calls_own(v: View) -> Iterator[Violation]:
    """P22, P23, P24, P25, P99: every participant that observes the record sees the call's
    own identity: its call id, name, root call id (the input's, else the call id), agent,
    parent presence and arguments (the snapshot of the input's arguments, undefined when
    they are not lossless); observers of tools/result see it frozen. The body's arguments
    are the record's own frozen snapshot. A difference that follows an identity write
    that succeeded breaks P24 ("original values everywhere"); without one, the rule that
    fixes the field's value (P22 call id, P23 root id, P25 arguments)."""
    written: dict[str, int] = {}  # call -> position of its first identity write that succeeded
    for i, o in enumerate(v.obs):
        if o.what == "mutate" and isinstance(o.value, dict) and o.value.get("outcome") == "applied" \
                and str(o.value.get("target", "")).split(".")[:1] == ["record"] \
                and str(o.value.get("target", "")).split(".")[1:2] in ([f] for f in IDENTITY_FIELDS) \
                and o.call is not None:
            written.setdefault(o.call, i)
    for i, o in enumerate(v.obs):
        if o.what != "observe" or o.call is None or not isinstance(o.value, dict):
            continue
        spec = v.calls[o.call].spec if o.call in v.calls else None
        if spec is None:
            continue
        after_write = o.call in written and written[o.call] < i
        # a loop call's arguments are the loop's parse of the block's raw text (P16)
        parsed = "P16" if v.loop is not None and any(b.id == o.call for b in v.loop.blocks) else "P25"
        seen = o.value
        if "hasAgent" in seen:  # observe record
            checks = [("callId", spec.callId, "P22"), ("name", spec.name, "P24"),
                      ("rootCallId", spec.rootCallId, "P23"), ("hasAgent", spec.agent is not None, "P24"),
                      ("hasParent", spec.parent, "P24"), ("arguments", spec.arguments, parsed)]
            if spec.agent is not None:
                checks.append(("agent", spec.agent, "P24"))
            for key, want, rule in checks:
                if want is UNKNOWN:
                    continue
                if not same_value(seen.get(key, UNDEFINED), want):
                    yield Violation("P24" if after_write else rule,
                                    f"call {o.call}: {o.who} saw record.{key} = {seen.get(key)!r}, not {want!r}")
            if o.stage == "result" and seen.get("frozen") is not True:
                yield Violation("P99", f"call {o.call}: tools/result observer {o.who} saw an unfrozen record")
        elif "isRecordArguments" in seen and o.stage == "body":  # observe args
            if seen.get("isRecordArguments") is not True or seen.get("frozen") is not True:
                yield Violation("P25", f"call {o.call}: the body's arguments are not the record's frozen snapshot")
            if spec.arguments is not UNKNOWN and not same_value(seen.get("args"), spec.arguments):
                yield Violation("P24" if after_write else parsed,
                                f"call {o.call}: the body received other arguments than the snapshot"
                                + (" of the block's parsed arguments" if parsed == "P16" else ""))


@law
def handed_results_frozen(v: View) -> Iterator[Violation]:
    """P11, P99: every result handed to a participant (a wrapper's ``next()`` value,
    post-execute, finalizeContent, tools/result) is deeply frozen, and tools/result
    observers are handed the final result."""
    for o in v.obs:
        if o.what != "observe" or not isinstance(o.value, dict) or "result" not in o.value or "hasAgent" in o.value:
            continue
        if o.stage in UI_STAGES:
            continue  # a client builds the projection's argument from the log, not the pipeline
        if o.stage == "code-dispatch-log":
            continue  # handed the settled sub-call's log entry, not a result (P122)
        handed = o.value["result"]
        if handed == UNDEFINED:
            continue
        if o.value.get("frozen") is not True:
            yield Violation("P11", f"call {o.call}: {o.who} ({o.stage}) was handed a result that is not frozen")
        if o.stage == "result" and o.call is not None:
            final = v.result(o.call)
            if final is not ABSENT and not same_value(handed, final):
                yield Violation("P99", f"call {o.call}: observer {o.who} was handed another outcome than the final one")
