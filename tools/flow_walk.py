"""Traces as walks on the flow model, and which corpus cases cover which edges.

Each call of a trace becomes one walk: the nodes the call passes, in order, and for each
step the edge taken. Where the call goes is read from the trace, never from the model:

- the model's ``observedAs`` says which observation stages, route values, session events
  and loop ends put a call on a node;
- the *evidence* for leaving a node (what selects one of several edges) is derived from
  the node's last stage-level observation and the route the oracle took (``_evidence``);
- a step (from, to, evidence) must then be an edge of the model whose ``when`` lists that
  evidence. A step that matches no edge is a finding: the trace left the graph;
- a node marked ``branch`` (a client's UI projection, an event a body appends) is a side
  branch: its observation adds the edge into it from the latest node passed that has one,
  and the walk stays where it was.

The mapping reads the oracle's full traces, internal observations (entry, route,
checkpoint, materialize) included. An implementation's portable trace lacks the route
observations, so this check runs on the oracle; an implementation whose trace equals the
oracle's walks the same graph by that equality.

Direct calls start at the extension node ``caller``; loop calls start at ``model`` (the
assistant message) and enter ``toolCall`` with their ``tool/call`` event. After
``tools/result`` a loop call reaches ``toolResult`` with its ``tool/result`` event, then
``allResults`` when the batch settles (the loop ended the step normally or by abort) and
``context`` when the next step starts (queued contexts become ``user/message`` events).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .flow_model import Edge, FlowModel
from dsh_conformance.kit.jsvalue import Thrown, get
from dsh_conformance.kit.trace import Observation, Trace
from dsh_conformance.oracle import run_scenario
from dsh_conformance.spec.corpus import load_corpus

START_DIRECT = "caller"
START_LOOP = "model"
SUB_CALL = re.compile(r"^.+:code:[1-9][0-9]*$")  # a run_code sub-call's id (P119)
NOT_STARTED = ("code-mode", "classify")  # what a queued sub-call shows before it starts


@dataclass(frozen=True)
class Step:
    source: str
    target: str
    evidence: str
    edge: Edge | None  # None: the trace left the graph


@dataclass
class Walk:
    call: str | None
    nodes: list[str]
    steps: list[Step] = field(default_factory=list)
    ends: tuple[str, ...] = ()  # where the walk must end; empty: anywhere (a failed turn, P108)

    @property
    def complete(self) -> bool:
        return not self.ends or self.nodes[-1] in self.ends

    @property
    def edges(self) -> list[Edge]:
        return [s.edge for s in self.steps if s.edge is not None]

    @property
    def off_graph(self) -> list[Step]:
        return [s for s in self.steps if s.edge is None]


class _Walker:
    def __init__(self, model: FlowModel, call: str | None, start: str) -> None:
        self.model = model
        self.walk = Walk(call, [start])
        self.last: Observation | None = None  # the current node's last stage-level observation

    @property
    def at(self) -> str:
        return self.walk.nodes[-1]

    def go(self, target: str, evidence: str) -> None:
        if target == self.at:
            return
        edge = self.model.edge_for(self.at, target, evidence)
        self.walk.steps.append(Step(self.at, target, evidence, edge))
        self.walk.nodes.append(target)
        self.last = None

    def branch(self, target: str) -> None:
        """A side branch: the edge into ``target`` from the latest node the walk passed that
        has one; the walk stays where it is. Without such a node the trace left the graph."""
        evidence = BRANCH_EVIDENCE.get(target, "branch")
        for source in reversed(self.walk.nodes):
            edge = self.model.edge_for(source, target, evidence)
            if edge is not None:
                self.walk.steps.append(Step(source, target, evidence, edge))
                return
        self.walk.steps.append(Step(self.at, target, evidence, None))


# What a side branch's observation shows: a client's projection, a body's own event.
BRANCH_EVIDENCE = {"presentCall": "ui", "presentResult": "ui", "owned": "owned-event"}


def _index(model: FlowModel) -> tuple[dict[str, str], dict[str, str], dict[str, str], dict[str, list[str]]]:
    stages, routes, events, loop_end = {}, {}, {}, defaultdict(list)
    for n in model.nodes:
        for s in n.observedAs.stages:
            stages[s] = n.id
        for r in n.observedAs.routes:
            routes[r] = n.id
        for e in n.observedAs.events:
            events[e] = n.id
        for v in n.observedAs.loopEnd:
            loop_end[v].append(n.id)
    return stages, routes, events, loop_end


def _kind(value: Any) -> str:
    """A decision's ``kind``, read as the registry reads a JS value in wire form."""
    try:
        kind = get(value, "kind")
    except Thrown:
        return "invalid-decision"
    return kind if isinstance(kind, str) else "invalid-decision"


