"""Oracle-independent laws that hold for every trace of every scenario.

``check(scenario, trace)`` returns the violations of these laws. It reads only what an
implementation under test reports (protocol v1): the portable observations
(``oracle.trace.is_portable``: the probe points of each seam and every scripted
participant's own observations), the session events, the final results and the
warnings, together with the scenario. So the same laws judge an IUT's trace and the
oracle's, and they catch a wrong oracle as well as a wrong implementation.

Each law is a small function that names the rule it enforces in every violation. The
JavaScript semantics the laws lean on (lossless JSON, snapshots, ``ToString``, equality of
wire values) come from ``oracle.jsvalue``, which is cross-checked against node in the
project's tests.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dsh_conformance.oracle import realm
from dsh_conformance.oracle.jsvalue import NotLossless, Thrown, is_lossless, same_value, snapshot, to_string, token
from dsh_conformance.oracle.scenario import Behavior, DirectRun, LoopRun, Scenario, ShippedApproval
from dsh_conformance.oracle.trace import Observation, Trace, is_portable
from dsh_conformance.oracle.value_refs import definitions, walk


@dataclass(frozen=True)
class Violation:
    """A law that ``trace`` breaks: the rule it enforces and what went wrong."""
    rule: str
    message: str


UNDEFINED = {"$js": "undefined"}
ABSENT = object()  # "this call's record arguments cannot be predicted" (never the case today)

# Stage ranks of P1: pre-execute, approval, guards, tools/execute (with the body),
# post-execute, finalizeContent, tools/result.
RANK = {"pre-execute": 1, "approval": 2, "guards": 3, "execute": 4, "body": 4, "post-execute": 5,
        "finalize": 6, "result": 7}
STAGE_NAME = {1: "pre-execute", 2: "approval", 3: "guards", 4: "tools/execute", 5: "post-execute",
              6: "finalizeContent", 7: "tools/result"}
UI_STAGES = ("presentCall", "presentResult")  # a client's projections, outside the pipeline (P14)
# What follows a sub-call's tools/result and is still its own (P122): its dispatch log.
AFTER_RESULT = ("result", *UI_STAGES, "code-dispatch-log")
BODY_WORK = ("fs-intent", "tool-event")  # what a body dispatches or appends while it runs (P71)
IDENTITY_FIELDS = ("callId", "rootCallId", "name", "agent", "parent", "arguments", "token")


# ============================================================================ the trace, per call

@dataclass(frozen=True)
class CallSpec:
    """What the scenario says about one call: its identity as the record must show it."""
    callId: str
    name: str
    agent: str | None
    rootCallId: str
    parent: bool
    arguments: Any  # the record's expected arguments: the snapshot, or undefined (P25, P27)


@dataclass
class CallTrace:
    """The portable observations of one call, in trace order, with their positions."""
    spec: CallSpec | None
    obs: list[tuple[int, Observation]] = field(default_factory=list)
    # (stage, what) -> the probe observations of that kind, built at the first question: the
    # laws ask a call for its probes tens of times (obs is complete by then, see view()).
    _probes: dict[tuple[str, str], list[tuple[int, Observation]]] | None = field(default=None, repr=False)
    _calls: list[tuple[int, Observation]] | None = field(default=None, repr=False)  # likewise, every invocation

    def probes(self, stage: str, what: str) -> list[tuple[int, Observation]]:
        if self._probes is None:
            self._probes = {}
            for i, o in self.obs:
                if o.who is None:
                    self._probes.setdefault((o.stage, o.what), []).append((i, o))
        return list(self._probes.get((stage, what), ()))

    def first(self, stage: str, what: str) -> tuple[int, Observation] | None:
        found = self.probes(stage, what)
        return found[0] if found else None

    def calls(self, stage: str | None = None) -> list[tuple[int, Observation]]:
        """Participant invocations (their ``call`` observations), of ``stage`` if given."""
        if self._calls is None:
            self._calls = [(i, o) for i, o in self.obs if o.who is not None and o.what == "call"]
        return [(i, o) for i, o in self._calls if stage is None or o.stage == stage]

    def by(self, who: str, what: str) -> list[tuple[int, Observation]]:
        return [(i, o) for i, o in self.obs if o.who == who and o.what == what]


@dataclass
class View:
    """The parts of a scenario and trace the laws read."""
    scenario: Scenario
    trace: Trace
    obs: list[Observation]
    calls: dict[str, CallTrace]
    order: list[str]  # call ids in run (model) order
    results: dict[str, list[Any]]  # callId -> CallResults
    sub_calls: dict[str, str] = field(default_factory=dict)  # a run_code sub-call's id -> its run_code call (P119)
    reused: set[str] = field(default_factory=set)  # sub-call ids that named several sub-calls (P119)
    memo: dict[str, Any] = field(default_factory=dict, repr=False)  # what several laws derive alike, derived once

    @property
    def loop(self) -> LoopRun | None:
        return self.scenario.run if isinstance(self.scenario.run, LoopRun) else None

    def result(self, call: str) -> Any:
        found = self.results.get(call, [])
        return found[0].result if found else ABSENT


def view(scenario: Scenario, trace: Trace) -> View:
    specs = _call_specs(scenario)
    portable = [o for o in trace.observations if is_portable(o)]
    calls: dict[str, CallTrace] = {cid: CallTrace(spec) for cid, spec in specs.items()}
    for i, o in enumerate(portable):
        if o.call is not None:
            calls.setdefault(o.call, CallTrace(None)).obs.append((i, o))
    results: dict[str, list[Any]] = defaultdict(list)
    for r in trace.results:
        results[r.callId].append(r)
    subs = _sub_calls(specs, calls, results)
    # One sub-call id for several sub-calls (a numbering that started again, P119) merges
    # their lanes: judged by that rule alone, not as one call that ran twice.
    reused = {cid for cid in subs if sum(1 for _, o in calls[cid].obs
                                         if o.who is None and (o.stage, o.what) == ("result", "start")) > 1} if subs else set()
    calls = {cid: ct for cid, ct in calls.items() if cid not in reused}
    results = {cid: rs for cid, rs in results.items() if cid not in reused}
    return View(scenario, trace, portable, calls, list(specs), results, {c: p for c, p in subs.items() if c not in reused},
                reused)


SUB_CALL = re.compile(r"^(?P<parent>.+):code:(?P<n>[1-9][0-9]*)$")


def _sub_calls(specs: dict[str, CallSpec], *seen: dict[str, Any]) -> dict[str, str]:
    """Call ids of the form ``<run_code call>:code:<n>`` (P119) whose parent is a run_code
    call of the scenario: the sub-calls, each with its parent."""
    out = {}
    for cid in dict.fromkeys(c for ids in seen for c in ids):  # in order of sight: the laws' findings keep it
        m = SUB_CALL.match(cid)
        if m and m["parent"] in specs and specs[m["parent"]].name == "run_code":
            out[cid] = m["parent"]
    return out


def _call_specs(scenario: Scenario) -> dict[str, CallSpec]:
    run = scenario.run
    out: dict[str, CallSpec] = {}
    if isinstance(run, DirectRun):
        for c in run.calls:
            root = c.rootCallId if c.rootCallId is not None else c.callId  # P23: ?? keeps ""
            # A field a getter gives (P23) is whatever its one read gave: not predicted here.
            out[c.callId] = CallSpec(c.callId, UNKNOWN if "name" in c.getters else c.name, c.agent,
                                     UNKNOWN if "rootCallId" in c.getters else root, c.parent,
                                     UNKNOWN if "arguments" in c.getters else _expected_arguments(c.arguments))
    else:
        for b in run.blocks:
            out[b.id] = CallSpec(b.id, b.name, run.agent, b.id, False,
                                 _expected_arguments(parse_raw_arguments(b.arguments)))
    return out


def _expected_arguments(value: Any) -> Any:
    """The record's arguments for these input arguments: their snapshot, or undefined
    when they are not lossless (P25, P27)."""
    if _reads_getters(value):
        return UNKNOWN  # what a getter's read gives is the getter script's business
    try:
        with realm.installed(realm.ValueRealm(definitions(value))):  # shared objects resolve
            return snapshot(value)
    except (NotLossless, Thrown):
        return UNDEFINED


def _reads_getters(value: Any) -> bool:
    found = False

    def visit(v: Any, _path: str, _open: tuple[str, ...]) -> None:
        nonlocal found
        found = found or token(v) == "getter"
    walk(value, "$", visit)
    return found


def parse_raw_arguments(raw: str) -> Any:
    """P16, as a model's raw argument string reaches the registry: ``""`` is ``{}``; JSON
    text is parsed as ``JSON.parse`` does (doubles, ``-0``, overflow to infinities, the last
    duplicate key wins); any other text stays the string itself."""
    if raw == "":
        return {}

    def number(text: str) -> Any:
        f = float(text)
        if math.isinf(f):
            return {"$js": "-Infinity" if f < 0 else "Infinity"}
        if f == 0 and text.lstrip().startswith("-"):
            return {"$js": "-0"}
        return f

    def obj(pairs: list[tuple[str, Any]]) -> Any:
        out = dict(pairs)
        return {"$js": "object", "entries": out} if "$js" in out else out

    def reject(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(raw, parse_int=number, parse_float=number, parse_constant=reject,
                          object_pairs_hook=obj)
    except ValueError:
        return raw


# ============================================================================ decisions

def _props(v: Any) -> dict[str, Any] | None:
    """The own properties of an object value (plain, escaped or null-prototype)."""
    if isinstance(v, dict):
        kind = v.get("$js")
        if kind is None:
            return v
        if kind in ("object", "null-proto"):
            return v.get("entries", {})
    return None


def _is_getter(v: Any) -> bool:
    return isinstance(v, dict) and v.get("$js") == "getter-throws"


def pre_route(d: Any) -> str:
    """P31: ``allow``, ``deny``, ``ask`` for a well-formed pre-execute decision, else
    ``malformed`` (including decisions whose ``kind`` or ``reason`` read throws)."""
    props = _props(d)
    if props is None:
        return "malformed"
    kind = props.get("kind")
    reason = props.get("reason", UNDEFINED)
    if kind == "allow":
        return "allow"
    if kind == "deny" and isinstance(reason, str):
        return "deny"
    if kind == "ask" and (reason == UNDEFINED or isinstance(reason, str)):
        return "ask"
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


def is_failure(r: Any) -> bool:
    return isinstance(r, dict) and r.get("isError") is True


# ============================================================================ laws

Law = Callable[[View], Iterator[Violation]]
LAWS: list[Law] = []


def law(fn: Law) -> Law:
    LAWS.append(fn)
    return fn


def check(scenario: Scenario, trace: Trace) -> list[Violation]:
    """Every violation of the laws by ``trace``, a trace of ``scenario`` (oracle or IUT)."""
    v = view(scenario, trace)
    return [violation for fn in LAWS for violation in fn(v)]


@law
def stage_order(v: View) -> Iterator[Violation]:
    """P1: a call's stages run in order (pre-execute, approval, guards, tools/execute with
    the body, post-execute, finalizeContent, tools/result), and nothing of the call runs
    after its tools/result notification except that notification's observers. An approval
    answerer the shipped service abandoned may still be running (P43.5): its own steps are
    exempt, and so are a client's UI projections (checked by ui_projections_outside)."""
    for cid, ct in v.calls.items():
        highest = 0
        for _, o in ct.obs:
            if o.who is not None and o.what != "call":
                continue  # a participant's steps happen within its invocation
            rank = RANK.get(o.stage)
            if rank is None:
                continue  # output projections: checked by output_projections
            if rank < highest:
                yield Violation("P1", f"call {cid}: {STAGE_NAME[rank]} ({o.what}) ran after {STAGE_NAME[highest]}")
                break
            highest = rank
        start = ct.first("result", "start")
        if start is not None:
            for i, o in ct.obs:
                if (i > start[0] and o.stage not in AFTER_RESULT
                        and not (o.stage == "approval" and o.who is not None)
                        and not (o.stage == "program" and o.what != "start")):  # a program's late steps (P125)
                    yield Violation("P1", f"call {cid}: {o.stage} {o.what} after tools/result")
                    break


