"""Laws of the gate (P2, P3, P31..P54): the only ways through pre-execute, approval and the
guards, read against the spec's transition table (``oracle.transitions``) and decision
vocabularies (``kit.decisions``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dsh_conformance.oracle import transitions
from dsh_conformance.kit.decisions import GRANTED, OUTCOMES, PRE_REASONS
from dsh_conformance.kit.jsvalue import Thrown, is_lossless, to_string
from dsh_conformance.kit.scenario import Behavior, Scenario, ShippedApproval
from dsh_conformance.kit.trace import Observation

from dsh_conformance.laws.framework import (
    ABSENT,
    CallSpec,
    CallTrace,
    UNDEFINED,
    View,
    Violation,
    is_failure,
    law,
    own_props,
)


def pre_route(d: Any) -> str:
    """P31: ``allow``, ``deny``, ``ask`` for a well-formed pre-execute decision, else
    ``malformed`` (including decisions whose ``kind`` or ``reason`` read throws)."""
    props = own_props(d)
    if props is None:
        return "malformed"
    kind = props.get("kind")
    rule = PRE_REASONS.get(kind) if isinstance(kind, str) else None
    reason = props.get("reason", UNDEFINED)
    if rule == "ignored" or (rule is not None and isinstance(reason, str)) or (
            rule == "absent-or-string" and reason == UNDEFINED):
        return kind
    return "malformed"


def _denial_goes_to_post(v: Any) -> bool:
    """P46, P47: a guard's denial value goes to post-execute when it is lossless and its
    ``ToString`` does not throw; otherwise the denial is a final failure."""
    if not is_lossless(v):
        return False
    try:
        to_string(v)
    except Thrown:
        return False
    return True


@dataclass
class Route:
    """How a call left the gate, as its portable observations show it."""
    pre: str | None = None  # allow / deny / ask / malformed / throw; None: pre-execute never ran
    outcome: Any = ABSENT  # the approval outcome, if an approval request was answered
    approval_throw: bool = False
    requested: bool = False
    guard_denial: Any = ABSENT
    guard_throw: bool = False
    denial_index: int | None = None  # where the gate decided against the call


def route(ct: CallTrace) -> Route:
    r = Route()
    if ct.first("pre-execute", "throw") is not None:
        r.pre = "throw"
    elif (end := ct.first("pre-execute", "end")) is not None:
        r.pre = pre_route(end[1].value)
    r.requested = ct.first("approval", "request") is not None
    if (o := ct.first("approval", "outcome")) is not None:
        r.outcome = o[1].value
    r.approval_throw = ct.first("approval", "throw") is not None
    guards: dict[str, list[tuple[int, Observation]]] = defaultdict(list)
    for i, o in ct.obs:
        if o.stage == "guards" and o.who is not None and o.what in ("return", "throw"):
            guards[o.who].append((i, o))
    for i, o in sorted(x for xs in guards.values() for x in xs):
        if o.what == "throw":
            r.guard_throw, r.denial_index = True, i
            break
        if o.value != UNDEFINED:
            r.guard_denial, r.denial_index = o.value, i
            break
    return r


def _allowed(r: Route) -> bool:
    """Whether the gate let the call through to the guards (P44)."""
    return r.pre == "allow" or (r.pre == "ask" and r.outcome == GRANTED)


# The observations of each stage of P2's table a law can see run (the body runs inside
# tools/execute).
OBSERVED = {transitions.PRE_EXECUTE: ("pre-execute",), transitions.APPROVAL: ("approval",),
            transitions.GUARDS: ("guards",), transitions.EXECUTE: ("execute", "body"),
            transitions.POST_EXECUTE: ("post-execute",)}


def not_after(source: str, outcome: str) -> tuple[str, ...]:
    """P2: the stages that must not run once ``source`` ended with ``outcome``: those the
    table's transition does not lead to, other than the ones the call passed on its way."""
    ahead = transitions.reachable(transitions.after(source, outcome))
    if transitions.DENIED in ahead:
        ahead |= {transitions.POST_EXECUTE}  # a denial is post-execute
    behind = transitions.upstream(source)
    return tuple(o for stage, observed in OBSERVED.items() if stage not in ahead and stage not in behind for o in observed)