def _evidence(at: str, target: str, last: Observation | None, route: str | None) -> str:
    """Why the call leaves ``at`` for ``target``: the evidence an edge's ``when`` lists."""
    what = last.what if last is not None else None
    value = last.value if last is not None else None
    if at in ("caller", "toolCall"):
        return "entry-failure" if route == "final" else "entered"
    if "fsGate" in (at, target):
        return "fs-intent"  # a body's filesystem intent, and the way back into the body (P71)
    if what == "throw" and target == "normalized":
        return "throw"  # the stage itself threw (a participant, or the stage's own check)
    if at == "pre":
        if what == "deny":
            return "deny"  # the registry's note of a well-formed deny (P32)
        return "invalid-decision" if route == "final" else _kind(value)
    if at == "approval":
        if what == "deny":
            return str(value)  # no-service, no-agent
        if route == "final":
            return "invalid-outcome"
        return str(value)  # the outcome
    if at == "guards":
        if last is not None and last.stage == "checkpoint":
            return "caller-aborted"
        return {"denied": "deny", "final": "denial-not-lossless"}.get(route or "", "abstain")
    if at == "around":
        if target == "toolBody":
            return "dispatch"
        return "invalid-result" if route == "final" else "returned"
    if at == "toolBody":
        return "settled"
    if at == "post" and target == "normalized":
        return "snapshot-throws"
    return "next"


def _call_walk(model: FlowModel, call: str, observations: list[Observation], start: str,
               tool_result: bool, settled: bool, next_step: bool) -> Walk:
    stages, routes, _, _ = _index(model)
    branches = {n.id for n in model.nodes if n.branch is not None}
    w = _Walker(model, call, start)
    if start == START_LOOP:
        w.go("toolCall", "tool/call")
    side: list[str] = []  # side branches, recorded once the main path is known
    for o in observations:
        if o.stage == "loop" and o.what == "synthetic":
            w.go("toolResult", "synthetic")
            continue
        if o.stage == "route":
            target = routes.get(str(o.value))
            if target is not None:
                w.go(target, _evidence(w.at, target, w.last, str(o.value)))
            continue
        if o.stage == "materialize" and o.what != "throw":
            continue
        if o.stage == "checkpoint":
            w.last = o  # a checkpoint decides where the call goes next (P53)
            continue
        if o.stage == "program" and o.what != "start":
            continue  # a program's steps and settlements are the body's own; its late ones outlive it (P125)
        target = stages.get(o.stage)
        if target is None:
            continue  # entry, classify, render, presentationMeta, loop bookkeeping: no node
        if target in branches:
            if target not in side:
                side.append(target)
            continue
        if w.at == "post" and target in ("finalize", "final") and w.last is not None and w.last.what == "throw":
            # post-execute threw: the registry turns the throw into a failure (P86), with no
            # route observation of its own
            w.go("normalized", "throw")
        if target == "final" and w.at not in ("finalize", "final"):
            w.go("finalize", "next")  # the silent finalize step of a call without a finalizer
        w.go(target, _evidence(w.at, target, w.last, None))
        if o.who is None:
            w.last = o
    if tool_result and w.at != "toolResult":
        w.go("toolResult", "tool/result")
    if settled and w.at == "toolResult":
        w.go("allResults", "settled")
        if next_step:
            w.go("context", "next-step")
    for target in side:
        w.branch(target)
    if start == START_DIRECT:
        w.walk.ends = ("final",)  # execute() returns the outcome tools/result observed
    elif settled:
        w.walk.ends = ("context",) if next_step else ("allResults",)
    return w.walk