@law
def stages_once(v: View) -> Iterator[Violation]:
    """P30, P36, P54, P76, P98, P93: pre-execute, an approval request, tools/execute,
    post-execute, finalizeContent and tools/result each happen at most once per call."""
    once = (("pre-execute", "start", "P30"), ("approval", "request", "P36"), ("execute", "start", "P54"),
            ("post-execute", "start", "P76"), ("result", "start", "P98"))
    for cid, ct in v.calls.items():
        for stage, what, rule in once:
            n = len(ct.probes(stage, what))
            if n > 1:
                yield Violation(rule, f"call {cid}: {stage} {what} {n} times")
        finalizers = Counter(o.who for _, o in ct.calls("finalize"))
        for who, n in finalizers.items():
            if n > 1:
                yield Violation("P93", f"call {cid}: finalizeContent {who} called {n} times")


@law
def stage_brackets(v: View) -> Iterator[Violation]:
    """P5, P54, P36, P100: waterfall listeners run inside their waterfall (between its
    start and its end or throw); the body runs only inside tools/execute; approval
    participants are invoked after the request and before the outcome; tools/result
    observers after the notification starts."""
    seams = (("pre-execute", ("pre-execute",), "start", ("end", "throw"), "P5"),
             ("execute", ("execute", "body"), "start", ("end", "throw"), "P54"),
             ("post-execute", ("post-execute",), "start", ("end", "throw"), "P5"),
             ("approval", ("approval",), "request", ("outcome", "throw"), "P36"))
    for cid, ct in v.calls.items():
        for seam, stages, opened, closes, rule in seams:
            start = ct.first(seam, opened)
            ends = [i for what in closes for i, _ in ct.probes(seam, what)]
            end = min(ends) if ends else None
            for i, o in ct.calls():
                if o.stage not in stages:
                    continue
                if start is None or i < start[0] or (end is not None and i > end):
                    yield Violation(rule, f"call {cid}: {o.stage} participant {o.who} invoked outside {seam}")
                    break
        start = ct.first("result", "start")
        for i, o in ct.calls("result"):
            if start is None or i < start[0]:
                yield Violation("P100", f"call {cid}: tools/result observer {o.who} before the notification")
                break