@law
def gate_transitions(v: View) -> Iterator[Violation]:
    """P2, P3, P32, P34, P37, P40, P44, P46, P49, P54, P65: the only ways through the gate.
    A throwing or malformed pre-execute, an approval throw or an answer outside the
    vocabulary, and a guard throw end the call as final failures (no later stage but
    finalizeContent and tools/result). A deny, an approval that does not grant, or a guard
    denial never reaches tools/execute or the body; they go to post-execute (a guard denial
    only when its value can be materialized, P47). tools/execute runs only after an allow
    (or a granted ask) that no guard denied, and a tools/execute throw skips post-execute."""
    for cid, ct in v.calls.items():
        r = route(ct)
        ran = {o.stage for _, o in ct.obs if (o.who is None and o.what in ("start", "request")) or o.what == "call"}
        guard_calls = ct.calls("guards")
        executes = "execute" in ran or "body" in ran
        post = "post-execute" in ran and ct.first("post-execute", "start") is not None

        def forbid(stages: tuple[str, ...], rule: str, why: str) -> Iterator[Violation]:
            for s in stages:
                if s in ran:
                    yield Violation(rule, f"call {cid}: {s} ran after {why}")

        if r.pre in ("throw", "malformed"):
            why = "a pre-execute throw" if r.pre == "throw" else "a malformed pre-execute decision"
            yield from forbid(not_after(transitions.PRE_EXECUTE, "throw"), "P34", why)
            continue
        if r.pre == "deny":
            yield from forbid(not_after(transitions.PRE_EXECUTE, "deny"), "P3", "a pre-execute deny")
            if not post:
                yield Violation("P32", f"call {cid}: a pre-execute deny did not reach post-execute")
            continue
        if r.pre == "ask":
            if r.approval_throw or (r.requested and r.outcome is not ABSENT and r.outcome not in OUTCOMES):
                yield from forbid(not_after(transitions.APPROVAL, "throw"), "P40",
                                  "an approval throw or an outcome outside the vocabulary")
                continue
            if not r.requested or (r.outcome in OUTCOMES and r.outcome != GRANTED):
                rule = "P37" if not r.requested else "P40"
                yield from forbid(not_after(transitions.APPROVAL, "no-service" if not r.requested else r.outcome), "P3",
                                  "an approval that did not grant")
                if not post:
                    yield Violation(rule, f"call {cid}: an ungranted ask did not reach post-execute")
                continue
        if guard_calls and not _allowed(r):
            yield Violation("P44", f"call {cid}: guards ran without an allow or a granted ask")
        if r.guard_throw or r.guard_denial is not ABSENT:
            assert r.denial_index is not None
            later_guards = [o.who for i, o in guard_calls if i > r.denial_index]
            rule = "P49" if r.guard_throw else "P46"
            if later_guards:
                yield Violation("P45", f"call {cid}: guard {later_guards[0]} ran after the pass was decided")
            if r.guard_throw:  # P2: to final, post-execute included among what must not run
                yield from forbid(not_after(transitions.GUARDS, "throw"), rule, "a guard throw")
                continue
            yield from forbid(not_after(transitions.GUARDS, "deny"), rule, "a guard denial")
            if post != _denial_goes_to_post(r.guard_denial):  # P47: to post-execute only when it materializes
                yield Violation("P47", f"call {cid}: a guard denial {'reached' if post else 'did not reach'} post-execute")
            continue
        if executes and not _allowed(r):
            yield Violation("P54", f"call {cid}: tools/execute ran without an allow or a granted ask")
        if ct.first("execute", "throw") is not None and post:
            yield Violation("P65", f"call {cid}: post-execute ran after a tools/execute throw")


