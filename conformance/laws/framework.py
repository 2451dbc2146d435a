"""The law framework: what a law reads (``View``: the scenario and the portable parts of a
trace, per call), what it reports (``Violation``: the rule it enforces and what went wrong),
and the ``law`` marker. The laws themselves are in the theme modules of this package and
listed in ``conformance.laws.LAWS``.

A law reads only what an implementation under test reports (protocol v1): the portable
observations (``kit.trace.is_portable``), the session events, the final results and the
warnings, together with the scenario. So the same laws judge an IUT's trace and the
oracle's, and they catch a wrong oracle as well as a wrong implementation. The JavaScript
semantics they lean on (lossless JSON, snapshots, ``ToString``, equality of wire values)
come from ``kit.jsvalue``, which is cross-checked against node in the project's tests.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dsh_conformance.kit import realm
from dsh_conformance.kit.jsvalue import NotLossless, Thrown, snapshot, token
from dsh_conformance.kit.scenario import DirectRun, LoopRun, Scenario
from dsh_conformance.kit.trace import PIPELINE_STAGES, Observation, Trace, is_portable
from dsh_conformance.kit.value_refs import definitions, walk


@dataclass(frozen=True)
class Violation:
    """A law that ``trace`` breaks: the rule it enforces and what went wrong."""
    rule: str
    message: str


UNDEFINED = {"$js": "undefined"}
ABSENT = object()  # "this call's record arguments cannot be predicted" (never the case today)
UNKNOWN = object()  # a value the portable trace does not show

# Stage ranks of P1: pre-execute, approval, guards, tools/execute (with the body),
# post-execute, finalizeContent, tools/result.
_RANKED = [s for s in PIPELINE_STAGES if s != "body"]  # the body runs inside tools/execute
RANK = {**{s: n for n, s in enumerate(_RANKED, 1)}, "body": _RANKED.index("execute") + 1}
STAGE_NAME = {1: "pre-execute", 2: "approval", 3: "guards", 4: "tools/execute", 5: "post-execute",
              6: "finalizeContent", 7: "tools/result"}
UI_STAGES = ("presentCall", "presentResult")  # a client's projections, outside the pipeline (P14)
# What follows a sub-call's tools/result and is still its own (P122): its dispatch log.
AFTER_RESULT = ("result", *UI_STAGES, "code-dispatch-log")
BODY_WORK = ("fs-intent", "tool-event")  # what a body dispatches or appends while it runs (P71)
IDENTITY_FIELDS = ("callId", "rootCallId", "name", "agent", "parent", "arguments", "token")


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


def is_failure(r: Any) -> bool:
    return isinstance(r, dict) and r.get("isError") is True


Law = Callable[[View], Iterator[Violation]]


def law(fn: Law) -> Law:
    """Marks a function as a law. Marking registers nothing: ``conformance.laws.LAWS`` lists
    the laws that run, and a test holds the list against the marked functions."""
    fn.is_law = True  # type: ignore[attr-defined]
    return fn


def own_props(v: Any) -> dict[str, Any] | None:
    """The own properties of an object value (plain, escaped or null-prototype)."""
    if isinstance(v, dict):
        kind = v.get("$js")
        if kind is None:
            return v
        if kind in ("object", "null-proto"):
            return v.get("entries", {})
    return None