@law
def output_projections(v: View) -> Iterator[Violation]:
    """P72, P81: ``render`` and ``presentationMeta`` run only for a value that became a
    success: after tools/execute started and before finalizeContent and tools/result."""
    for cid, ct in v.calls.items():
        start = ct.first("execute", "start")
        later = [i for i, o in ct.obs if o.stage in ("finalize", "result")]
        for i, o in ct.calls():
            if o.stage not in ("render", "presentationMeta"):
                continue
            if start is None or i < start[0] or (later and i > min(later)):
                yield Violation("P72", f"call {cid}: {o.stage} of {o.who} outside the output contract's place")
                break


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
    return r.pre == "allow" or (r.pre == "ask" and r.outcome == "allowed-once")


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
            yield from forbid(("approval", "guards", "execute", "body", "post-execute"), "P34", why)
            continue
        if r.pre == "deny":
            yield from forbid(("approval", "guards", "execute", "body"), "P3", "a pre-execute deny")
            if not post:
                yield Violation("P32", f"call {cid}: a pre-execute deny did not reach post-execute")
            continue
        if r.pre == "ask":
            if r.approval_throw or (r.requested and r.outcome is not ABSENT and r.outcome not in (
                    "allowed-once", "rejected", "cancelled", "unavailable")):
                yield from forbid(("guards", "execute", "body", "post-execute"), "P40",
                                  "an approval throw or an outcome outside the vocabulary")
                continue
            if not r.requested or r.outcome in ("rejected", "cancelled", "unavailable"):
                rule = "P37" if not r.requested else "P40"
                yield from forbid(("guards", "execute", "body"), "P3", "an approval that did not grant")
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
            yield from forbid(("execute", "body"), rule, "a guard " + ("throw" if r.guard_throw else "denial"))
            to_post = not r.guard_throw and _denial_goes_to_post(r.guard_denial)
            if post != to_post:
                yield Violation("P49" if r.guard_throw else "P47",
                                f"call {cid}: a guard {'throw' if r.guard_throw else 'denial'} "
                                f"{'reached' if post else 'did not reach'} post-execute")
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
def final_results(v: View) -> Iterator[Violation]:
    """P4, P12, P98, P99, P92: every final result is lossless JSON, deeply frozen, the very
    object the tools/result observers received, and well shaped: a boolean ``isError`` and
    a ``content`` array; a success carries ``value`` and no ``error``; a failure carries
    ``error`` with a ``message`` and neither ``value`` nor ``concludesTurn``;
    ``concludesTurn``, when present, is ``true``."""
    for cid, rs in v.results.items():
        if len(rs) > 1:
            yield Violation("P98", f"call {cid}: {len(rs)} final results")
        r = rs[0]
        res = r.result
        if not r.frozen:
            yield Violation("P99", f"call {cid}: the final result is not deeply frozen")
        if not r.observed:
            yield Violation("P98", f"call {cid}: the final result is not the object the observers received")
        if not is_lossless(res):
            yield Violation("P12", f"call {cid}: the final result is not lossless JSON")
        if not isinstance(res, dict) or not isinstance(res.get("isError"), bool):
            yield Violation("P4", f"call {cid}: the final result has no boolean isError")
            continue
        if not isinstance(res.get("content"), list):
            yield Violation("P4", f"call {cid}: the final result has no content array")
        if res["isError"]:
            error = res.get("error")
            if not isinstance(error, dict) or "message" not in error:
                yield Violation("P4", f"call {cid}: a failure without error.message")
            for key in ("value", "concludesTurn"):
                if key in res:
                    yield Violation("P4", f"call {cid}: a failure carries {key}")
        else:
            if "value" not in res:
                yield Violation("P4", f"call {cid}: a success without value")
            if "error" in res:
                yield Violation("P4", f"call {cid}: a success carries error")
        if "concludesTurn" in res and res["concludesTurn"] is not True:
            yield Violation("P92", f"call {cid}: concludesTurn is {res['concludesTurn']!r}, not true")


