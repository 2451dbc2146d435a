"""Laws of stage order (P1, P5, P14, P71, P73): each stage once, in order, bracketed, and
nothing of a call outside its own stages."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from dsh_conformance.laws.framework import AFTER_RESULT, BODY_WORK, RANK, STAGE_NAME, UI_STAGES, View, Violation, law


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
