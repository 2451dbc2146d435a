"""Oracle-independent laws of Code Mode (section 5.15): what every trace of a ``run_code``
call must show, whatever the oracle says.

The laws read what an implementation reports: the ``run_code`` program's observations
(stage ``program``: the bindings, each binding call and how it settled, the run's end), each
sub-call's lane (its call id is ``<run_code call>:code:<n>``), the final results (sub-calls'
too), the bridge's session events with ``at`` (where an event falls among the
observations) and the scenario. They are marked with ``conformance.laws.framework.law`` and listed in
``conformance.laws.LAWS``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from dsh_conformance.kit.jsvalue import same_value
from dsh_conformance.kit.trace import Observation
from dsh_conformance.laws.framework import ABSENT, UNKNOWN, View, Violation, law
from dsh_conformance.oracle.texts import ABANDONED, NOT_DISPATCHED


RUN_OVER = "run_code run is over ("


REJECTED_AT_CALL = ("tool arguments must be lossless JSON",)  # P118.2; P118.1 ends in "not dispatched"


@dataclass
class Run:
    """One run_code call as its trace shows it: each run of its program (a wrapper's retry
    runs the body again, P69), the program's calls numbered across them (P119)."""
    call: str
    binds: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (program run, bind), in order
    settles: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)  # (program run, n) -> settle
    numbers: dict[tuple[int, int], int] = field(default_factory=dict)  # (program run, n) -> sub-call number
    # The number each accepted call would have if the rejected calls before it had taken one
    # too: what an implementation that numbers a call before its checks gives it (P118).
    counting_rejected: dict[tuple[int, int], int] = field(default_factory=dict)
    abandoned: set[int] = field(default_factory=set)  # sub-call numbers abandoned in the queue (P125)
    program_start: int | None = None
    program_end: Observation | None = None


def _rejected_at_call(settle: dict[str, Any] | None) -> bool:
    """A binding call that took no sub-call number (P118): the run was over, its argument was
    not lossless, or there was no such binding."""
    if settle is None or "error" not in settle:
        return False
    error = settle["error"]
    message = str(error.get("message", ""))
    if error.get("name") == "TypeError":
        return True
    return message.startswith(REJECTED_AT_CALL) or (message.startswith(RUN_OVER) and message.endswith(NOT_DISPATCHED))


def runs(v: View) -> dict[str, Run]:
    """The run_code calls of the trace, with their program's observations (positions among
    the portable observations). Worked out once per view (several laws ask; none changes it)."""
    if "code-mode runs" not in v.memo:
        v.memo["code-mode runs"] = _runs(v)
    return v.memo["code-mode runs"]


def _runs(v: View) -> dict[str, Run]:
    out: dict[str, Run] = {}
    program: dict[str, int] = {}
    for i, o in enumerate(v.obs):
        if o.stage != "program" or o.call is None:
            continue
        r = out.setdefault(o.call, Run(o.call))
        value = o.value if isinstance(o.value, dict) else {}
        if o.what == "start":
            program[o.call] = program.get(o.call, -1) + 1
            if r.program_start is None:
                r.program_start = i
        k = program.get(o.call, 0)
        if o.what == "bind":
            r.binds.append((k, value))
        elif o.what == "settle" and isinstance(value.get("n"), int):
            r.settles[(k, value["n"])] = value
        elif o.what == "end":
            r.program_end = o
    for r in out.values():
        number = every = 0
        for k, b in r.binds:
            n = b.get("n")
            if not isinstance(n, int):
                continue
            every += 1
            if not _rejected_at_call(r.settles.get((k, n))):
                number += 1
                r.numbers[(k, n)] = number
                r.counting_rejected[(k, n)] = every
                error = r.settles.get((k, n), {}).get("error", {})
                if str(error.get("message", "")).endswith(ABANDONED):
                    r.abandoned.add(number)
    return out


def positions(v: View, call: str) -> list[tuple[int, Observation]]:
    """The call's portable observations with their positions among the portable
    observations (the positions events' ``at`` count in)."""
    return [(i, o) for i, o in enumerate(v.obs) if o.call == call]


def first(v: View, call: str, stage: str, what: str) -> int | None:
    return next((i for i, o in positions(v, call) if o.who is None and o.stage == stage and o.what == what), None)


def subs_of(v: View, parent: str) -> dict[int, str]:
    return {int(cid.rsplit(":code:", 1)[1]): cid for cid, p in v.sub_calls.items() if p == parent}