@law
def one_notification(v: View) -> Iterator[Violation]:
    """P98, P8: every call that returns a result had exactly one tools/result notification,
    which carried that result; every direct ``execute()`` call returns one."""
    for cid in v.order if isinstance(v.scenario.run, DirectRun) else ():
        if cid not in v.results:
            yield Violation("P8", f"call {cid}: execute() returned no result")
    for cid, ct in v.calls.items():
        starts = ct.probes("result", "start")
        res = v.result(cid)
        if res is ABSENT:
            if starts:
                yield Violation("P98", f"call {cid}: a tools/result notification without a final result")
            continue
        if len(starts) != 1:
            yield Violation("P98", f"call {cid}: {len(starts)} tools/result notifications")
        elif not same_value(starts[0][1].value, res):
            yield Violation("P98", f"call {cid}: tools/result carried another outcome than the final result")


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
def finalize_content_only(v: View) -> Iterator[Violation]:
    """P94, P95: finalizeContent changes only ``content``. Where a finalizer shows what it
    was handed (an ``observe result`` step): returning undefined keeps the outcome, a
    lossless return replaces exactly ``content``, and a throw or a non-lossless return
    makes the outcome a failure without ``meta``, ``additionalContexts`` or ``value``."""
    for cid, ct in v.calls.items():
        res = v.result(cid)
        if res is ABSENT:
            continue
        for _, call in ct.calls("finalize"):
            who = call.who
            assert who is not None
            handed = [o.value for _, o in ct.by(who, "observe") if isinstance(o.value, dict) and "result" in o.value]
            returned = ct.by(who, "return")
            if not handed or handed[0]["result"] == UNDEFINED:
                continue
            m = handed[0]["result"]
            if returned:
                c = returned[0][1].value
                if c == UNDEFINED:
                    expected = m
                else:
                    try:
                        expected = {**m, "content": snapshot(c)}
                    except (NotLossless, Thrown):
                        expected = None
                if expected is not None:
                    if not same_value(expected, res):
                        yield Violation("P94", f"call {cid}: finalizeContent changed more than the content")
                    continue
            if not is_failure(res) or {"meta", "additionalContexts", "value"} & set(res):
                yield Violation("P95", f"call {cid}: a failing finalizer left a result that is not a bare failure")


