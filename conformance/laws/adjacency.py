"""Laws of the loop (P15..P21, P103..P113): every block a call and a result in order,
contexts after the batch, exclusive barriers and parallel pools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dsh_conformance.kit.jsvalue import same_value
from dsh_conformance.kit.scenario import DirectRun
from dsh_conformance.kit.trace import PIPELINE_STAGES

from dsh_conformance.laws.framework import ABSENT, UI_STAGES, View, Violation, law


@law
def direct_runs_inject_nothing(v: View) -> Iterator[Violation]:
    """P102: the registry never injects contexts: a direct run appends no ``user/message``
    and no inbox splice."""
    if isinstance(v.scenario.run, DirectRun):
        for e in v.trace.events:
            if e.type in ("user/message", "agent/inbox/spliced"):
                yield Violation("P102", f"a direct run appended {e.type}")


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
    in model order, each ``tool/call`` before its call's first registry stage, each
    ``tool/result`` after its ``tool/call`` and citing it; its payload
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
        # Before the call enters the registry: before its first stage's observation (its
        # classification comes before; a pool leaves the order among calls free, so only
        # the event's place among the observations shows this there).
        own = _stages(v, cid)
        if e.at is not None and own and e.at > own[0]:
            yield Violation("P18", f"tool/call {cid} appended after the call's first registry stage")
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


def _stages(v: View, cid: str) -> list[int]:
    """Where the call's portable observations lie among all of them (what ``Event.at``
    counts), its classification left out: that comes before the call starts."""
    return [i for i, o in v.calls[cid].obs if o.stage != "classify"] if cid in v.calls else []


def _may_answer_true(script: Any) -> bool:
    """Whether an ``isConcurrencySafe`` script could return exactly ``true`` (P19): unless
    every step of every script it holds is a ``return`` of a plain value other than true, a
    ``throw`` or an ``observe``, it could (a token's value, say, is not known here)."""
    for steps in (script.steps, *script.byCall.values(), *script.perInvocation):
        for step in steps:
            if step.do not in ("return", "throw", "observe"):
                return True
            if step.do == "return" and (step.value is True or isinstance(step.value, (dict, list))):
                return True
    return False


@law
def barriers_and_pools(v: View) -> Iterator[Violation]:
    """P20: at most ``maxParallelToolCalls`` calls of the batch are dispatched and unsettled
    at once (from the start of a call's ``tools/execute`` waterfall to its end), and a call
    that no definition could classify parallel (no definition of its name declares an
    ``isConcurrencySafe`` that could answer exactly true) runs alone: in flight with no
    other, and no other call's stage between its first one and its ``tool/result``. A
    wrong pool shows first as a stage out of order; this law names the rule that was
    broken."""
    run = v.loop
    if run is None or run.finish == "max-tokens":
        return
    blocks = {b.id: b.name for b in run.blocks}
    classified = {t.name for t in v.scenario.tools
                  if t.concurrencySafe is not None and _may_answer_true(t.concurrencySafe)} | {"run_code"}
    yield from _barriers_alone(v, blocks, classified)
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
                yield Violation("P20", f"call {alone[0]} is exclusive (no definition of {blocks[alone[0]]} could "
                                       f"classify it parallel) but was in flight with "
                                       f"{', '.join(c for c in in_flight if c != alone[0])}")
                return
        elif o.what in ("end", "throw") and o.call in in_flight:
            in_flight.remove(o.call)


# P21: what runs one call at a time, in model order (post-execute to the notification)
ORDERED_STAGES = PIPELINE_STAGES[PIPELINE_STAGES.index("post-execute"):]


@law
def ordered_stages_in_model_order(v: View) -> Iterator[Violation]:
    """P21: post-execute, finalizeContent, tools/result and the tool/result append of the
    batch's calls run in model order, one call at a time: every ordered stage of a call lies
    after the last one of each earlier call (and its tool/result, by ``Event.at``), whatever
    the pool lets its dispatch overlap."""
    run = v.loop
    if run is None or run.finish == "max-tokens":
        return
    results = {_tool_result_call(e): e.at for e in v.trace.events
               if e.type == "tool/result" and e.agent == run.agent and e.at is not None}
    free_from, done_by = 0, None  # the first observation position after the earlier calls' ordered stages
    for b in run.blocks:
        own = [i for i, o in v.calls[b.id].obs if o.stage in ORDERED_STAGES] if b.id in v.calls else []
        if not own:
            continue
        if own[0] < free_from:
            yield Violation("P21", f"call {b.id}'s {v.obs[own[0]].stage} ran before the ordered stages of "
                                   f"{done_by}, which comes earlier in model order, were done")
            return
        free_from, done_by = max(own[-1] + 1, results.get(b.id) or 0), b.id


def _barriers_alone(v: View, blocks: dict[str, str], classified: set[str]) -> Iterator[Violation]:
    """An exclusive barrier, by the place of the call's ``tool/result`` among the
    observations (``Event.at``): every stage of the batch's other calls lies before the
    call's first stage or after its ``tool/result`` (their classification aside: the next
    call's comes once the barrier is done)."""
    results = {_tool_result_call(e): e.at for e in v.trace.events
               if e.type == "tool/result" and e.agent == v.loop.agent and e.at is not None}  # type: ignore[union-attr]
    for cid, name in blocks.items():
        own = _stages(v, cid)
        if name in classified or not own or results.get(cid) is None:
            continue
        first, end = own[0], results[cid]
        for other in blocks:
            if other != cid and any(first <= i < end for i in _stages(v, other)):
                yield Violation("P20", f"call {cid} is exclusive (no definition of {name} could classify it "
                                       f"parallel) but a stage of {other} ran within its barrier")
                return