def dispatch_events(v: View, parent: str) -> list[Any]:
    return [e for e in v.trace.events if e.type in ("tool/code-dispatch-start", "tool/code-dispatch")
            and isinstance(e.data, dict) and e.data.get("parentCallId") == parent]


def spec_of(v: View, call: str) -> Any:
    ct = v.calls.get(call)
    return ct.spec if ct is not None else None


@law
def sub_call_numbering(v: View) -> Iterator[Violation]:
    """P118, P119, P125: accepted binding calls are numbered from 1 in submission order, with
    no gaps; a rejected call takes no number; every accepted call starts as sub-call
    ``<run_code call>:code:<n>`` unless it was abandoned in the queue, and no other sub-call
    appears."""
    for cid in sorted(v.reused):
        yield Violation("P119", f"sub-call id {cid} names more than one sub-call of its run_code execution")
    for parent, r in runs(v).items():
        if any(cid.startswith(f"{parent}:code:") for cid in v.reused):
            continue  # its numbering is already wrong
        started = set(subs_of(v, parent))
        accepted = set(r.numbers.values())
        if not started <= accepted:
            extra = sorted(started - accepted)
            if started <= set(r.counting_rejected.values()):  # numbered as if rejected calls took numbers
                yield Violation("P118", f"run_code {parent}: sub-call {parent}:code:{extra[0]} is numbered as if the "
                                        "rejected binding calls before it had taken numbers")
            else:
                yield Violation("P119", f"run_code {parent}: sub-call {parent}:code:{extra[0]} matches no accepted binding call")
            continue
        missing = sorted(accepted - started - r.abandoned)
        if missing and r.program_end is not None:
            yield Violation("P119", f"run_code {parent}: accepted binding call {missing[0]} never started as {parent}:code:{missing[0]}")


@law
def sub_calls_stay_off_the_model_log(v: View) -> Iterator[Violation]:
    """P120, P28: a sub-call appends no ``tool/call`` or ``tool/result``, computes no
    ``meta``, and is never collapsed."""
    for e in v.trace.events:
        if e.type not in ("tool/call", "tool/result") or not isinstance(e.data, dict):
            continue
        cid = e.data.get("callId")
        if cid is None and isinstance(e.data.get("message"), dict):
            cid = e.data["message"].get("source", {}).get("callId")
        if cid in v.sub_calls:
            yield Violation("P120", f"sub-call {cid} appended {e.type}")
    for cid in v.sub_calls:
        # P74: a nested call never computes meta (a wrapper may still author one, P63)
        meta = next((o for _, o in positions(v, cid) if o.stage == "presentationMeta" and o.what == "call"), None)
        if meta is not None:
            yield Violation("P120", f"sub-call {cid}: {meta.who} ran (P74: nested calls compute no meta)")
        res = v.result(cid)
        if res is ABSENT or not isinstance(res, dict):
            continue
        error = res.get("error") if isinstance(res.get("error"), dict) else {}
        if "only `run_code` is callable directly" in str(error.get("message", "")):
            yield Violation("P120", f"sub-call {cid} was collapsed (P28 never applies to a call with a parent)")