UNKNOWN = object()  # a value the portable trace does not show
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
    return isinstance(v, list) or _props(v) is not None


def _child(node: Any, key: str) -> Any:
    if node is UNKNOWN:
        return UNKNOWN
    if isinstance(node, list):
        return node[int(key)] if key.isdigit() and int(key) < len(node) else ABSENT
    props = _props(node)
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


@law
def ui_projections_outside(v: View) -> Iterator[Violation]:
    """P14: nothing in the pipeline calls ``presentCall`` or ``presentResult``. They run only
    for the scenario's viewer (``run.present``), which projects the log after the step:
    after every call's tools/result notification."""
    present = v.loop is not None and v.loop.present
    last_result = max((i for ct in v.calls.values() for i, _ in ct.probes("result", "start")), default=-1)
    for i, o in enumerate(v.obs):
        if o.stage in UI_STAGES and o.what == "call":
            if not present:
                yield Violation("P14", f"call {o.call}: {o.who} was called, and only a client calls a UI projection")
                return
            if i < last_result:
                yield Violation("P14", f"call {o.call}: {o.who} was called before the step's last tools/result: inside the pipeline")
                return


@law
def body_work_within_body(v: View) -> Iterator[Violation]:
    """P71: what a body dispatches (a filesystem intent) or appends (a tool-owned session
    event) happens within the body's run: between its call and its return or throw."""
    for cid, ct in v.calls.items():
        inside: set[str] = set()
        for _, o in ct.obs:
            if o.stage == "body" and o.who is not None:
                if o.what == "call":
                    inside.add(o.who)
                elif o.what in ("return", "throw"):
                    inside.discard(o.who)
            elif o.stage in BODY_WORK and o.who is not None and o.what in ("start", "append") and o.who not in inside:
                yield Violation("P71", f"call {cid}: {o.who}'s {o.stage} {o.what} outside the body's run")
                break