def walks(model: FlowModel, trace: Trace) -> list[Walk]:
    """One walk per call of the trace (and one for a loop step that ran no call)."""
    by_call: dict[str, list[Observation]] = defaultdict(list)
    order: list[str] = []
    loop_end: Any = None
    loop_threw = False
    for o in trace.observations:
        if o.call is None:
            if o.stage == "loop" and o.what == "end":
                loop_end = o.value
            if o.stage == "loop" and o.what == "throw":
                loop_threw = True
            continue
        if o.call not in by_call:
            order.append(o.call)
        by_call[o.call].append(o)
    loop = any(e.type == "assistant/message" for e in trace.events)
    results = {e.data.get("message", {}).get("source", {}).get("callId") for e in trace.events if e.type == "tool/result"}
    calls = {e.data.get("callId") for e in trace.events if e.type == "tool/call"}
    subs = {c for c in order if SUB_CALL.match(c) and any(o.stage not in NOT_STARTED for o in by_call[c])}
    settled = loop and not loop_threw and loop_end in ("next-step", "concluded", "aborted")
    # A run_code sub-call is a call of its own that enters the registry from the bridge, as
    # a direct call does (P120); one abandoned before its start never entered (P125).
    out = [_call_walk(model, c, by_call[c], START_DIRECT if c in subs or not loop else START_LOOP,
                      tool_result=c in results, settled=settled and c not in subs, next_step=loop_end == "next-step")
           for c in order if (c in calls if loop else not SUB_CALL.match(c)) or c in subs]
    if loop and not out:
        out.append(Walk(None, [START_LOOP]))  # a step that ran no call (P15)
    return out


@dataclass
class Coverage:
    """Which cases walk which edge, and what left the graph."""
    by_edge: dict[str, list[str]]
    off_graph: list[tuple[str, Walk, Step]]
    unfinished: list[tuple[str, Walk]] = field(default_factory=list)
    owned: dict[str, list[str]] = field(default_factory=dict)  # a tool-owned event type -> the cases showing it

    def uncovered(self, model: FlowModel) -> list[Edge]:
        """Drawn edges no corpus case walks: every drawn edge must be walked."""
        return [e for e in model.drawn_edges if not self.by_edge.get(e.id)]

    def problems(self, model: FlowModel) -> list[str]:
        out = [f"{case}: call {walk.call}: {s.source} -> {s.target} (evidence {s.evidence!r}) is no edge of the flow model"
               for case, walk, s in self.off_graph]
        out += [f"{case}: call {walk.call}: the walk stops at {walk.nodes[-1]}, not at {' or '.join(walk.ends)}"
                for case, walk in self.unfinished]
        out += [f"drawn edge {e.id} {e.source} -> {e.target}: no corpus case walks it" for e in self.uncovered(model)]
        return out


def coverage(model: FlowModel, traces: dict[str, Trace]) -> Coverage:
    by_edge: dict[str, list[str]] = {e.id: [] for e in model.edges}
    off: list[tuple[str, Walk, Step]] = []
    unfinished: list[tuple[str, Walk]] = []
    owned: dict[str, list[str]] = defaultdict(list)
    for case, trace in traces.items():
        for o in trace.observations:
            if o.stage == "tool-event" and isinstance(o.value, dict) and case not in owned[str(o.value.get("type"))]:
                owned[str(o.value.get("type"))].append(case)
        for walk in walks(model, trace):
            if not walk.complete:
                unfinished.append((case, walk))
            for s in walk.steps:
                if s.edge is None:
                    off.append((case, walk, s))
                elif case not in by_edge[s.edge.id]:
                    by_edge[s.edge.id].append(case)
    return Coverage(by_edge, off, unfinished, dict(owned))


def corpus_traces() -> dict[str, Trace]:
    return {c.id: run_scenario(c.scenario) for c in load_corpus()}


def render_coverage(model: FlowModel, cov: Coverage, limit: int = 5) -> str:
    """The ``docs coverage`` report: every edge with the cases that walk it."""
    lines = []
    for e in model.edges:
        arrow = "-.->" if e.style == "dotted" else "-->"
        head = f"{e.id:<4} {e.source} {arrow}{f'|{e.label}|' if e.label else ''} {e.target}"
        kind = "drawn" if e.drawn else "extension (not drawn)"
        cases = cov.by_edge.get(e.id, [])
        shown = ", ".join(cases[:limit]) + (f", ... ({len(cases)} cases)" if len(cases) > limit else "")
        status = f"{len(cases)} case(s): {shown}" if cases else ("UNCOVERED" if e.drawn else "no case")
        lines.append(f"{head}  [{kind}] {status}")
    for kind, cases in sorted(cov.owned.items()):
        shown = ", ".join(cases[:limit]) + (f", ... ({len(cases)} cases)" if len(cases) > limit else "")
        lines.append(f"     owned event {kind}: {len(cases)} case(s): {shown}")
    drawn = [e for e in model.drawn_edges]
    covered = [e for e in drawn if cov.by_edge.get(e.id)]
    lines.append("")
    lines.append(f"{len(covered)} of {len(drawn)} drawn edges walked by corpus cases; "
                 f"{len(cov.uncovered(model))} uncovered; {len(cov.off_graph)} step(s) off the graph")
    return "\n".join(lines)