@law
def dispatch_logging(v: View) -> Iterator[Violation]:
    """P122: with an agent, each started sub-call appends one ``tool/code-dispatch-start``
    before its first stage and one ``tool/code-dispatch`` after its tools/result, both with
    the run_code call's root and id, the sub-call's id and name and the same arguments;
    without an agent, neither; an abandoned sub-call, neither."""
    for parent, r in runs(v).items():
        spec = spec_of(v, parent)
        events = dispatch_events(v, parent)
        subs = subs_of(v, parent)
        if spec is None:
            continue
        if spec.agent is None:
            if events:
                yield Violation("P122", f"run_code {parent} has no agent, yet {events[0].type} was appended")
            continue
        # A root a getter gives (P23) is whatever its one read returned: not predicted, but
        # one value for every sub-call of the execution.
        roots = {repr(e.data.get("rootCallId")) for e in events}
        if spec.rootCallId is UNKNOWN and len(roots) > 1:
            yield Violation("P122", f"run_code {parent}: its dispatch events name {len(roots)} different roots")
        for k, cid in sorted(subs.items()):
            if cid in v.reused or k in r.abandoned:
                continue  # an abandoned one may have been classified, never started (checked below)
            mine = [e for e in events if e.data.get("subCallId") == cid]
            starts = [e for e in mine if e.type == "tool/code-dispatch-start"]
            logs = [e for e in mine if e.type == "tool/code-dispatch"]
            if len(starts) != 1 or len(logs) > 1 or (len(logs) == 0 and r.program_end is not None
                                                     and first(v, cid, "result", "start") is not None):
                yield Violation("P122", f"sub-call {cid}: {len(starts)} tool/code-dispatch-start and {len(logs)} tool/code-dispatch events")
                continue
            start = starts[0]
            expected = {"rootCallId": spec.rootCallId, "parentCallId": parent, "subCallId": cid}
            if spec.rootCallId is UNKNOWN:
                del expected["rootCallId"]
            if any(start.data.get(key) != value for key, value in expected.items()):
                yield Violation("P122", f"sub-call {cid}: tool/code-dispatch-start names another root, parent or sub-call")
                continue
            if logs and any(not same_value(logs[0].data.get(key), start.data.get(key))
                            for key in ("rootCallId", "parentCallId", "subCallId", "name", "arguments")):
                yield Violation("P122", f"sub-call {cid}: tool/code-dispatch and tool/code-dispatch-start disagree")
                continue
            own = [(i, o) for i, o in positions(v, cid) if o.stage != "classify"]  # classified before it starts
            if start.at is not None and own and start.at > own[0][0]:
                yield Violation("P122", f"sub-call {cid}: tool/code-dispatch-start after the sub-call's first stage")
            result_start = first(v, cid, "result", "start")
            if logs and logs[0].at is not None and (result_start is None or logs[0].at <= result_start):
                yield Violation("P122", f"sub-call {cid}: tool/code-dispatch before the sub-call's tools/result")
            res = v.result(cid)
            if logs and res is not ABSENT and isinstance(res, dict) and logs[0].data.get("isError") != res.get("isError"):
                yield Violation("P122", f"sub-call {cid}: tool/code-dispatch's isError is not the outcome's")
        for e in events:
            k_str = str(e.data.get("subCallId", "")).rsplit(":code:", 1)[-1]
            if k_str.isdigit() and int(k_str) in r.abandoned:
                yield Violation("P122", f"abandoned sub-call {e.data.get('subCallId')} appended {e.type}")


@law
def sub_call_identity(v: View) -> Iterator[Violation]:
    """P119: a sub-call's record shows its own id, the run_code call's root, its agent and a
    parent; it carries the parent token (not the parent's identity)."""
    for cid, parent in v.sub_calls.items():
        spec = spec_of(v, parent)
        if spec is None:
            continue
        for _, o in positions(v, cid):
            if o.what != "observe" or not isinstance(o.value, dict) or "callId" not in o.value or "hasParent" not in o.value:
                continue
            if o.stage == "code-dispatch-log":
                continue  # that listener is handed the run_code record
            rec = o.value
            want = {"callId": cid, "rootCallId": spec.rootCallId, "hasParent": True, "hasAgent": spec.agent is not None}
            if spec.rootCallId is UNKNOWN:
                del want["rootCallId"]  # a getter's read: see dispatch_logging
            wrong = [k for k, val in want.items() if rec.get(k) != val]
            if spec.agent is not None and rec.get("agent") != spec.agent:
                wrong.append("agent")
            if wrong:
                yield Violation("P119", f"sub-call {cid}: {o.who} sees a record with the wrong {wrong[0]}")
                break


START_STAGES = ("entry", "pre-execute", "approval", "guards")


"""P121: "A start is the start event, entry, pre-execute, approval and guards." (The start
event is a session event; the observations a start shows are of these stages.)"""


def _segments(v: View, cid: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None, tuple[int, int] | None]:
    """A sub-call's start (its start stages, P121), its dispatch and its commit, as spans of
    observation positions. A start ends with the last observation of its own stages: a
    sub-call that never dispatches (denied, not granted, failed before dispatch) is not
    still starting while it waits for its commit."""
    own = [(i, o) for i, o in positions(v, cid) if o.stage not in ("classify", "code-dispatch-log")]
    if not own:
        return None, None, None
    d = first(v, cid, "execute", "start")
    d_end = next((i for i, o in own if o.who is None and o.stage == "execute" and o.what in ("end", "throw")), None)
    p = first(v, cid, "post-execute", "start")
    r = first(v, cid, "result", "start")
    commit_from = p if p is not None else r
    before = d if d is not None else commit_from
    starting = [i for i, o in own if o.stage in START_STAGES and (before is None or i < before)]
    start = (starting[0], starting[-1]) if starting else None
    dispatch = (d, d_end if d_end is not None else d) if d is not None else None
    commit = (commit_from, r) if commit_from is not None and r is not None else None
    return start, dispatch, commit