@law
def direct_runs_inject_nothing(v: View) -> Iterator[Violation]:
    """P102: the registry never injects contexts: a direct run appends no ``user/message``
    and no inbox splice."""
    if isinstance(v.scenario.run, DirectRun):
        for e in v.trace.events:
            if e.type in ("user/message", "agent/inbox/spliced"):
                yield Violation("P102", f"a direct run appended {e.type}")


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


# ---------------------------------------------------------------------------- the loop

def _tool_result_call(e: Any) -> Any:
    data = e.data if isinstance(e.data, dict) else {}
    message = data.get("message") if isinstance(data.get("message"), dict) else {}
    return (message.get("source") or {}).get("callId")


def _inserted(e: Any) -> list[Any]:
    """The messages an inbox splice queued (not the next step's claim)."""
    if e.type == "agent/inbox/spliced" and isinstance(e.data, dict) and "removedCount" not in e.data:
        inserted = e.data.get("inserted")
        return inserted if isinstance(inserted, list) else []
    return []


def _claimed(events: list[Any]) -> list[Any]:
    """The messages step boundaries claimed, in order: the inbox's two queues replayed
    from the splices, each removal that is not a cancel's clearing being a claim."""
    queues: dict[Any, list[Any]] = {"next-step": [], "next-turn": []}
    out: list[Any] = []
    for e in events:
        if e.type != "agent/inbox/spliced" or not isinstance(e.data, dict):
            continue
        queue = queues.setdefault(e.data.get("target"), [])
        start = e.data.get("start", 0) if isinstance(e.data.get("start"), int) else 0
        count = e.data.get("removedCount", 0) if isinstance(e.data.get("removedCount"), int) else 0
        inserted = e.data.get("inserted") if isinstance(e.data.get("inserted"), list) else []
        removed = queue[start:start + count]
        queue[start:start + count] = inserted
        if e.data.get("outcome") != "canceled":
            out += removed
    return out


def _message_id(m: Any) -> str:
    return json.dumps(m.get("id") if isinstance(m, dict) else None, sort_keys=True)


@dataclass(frozen=True)
class Acceptance:
    """How the loop accepted the committed outcomes' contexts (P109): ``failed`` names the
    call whose acceptance failed the turn because a context's id was already queued (P108,
    P113); ``misplaced`` a call whose contexts were not queued right after its result."""
    failed: str | None = None
    misplaced: str | None = None


def acceptance(v: View, events: list[Any]) -> Acceptance:
    queued: set[str] = set()
    for n, e in enumerate(events):
        queued |= {_message_id(m) for m in _inserted(e)}
        if e.type != "tool/result":
            continue
        cid = _tool_result_call(e)
        res = v.result(cid)
        contexts = res.get("additionalContexts", []) if isinstance(res, dict) else []
        following = events[n + 1:]
        for k, context in enumerate(contexts if isinstance(contexts, list) else []):
            f = following[k] if k < len(following) else None
            if f is not None and f.type == "agent/inbox/spliced" and same_value(_inserted(f), [context]):
                continue
            earlier = queued | {_message_id(c) for c in contexts[:k]}
            if _message_id(context) in earlier:
                return Acceptance(failed=cid)
            return Acceptance(misplaced=cid)
    return Acceptance()


SYNTHETIC_CONTENT = [{"type": "text", "text": "Error: tool call aborted before dispatch"}]
SYNTHETIC_ERROR = {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}
ABSENT_KEY = {"$absent": True}


