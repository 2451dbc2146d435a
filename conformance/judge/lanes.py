"""The lanes two traces are compared in: each call's portable observations (with the
oracle's blame for each), an abandoned approval's answerers, a program's steps and its
settlements apart; the session events a profile speaks of (pooled calls' starts and commits
apart, the dispatch log by sub-call); the final results; the warnings. And the trace as the
comparison reads it, normalized, with its digest."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from dsh_conformance.kit import jsontext
from dsh_conformance.kit.trace import CallResult, Event, Trace, portable

from dsh_conformance.judge.findings import Blame, Compared, Reason, Warnings


LOOP_EVENTS = frozenset({"assistant/message", "tool/call", "tool/result", "agent/inbox/spliced",
                         "step/start", "step/end", "user/message"})


APPROVAL_EVENTS = frozenset({"approval/asked", "approval/decided"})


BODY_EVENTS = frozenset({"todo/write"})  # tool-owned events a body appends (P71)


CODE_EVENTS = frozenset({"tool/code-dispatch-start", "tool/code-dispatch"})  # the run_code bridge's (P122)


DISPATCH_LOG = "tool/code-dispatch"


def event_doc(e: Event) -> dict[str, Any]:
    """``e.model_dump(mode="python", exclude_none=True)``, its values shared rather than copied
    (the comparison only reads them)."""
    doc: dict[str, Any] = {"agent": e.agent, "seq": e.seq, "type": e.type}
    if e.data is not None:
        doc["data"] = e.data
    if e.sourceEventSeqs is not None:
        doc["sourceEventSeqs"] = e.sourceEventSeqs
    if e.at is not None:
        doc["at"] = e.at
    return doc


def result_doc(r: CallResult) -> dict[str, Any]:
    """``r.model_dump(mode="python")``, its result shared rather than copied."""
    return {"callId": r.callId, "result": r.result, "frozen": r.frozen, "observed": r.observed}


# The oracle's own observations that record a decision an implementation makes without a
# probe to show it (a checkpoint that fired, a denial, a collapse, a synthetic pair, a
# throw the registry caught): when the next portable observation differs, the rule that
# decided it is to blame beside the symptom (issue 15: a failure is blamed on the rule
# that was broken, not only on the first stage that shows it).
REASONS = frozenset({("checkpoint", "abort"), ("dispatch", "abort"), ("approval", "deny"), ("approval", "abandon"),
                     ("pre-execute", "deny"), ("entry", "collapse"), ("loop", "synthetic"), ("guards", "throw"),
                     ("finalize", "throw"), ("materialize", "throw"), ("body", "throw"), ("code-mode", "conclude"),
                     ("code-mode", "defer"), ("code-mode", "abandon"), ("entry", "snapshot"),
                     ("execute", "defer"), ("dispatch", "outcome"), ("post-execute", "outcome"),
                     ("finalize", "resolve"), ("entry", "hide"), ("dispatch", "hide"), ("code-mode", "hide"),
                     ("pre-execute", "cursor"), ("approval", "cursor"), ("execute", "cursor"), ("post-execute", "cursor"),
                     ("fs-intent", "cursor"), ("materialize", "outcome")})


# An inherited definition that a restriction on the chain hides from the calling agent (P56):
# an implementation that resolves the name all the same takes that definition, and every
# later difference of the call follows from that, so the resolution alone is to blame.
RESOLUTION_REASONS = frozenset({("entry", "hide"), ("dispatch", "hide"), ("code-mode", "hide")})




def observations_by_call(trace: Trace) -> dict[str, list[Compared]]:
    """Each call's portable observations with the rules to blame when one differs. When an
    observation carries the call's outcome and the outcome differs, the oracle's latest
    routing of that call (why the outcome is what it is) is blamed, where there is one.

    A run_code program's observations are lanes of their own (``<call> program``), and how
    its calls settled another (``<call> settled``, by the program's call number): where a
    settlement falls among the program's steps and the sub-calls' stages is JavaScript's
    microtask order, which the spec leaves open (laws check what it does fix)."""
    out: dict[str, list[Compared]] = {}
    route: dict[str, list[str]] = {}
    reasons: dict[str, list[Reason]] = {}
    # Two traces a case, tens of observations each: each field read once.
    for n, o in enumerate(trace.observations):
        stage, what, who = o.stage, o.what, o.who
        # A getter's reads form a lane of their own: how many there are and what each read
        # gave is the spec's (P13, P23); how they interleave with other getters' reads and
        # with the stages is not.
        call = f"getter {who}" if stage == "getter" else (o.call or "-")
        if stage == "route":
            route[call] = list(o.rules)
            continue
        if _portable(stage, what, who):
            value = o.value
            # it carries the call's outcome: tools/result or post-execute starts, or a participant observes a result
            carries = (who is None and (stage, what) in _OUTCOME_PROBES) or (
                what == "observe" and isinstance(value, dict) and "result" in value)
            outcome = route.get(call, []) if carries else None
            why = reasons.pop(call, [])
            if stage == "program":
                call = f"{call} {'settled' if what == 'settle' else 'program'}"
            item = {"stage": stage, "what": what, "who": who, "value": value}  # the item as compared
            out.setdefault(call, []).append(Compared(item, Blame(list(o.rules), outcome, route.get(call, []), why), n))
        elif (stage, what) in REASONS:
            reasons.setdefault(call, []).append(Reason(stage, what, list(o.rules)))
    for lane, items in out.items():
        if lane.endswith(" settled"):
            items.sort(key=lambda i: i.item["value"].get("n", 0) if isinstance(i.item["value"], dict) else 0)
        else:
            out[lane] = _one_classification(items)
    return out


def _one_classification(items: list[Compared]) -> list[Compared]:
    """A queued sub-call is classified again each time the lane looks at it (P121: "re-read
    just before each start"); how often that is before it starts is the implementation's.
    Repeats of the same classifier step at the head of a sub-call's lane count once."""
    head: list[Compared] = []
    i = 0
    while i < len(items) and items[i].item["stage"] == "classify":
        head.append(items[i])
        i += 1
    if not head:
        return items
    groups: list[list[Compared]] = []  # one per invocation: its call, then its steps
    for item in head:
        if item.item["what"] == "call" or not groups:
            groups.append([])
        groups[-1].append(item)
    if len({json.dumps([x.item for x in g], sort_keys=True) for g in groups}) == 1:
        return groups[0] + items[i:]
    return items


# kit.trace.portable by kind of step (stage, what, who): a trace repeats a few tens of them.
_portable = functools.lru_cache(maxsize=4096)(portable)


_OUTCOME_PROBES = frozenset({("result", "start"), ("post-execute", "start")})


def events_for(trace: Trace, profiles: set[str]) -> list[dict[str, Any]]:
    types: set[str] = set()
    if "loop" in profiles:
        types |= LOOP_EVENTS
    if "reference" in profiles:
        types |= APPROVAL_EVENTS | BODY_EVENTS
    if "code-mode" in profiles:
        types |= CODE_EVENTS
    out = []
    for e in trace.events:
        if e.type not in types:
            continue
        doc = event_doc(e)
        doc.pop("at", None)  # where an event falls among the observations: laws read it, not comparisons
        if e.type == "assistant/message" and isinstance(doc.get("data"), dict):
            # The model's message comes from the scenario; only its place in the log is the loop's.
            doc["data"] = {k: v for k, v in doc["data"].items() if k in ("turn", "step")}
        out.append(doc)
    return out


def _is_answerer(item: dict[str, Any]) -> bool:
    return item["stage"] == "approval" and item["who"] not in (None, "approval")


def _abandoned_answers(trace: Trace) -> list[str]:
    """Calls whose request signal aborted while answerers were deciding: the shipped
    service settles as cancelled and abandons them (P43.5; the oracle notes it). Where
    their own steps fall against the call's next stages is microtask scheduling, not spec."""
    return [o.call for o in trace.observations if (o.stage, o.what) == ("approval", "abandon") and o.call]


def _answerer_lane(by_call: dict[str, list[Any]], call: str) -> dict[str, list[Any]]:
    """The call's observations with its answerers' moved to a lane of their own, which
    keeps their order among themselves."""
    items = by_call.get(call, [])
    out = dict(by_call)
    out[call] = [i for i in items if not _is_answerer(i.item)]
    lane = [i for i in items if _is_answerer(i.item)]
    if lane:
        out[f"{call} answerers"] = lane
    return out


def observation_lanes(expected: Trace, actual: Trace,
                      act_obs: dict[str, list[Compared]] | None = None) -> list[tuple[str, list[Compared], list[Compared]]]:
    """The observation lanes both traces are compared in, named ``observations[<lane>]``:
    each call's, an abandoned approval's answerers apart, a program's steps and its
    settlements apart. ``act_obs``: ``observations_by_call(actual)``, when known already."""
    exp_obs = observations_by_call(expected)
    act_obs = observations_by_call(actual) if act_obs is None else act_obs
    for call in _abandoned_answers(expected):
        exp_obs, act_obs = _answerer_lane(exp_obs, call), _answerer_lane(act_obs, call)
    return [(f"observations[{call}]", exp_obs.get(call, []), act_obs.get(call, []))
            for call in list(exp_obs) + [c for c in act_obs if c not in exp_obs]]


def event_lanes(expected: Trace, actual: Trace, profiles: set[str]) -> list[tuple[str, list[Any], list[Any]]]:
    """The session events the profiles speak of, in the lanes they are compared in."""
    ee, ae = events_for(expected, profiles), events_for(actual, profiles)
    # P122: a sub-call's tool/code-dispatch follows its commit, after the log waterfall, so
    # where it falls against later starts and commits is microtask order: a lane of its own,
    # by sub-call.
    logs = ("events.dispatch-log", _by_sub_call([ev for ev in ee if ev["type"] == DISPATCH_LOG]),
            _by_sub_call([ev for ev in ae if ev["type"] == DISPATCH_LOG]))
    extra = [logs] if logs[1] or logs[2] else []
    if extra:
        # Without them, the other events' sequence numbers say nothing: compare them by place.
        ee = _lane_view([ev for ev in ee if ev["type"] != DISPATCH_LOG])
        ae = _lane_view([ev for ev in ae if ev["type"] != DISPATCH_LOG])
    if _pooled(expected):
        # P21: in a parallel pool a later call's tool/call *may* follow an earlier call's
        # tool/result, so the interleaving of starts and commits is free. Each lane keeps its
        # order: starts (tool/call, approval), commits (tool/result, inbox) and the rest.
        lanes = [(name, [ev for ev in _lane_view(ee) if lane(ev)], [ev for ev in _lane_view(ae) if lane(ev)])
                 for name, lane in LANES]
    else:
        lanes = [("events", ee, ae)]
    return lanes + extra


def result_pairs(expected: Trace, actual: Trace) -> list[tuple[str, Any, Any]]:
    """Each call's final result on both sides (None: no result on that side)."""
    exp_res = {r.callId: result_doc(r) for r in expected.results}
    act_res = {r.callId: result_doc(r) for r in actual.results}
    return [(call, exp_res.get(call), act_res.get(call)) for call in list(exp_res) + [c for c in act_res if c not in exp_res]]


def compared_warnings(expected: Trace, actual: Trace, profiles: set[str]) -> Warnings | None:
    """The warnings the profiles compare (reference: all; code-mode: P123's), with the rules
    they are put down to; None when the profiles compare none."""
    if "reference" in profiles:
        logs = _dispatch_log_warnings(expected.warnings) != _dispatch_log_warnings(actual.warnings)
        return Warnings(expected.warnings, actual.warnings, ["P123"] if logs else ["P101"])
    if "code-mode" in profiles:
        return Warnings(_dispatch_log_warnings(expected.warnings), _dispatch_log_warnings(actual.warnings), ["P123"])
    return None


def _dispatch_log_warnings(warnings: list[str]) -> list[str]:
    """P123's warnings: Code Mode's own texts, compared under the code-mode profile."""
    return [w for w in warnings if w.startswith("tools: code-dispatch-log listener failed for ")]


def _by_sub_call(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def key(ev: dict[str, Any]) -> tuple[Any, ...]:
        data = ev.get("data") if isinstance(ev.get("data"), dict) else {}
        sub = str(data.get("subCallId", ""))
        head, _, n = sub.rpartition(":code:")
        return (ev.get("agent", ""), head, int(n) if n.isdigit() else 0, sub)
    return [{k: v for k, v in ev.items() if k != "seq"} for ev in sorted(events, key=key)]


LANES = [
    ("events.starts", lambda ev: ev["type"] in ("tool/call", "approval/asked", "approval/decided")),
    ("events.commits", lambda ev: ev["type"] in ("tool/result", "agent/inbox/spliced")),
    ("events.rest", lambda ev: ev["type"] not in ("tool/call", "approval/asked", "approval/decided",
                                                   "tool/result", "agent/inbox/spliced")),
]


def _pooled(trace: Trace) -> bool:
    """Whether a parallel pool formed in the oracle's run (a call classified parallel)."""
    return any(o.stage == "classify" and o.value == "parallel" for o in trace.observations)


def _lane_view(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events without their sequence numbers, a result citing its call by call id: the
    numbers depend on the interleaving that pools leave free."""
    calls = {ev["seq"]: ev["data"].get("callId") for ev in events if ev["type"] == "tool/call" and "seq" in ev}
    out = []
    for ev in events:
        doc = {k: v for k, v in ev.items() if k not in ("seq", "sourceEventSeqs")}
        if "sourceEventSeqs" in ev:
            doc["cites"] = [calls.get(n) for n in ev["sourceEventSeqs"]]
        out.append(doc)
    return out


def normalized(trace: Trace, by_call: dict[str, list[Compared]] | None = None) -> dict[str, Any]:
    """The trace as the comparison reads it (the portable observations, lane by lane;
    every event; the results; the warnings), in a canonical form: what a digest of an
    implementation's answer is taken of. ``by_call``: ``observations_by_call(trace)``."""
    by_call = observations_by_call(trace) if by_call is None else by_call
    lanes = {call: [item for item, _blame, _n in items] for call, items in by_call.items()}
    return {"observations": lanes,
            "events": [event_doc(e) for e in trace.events],
            "results": [result_doc(r) for r in trace.results],
            "warnings": list(trace.warnings)}


def digest(trace: Trace, by_call: dict[str, list[Compared]] | None = None) -> str:
    """``sha256:<16 hex>`` of the normalized trace (keys sorted, lone surrogates escaped)."""
    text = jsontext.dumps(normalized(trace, by_call), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