@law
def one_ordered_lane(v: View) -> Iterator[Violation]:
    """P121: sub-calls start, and commit, in submission order; starts and commits run one at
    a time (no start or commit overlaps another)."""
    for parent in runs(v):
        subs = subs_of(v, parent)
        spans = {k: _segments(v, cid) for k, cid in subs.items()}
        starts = [(k, sp[0][0]) for k, sp in spans.items() if sp[0] is not None]
        if [k for k, _ in sorted(starts, key=lambda x: x[1])] != sorted(k for k, _ in starts):
            yield Violation("P121", f"run_code {parent}: sub-calls did not start in submission order")
            continue
        commits = [(k, sp[2][1]) for k, sp in spans.items() if sp[2] is not None]
        if [k for k, _ in sorted(commits, key=lambda x: x[1])] != sorted(k for k, _ in commits):
            yield Violation("P121", f"run_code {parent}: sub-calls did not commit in submission order")
            continue
        lane = sorted((span, k) for k, sp in spans.items() for span in (sp[0], sp[2]) if span is not None)
        for (a, ka), (b, kb) in zip(lane, lane[1:]):
            if b[0] <= a[1]:
                yield Violation("P121", f"run_code {parent}: a start or commit of {parent}:code:{kb} overlaps one of {parent}:code:{ka}")
                break


def _static_mode(v: View, name: str) -> str | None:
    """The classification a tool always gets, when the scenario makes it certain: no
    classifier is exclusive; a classifier that only returns true is parallel (P19)."""
    tools = [t for t in v.scenario.tools if t.name == name]
    if len(tools) != 1:
        return None
    t = tools[0]
    if t.concurrencySafe is None:
        return "exclusive"
    if t.define:
        return None
    b = t.concurrencySafe
    if b.byCall or b.perInvocation:
        return None
    if len(b.steps) == 1 and b.steps[0].do == "return" and b.steps[0].value is True:
        return "parallel"
    return None


@law
def exclusive_and_pooled_sub_calls(v: View) -> Iterator[Violation]:
    """P121: an exclusive sub-call runs alone: no other sub-call's body overlaps its run, and
    no later sub-call starts before its commit is done; at most ``maxParallelSubCalls``
    bodies are in flight at once."""
    limit = v.scenario.maxParallelSubCalls
    for parent in runs(v):
        subs = subs_of(v, parent)
        spans = {k: _segments(v, cid) for k, cid in subs.items()}
        names = {k: _sub_name(v, cid) for k, cid in subs.items()}
        bodies = [(sp[1], k) for k, sp in spans.items() if sp[1] is not None]
        for k, sp in spans.items():
            if names[k] is None or _static_mode(v, names[k]) != "exclusive" or sp[1] is None:
                continue
            begin = sp[0][0] if sp[0] is not None else sp[1][0]
            end = sp[2][1] if sp[2] is not None else sp[1][1]
            others = [kk for (b, kk) in bodies if kk != k and b[0] <= end and b[1] >= begin]
            later = [kk for kk, s2 in spans.items() if kk > k and s2[0] is not None and begin < s2[0][0] < end]
            if others or later:
                yield Violation("P121", f"exclusive sub-call {parent}:code:{k} did not run alone "
                                        f"({parent}:code:{(others or later)[0]} overlapped it)")
                break
        events = sorted([(b[0], 1) for b, _ in bodies] + [(b[1] + 0.5, -1) for b, _ in bodies])
        level = 0
        for _, step in events:
            level += step
            if level > limit:
                yield Violation("P121", f"run_code {parent}: more than maxParallelSubCalls={limit} sub-call bodies in flight")
                break


def _sub_name(v: View, cid: str) -> str | None:
    for e in v.trace.events:
        if e.type == "tool/code-dispatch-start" and isinstance(e.data, dict) and e.data.get("subCallId") == cid:
            return e.data.get("name")
    for _, o in positions(v, cid):
        if o.what == "observe" and isinstance(o.value, dict) and isinstance(o.value.get("name"), str):
            return o.value["name"]
    return None