@law
def loop_calls_and_results(v: View) -> Iterator[Violation]:
    """P15, P18, P21, P104, P105, P107, P108: in a loop step that hit max-tokens nothing
    runs. Otherwise each block gets at most one ``tool/call`` and one ``tool/result``, both
    in model order, each ``tool/result`` after its ``tool/call`` and citing it; its payload
    carries the outcome's content, isError, ``error.info`` and ``meta``. A completed or
    aborted batch has exactly one pair per block; only a failed turn (P108: a context whose
    id was already queued, P113) leaves blocks without a result, and then no next step
    starts. A block with a ``tool/result`` but no registry outcome is a synthetic abort
    that passed through no registry stage."""
    run = v.loop
    if run is None:
        return
    events = [e for e in v.trace.events if e.agent == run.agent]
    blocks = {b.id: b for b in run.blocks}
    model = [b.id for b in run.blocks]
    if run.finish == "max-tokens":
        for e in events:
            if e.type in ("tool/call", "tool/result"):
                yield Violation("P15", f"a max-tokens step appended {e.type}")
        for cid, ct in v.calls.items():
            if ct.obs or cid in v.results:
                yield Violation("P15", f"a max-tokens step ran call {cid}")
        return
    if [e.seq for e in events] != sorted(e.seq for e in events) or len({e.seq for e in events}) != len(events):
        yield Violation("P105", "the session's events are not in seq order")
    call_seq: dict[str, int] = {}
    call_pos: dict[str, int] = {}
    for n, e in enumerate(events):
        if e.type != "tool/call":
            continue
        cid = e.data.get("callId") if isinstance(e.data, dict) else None
        if cid not in blocks or cid in call_seq:
            yield Violation("P18", f"tool/call for {cid!r}: unknown block or a second tool/call")
            continue
        call_seq[cid], call_pos[cid] = e.seq, n
        b = blocks[cid]
        if e.data.get("name") != b.name or e.data.get("arguments") != b.arguments:
            yield Violation("P18", f"tool/call {cid}: name or raw arguments differ from the block")
    if [c for c in model if c in call_pos] != sorted(call_pos, key=call_pos.__getitem__):
        yield Violation("P21", "tool/call events out of model order")
    result_seq: dict[str, int] = {}
    result_pos: dict[str, int] = {}
    for n, e in enumerate(events):
        if e.type != "tool/result":
            continue
        cid = _tool_result_call(e)
        if cid not in blocks or cid in result_seq:
            yield Violation("P105", f"tool/result for {cid!r}: unknown block or a second tool/result")
            continue
        result_seq[cid], result_pos[cid] = e.seq, n
        if cid not in call_seq or e.sourceEventSeqs != [call_seq[cid]] or n < call_pos[cid]:
            yield Violation("P104", f"tool/result {cid} does not follow and cite its tool/call")
        yield from _payload(v, cid, e)
    if [c for c in model if c in result_pos] != sorted(result_pos, key=result_pos.__getitem__):
        yield Violation("P105", "tool/result events out of model order")
    for cid in v.results:
        if cid not in result_seq and cid not in v.sub_calls:  # a sub-call has none (P120)
            yield Violation("P105", f"call {cid} has an outcome but no tool/result")
    incomplete = [c for c in model if c not in call_seq or c not in result_seq]
    if incomplete:
        if acceptance(v, events).failed is None:
            yield Violation("P105", f"block {incomplete[0]} has no complete tool/call + tool/result pair")
        elif any(e.type == "step/start" and (e.data or {}).get("turn") == 1 for e in events):
            # (a next turn the caller starts, run.nextTurn, is not this turn going on)
            yield Violation("P108", "a failed turn went on to a next step")
    for cid in model:
        if cid in result_seq and cid not in v.results and any(o.stage not in UI_STAGES for _, o in v.calls[cid].obs):
            yield Violation("P107", f"synthetic result of {cid}, yet registry stages ran for it")