def _guards_always_reached(scenario: Scenario, spec: CallSpec) -> list[str]:
    """Guards every allowed pass of this call must reach: registered from the start, on
    the global layer or the call's scope chain, never unregistered by any step."""
    unregistered = set()
    behaviors: list[Behavior] = []
    for t in scenario.tools:
        behaviors += [b for b in (t.body, t.finalizeContent, t.concurrencySafe, t.output.render,
                                  t.output.presentationMeta) if b is not None]
    behaviors += [l.script for l in scenario.listeners if l.script is not None]
    behaviors += [g.script for g in scenario.guards]
    if scenario.approval is not None and not isinstance(scenario.approval, ShippedApproval):
        behaviors.append(scenario.approval.script)
    for b in behaviors:
        for _, step in b.all_steps():
            if step.do == "unregister":
                unregistered.add(step.ref)
    chain = set()
    parents = {a.id: a.parent for a in scenario.agents}
    agent = spec.agent
    while agent is not None:
        chain.add(agent)
        agent = parents.get(agent)
    return [g.id for g in scenario.guards
            if g.registered and g.id not in unregistered and (g.scope is None or g.scope in chain)]


@law
def guards_before_dispatch(v: View) -> Iterator[Violation]:
    """P44, P54: no call reaches tools/execute without passing the guard pass when guards
    apply to it: a guard that is always registered for the call's scope chain must have
    been consulted (and abstained) before tools/execute starts."""
    for cid, ct in v.calls.items():
        if ct.spec is None or (start := ct.first("execute", "start")) is None:
            continue
        required = _guards_always_reached(v.scenario, ct.spec)
        if not required:
            continue
        consulted = {o.who for i, o in ct.calls("guards") if i < start[0]}
        missing = [g for g in required if g not in consulted]
        if missing:
            yield Violation("P44", f"call {cid}: tools/execute started without consulting guard {missing[0]}")


@law
def denials_fail(v: View) -> Iterator[Violation]:
    """P3, P48, P87: a call that pre-execute denied, approval did not grant or a guard
    denied ends with ``isError: true``, and so does a call whose result reached
    post-execute as a failure (post-execute cannot turn a failure into a success; nor can
    finalizeContent, P94)."""
    for cid, ct in v.calls.items():
        res = v.result(cid)
        if res is ABSENT or is_failure(res):
            continue
        r = route(ct)
        if r.pre == "deny" or (r.pre == "ask" and r.outcome != "allowed-once"):
            yield Violation("P3", f"call {cid}: denied, yet the final result is a success")
        elif r.guard_denial is not ABSENT or r.guard_throw:
            yield Violation("P48", f"call {cid}: a guard denied it, yet the final result is a success")
        elif (start := ct.first("post-execute", "start")) is not None and is_failure(start[1].value):
            yield Violation("P87", f"call {cid}: post-execute turned a failure into a success")


@law
def approval_audit_pairs(v: View) -> Iterator[Violation]:
    """P43: the shipped service appends ``approval/decided`` after ``approval/asked`` with
    the same id, exactly once per asked; a custom service appends neither."""
    asked: dict[Any, int] = {}
    decided: Counter[Any] = Counter()
    shipped = isinstance(v.scenario.approval, ShippedApproval)
    for n, e in enumerate(v.trace.events):
        if e.type not in ("approval/asked", "approval/decided"):
            continue
        if not shipped:
            yield Violation("P43", f"{e.type} without the shipped approval service")
            return
        key = (e.agent, e.data.get("id") if isinstance(e.data, dict) else None)
        if e.type == "approval/asked":
            asked[key] = n
        elif key not in asked:
            yield Violation("P43", f"approval/decided {key[1]!r} without approval/asked before it")
        else:
            decided[key] += 1
    for key in asked:
        if decided[key] != 1:
            yield Violation("P43", f"approval/asked {key[1]!r} decided {decided[key]} times")