def _payload(v: View, cid: str, e: Any) -> Iterator[Violation]:
    data = e.data if isinstance(e.data, dict) else {}
    message = data.get("message") if isinstance(data.get("message"), dict) else {}
    content = message.get("content") if isinstance(message.get("content"), list) else []
    block = content[0] if len(content) == 1 and isinstance(content[0], dict) else {}
    res = v.result(cid)
    if res is ABSENT:  # a synthetic result (P107)
        if block.get("content") != SYNTHETIC_CONTENT or block.get("isError") is not True \
                or data.get("error") != SYNTHETIC_ERROR:
            yield Violation("P107", f"tool/result {cid} without a registry outcome is not the synthetic abort")
        return
    # an outcome a participant forged (rc.8 hands wrappers failures that are not frozen,
    # P11) may carry any error value: only an object's info is the event's error
    if not isinstance(res, dict):
        return  # not a result at all: outcome_shape's (P4)
    error = res.get("error") if res.get("isError") else None
    info = error.get("info") if isinstance(error, dict) else None
    if block.get("type") != "tool-result" or block.get("toolCallId") != cid \
            or not same_value(block.get("content"), res.get("content")) or block.get("isError") != res.get("isError"):
        yield Violation("P104", f"tool/result {cid}: the message does not carry the outcome's content and isError")
    if not same_value(data.get("error", ABSENT_KEY), info if info is not None else ABSENT_KEY):
        yield Violation("P104", f"tool/result {cid}: error is not the outcome's error.info")
    if not same_value(data.get("meta", ABSENT_KEY), res.get("meta", ABSENT_KEY)):
        yield Violation("P104", f"tool/result {cid}: meta is not the outcome's meta")


@law
def contexts_after_the_batch(v: View) -> Iterator[Violation]:
    """P105, P109, P110: no ``user/message`` between the assistant message and the step's
    end; every context ``user/message`` follows every ``tool/result`` of the batch and the
    next step's start, in the FIFO order the messages were queued; each outcome's contexts
    are queued, in order, right after its ``tool/result``."""
    run = v.loop
    if run is None:
        return
    events = [e for e in v.trace.events if e.agent == run.agent]
    last_result = max((n for n, e in enumerate(events) if e.type == "tool/result"), default=-1)
    step_end = next((n for n, e in enumerate(events) if e.type == "step/end"), None)
    step_start = next((n for n, e in enumerate(events) if e.type == "step/start"), None)
    messages = [(n, e) for n, e in enumerate(events) if e.type == "user/message"]
    for n, _ in messages:
        if n < last_result:
            yield Violation("P110", "a user/message before a tool/result of the batch")
            break
        if step_end is None or n < step_end or step_start is None or n < step_start:
            yield Violation("P105", "a user/message inside the tool step")
            break
    # What the steps claimed, in FIFO order, is what they append, unless an agent/pre-step
    # listener may have rewritten it (P110); a cancel's clearing claims nothing (P112).
    if messages and not any(l.event == "agent/pre-step" for l in v.scenario.listeners):
        if not same_value([e.data for _, e in messages], _claimed(events)):
            yield Violation("P111", "user/message events are not the queued messages in FIFO order")
    misplaced = acceptance(v, events).misplaced
    if misplaced is not None:
        yield Violation("P109", f"call {misplaced}: its contexts are not queued in order right after its tool/result")


@law
def barriers_and_pools(v: View) -> Iterator[Violation]:
    """P20: at most ``maxParallelToolCalls`` calls of the batch are dispatched and unsettled
    at once (from the start of a call's ``tools/execute`` waterfall to its end), and a call
    that no definition could classify parallel (no definition of its name declares
    ``isConcurrencySafe``) runs alone. A wrong pool shows first as a stage out of order;
    this law names the rule that was broken."""
    run = v.loop
    if run is None or run.finish == "max-tokens":
        return
    blocks = {b.id: b.name for b in run.blocks}
    classified = {t.name for t in v.scenario.tools if t.concurrencySafe is not None} | {"run_code"}
    in_flight: list[str] = []
    for o in v.trace.observations:
        if o.who is not None or o.stage != "execute" or o.call not in blocks:
            continue
        if o.what == "start":
            in_flight.append(o.call)
            if len(in_flight) > run.maxParallelToolCalls:
                yield Violation("P20", f"{len(in_flight)} calls dispatched at once ({', '.join(in_flight)}), more than "
                                       f"maxParallelToolCalls={run.maxParallelToolCalls}")
                return
            alone = [c for c in in_flight if blocks[c] not in classified]
            if alone and len(in_flight) > 1:
                yield Violation("P20", f"call {alone[0]} is exclusive (no definition of {blocks[alone[0]]} has a "
                                       f"classifier) but was in flight with {', '.join(c for c in in_flight if c != alone[0])}")
                return
        elif o.what in ("end", "throw") and o.call in in_flight:
            in_flight.remove(o.call)


# The laws of Code Mode live beside these, by theme (they register themselves with ``law``).
from . import code_mode_laws  # noqa: E402,F401
