"""The agent loop around the pipeline (profile ``loop``: P15..P21, P103..P113).

One tool step: the assistant message's tool-call blocks become call inputs (P16, P17),
are classified (P19) and run as exclusive barriers or rolling parallel pools (P20): the
ordered stages one call at a time, dispatches overlapping, commits in model order (P21).
Each commit finishes the call in the registry, appends its ``tool/result`` (P104) and
accepts its contexts into the next-step queue (P109). At the next step boundary the
queue becomes ``user/message`` events (P110). Abort mid-batch drains what started and
gives every unstarted call a synthetic pair (P107).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import texts
from .classify import classify
from .arguments import parse_arguments
from .inbox import cancel, splice_append
from ..kit.jsvalue import clone, Thrown
from .pipeline import Route, dispatch, finalize, prepare
from ..kit.record import Input, Record
from .registry import World
from ..kit.scenario import LoopRun
from ..kit.scheduler import ABORT_REASON, Task
from ..kit.trace import call_result
from .turns import after_tool_step

# ---------------------------------------------------------------------------- events

@dataclass
class Step:
    turn: int
    step: int
    agent: str
    signal: Any
    concluded: bool = False
    call_seqs: dict[str, int] = field(default_factory=dict)


def _tool_call(w: World, st: Step, block: Any) -> None:
    st.call_seqs[block.id] = w.append_event(st.agent, "tool/call", {
        "turn": st.turn, "step": st.step, "callId": block.id, "name": block.name,
        "arguments": block.arguments}, fresh=True)  # P18: the raw string


def _tool_result(w: World, st: Step, block: Any, result: dict[str, Any]) -> None:
    """P104: the tool-result message; ``error`` is ``error.info``; ``meta`` when present."""
    message = {"role": "user", "source": {"kind": "tool", "callId": block.id},
               "content": [{"type": "tool-result", "toolCallId": block.id,
                            "content": result["content"], "isError": result["isError"]}]}
    data: dict[str, Any] = {"turn": st.turn, "step": st.step, "message": message}
    info = result.get("error", {}).get("info") if isinstance(result.get("error"), dict) else None
    if info is not None:
        data["error"] = info
    if "meta" in result:
        data["meta"] = result["meta"]
    w.append_event(st.agent, "tool/result", data, [st.call_seqs[block.id]], fresh=True)


def _synthetic(w: World, st: Step, block: Any) -> None:
    """P107: a call that never started gets a pair without any registry stage."""
    w.obs(block.id, "loop", "synthetic", None, None, ("P107",))
    _tool_call(w, st, block)
    _tool_result(w, st, block, {"isError": True,
                                "content": [{"type": "text", "text": "Error: " + texts.ABORTED_BEFORE_DISPATCH}],
                                "error": {"message": texts.ABORTED_BEFORE_DISPATCH,
                                          "info": {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}}})
    w.open_gate(block.id)


# ---------------------------------------------------------------------------- the batch

async def run_loop(w: World, run: LoopRun) -> None:
    agent = run.agent
    w.loop_agent = agent
    st = Step(turn=1, step=1, agent=agent, signal=w.signal("step"))
    w.append_event(agent, "assistant/message", {
        "turn": 1, "step": 1, "content": [{"type": "tool-call", "id": b.id, "name": b.name,
                                            "arguments": b.arguments} for b in run.blocks]})
    if run.aborted:
        st.signal.abort(ABORT_REASON)
    timer = _cancel_at(w, run)
    ended = "tools"
    if run.finish == "max-tokens":  # P15: nothing of the step runs
        w.obs(None, "loop", "end", None, "max-tokens", ("P15",))
        ended = "max-tokens"
    else:
        try:
            await batch(w, run, st)
        except Thrown as t:  # P108: the turn fails with the first scheduler error
            w.obs(None, "loop", "throw", None, t.value, ("P108", "P113"))
            ended = "failed"
    w.append_event(agent, "step/end", {"turn": 1, "step": 1})
    if timer is not None:
        w.sched.cancel(timer)  # the caller's timer outlives no turn of the tool step
    await after_tool_step(w, run, st, ended)


def _cancel_at(w: World, run: LoopRun) -> Any:
    """``run.cancelAt``: the caller's ``cancel()`` at a chosen virtual time (P112)."""
    at = run.cancelAt
    if at is None:
        return None
    timer = w.sched.timer(at.ms)
    reason = ABORT_REASON if at.reason is None else clone(at.reason)

    def fire(_d: Any) -> None:
        w.obs(None, "loop", "cancel", None, {"keepInbox": at.keepInbox, "at": at.ms}, ("P112",))
        cancel(w, at.keepInbox, reason)
    timer.on_settle(fire)
    return timer


async def batch(w: World, run: LoopRun, st: Step) -> None:
    planned = [(b, Input(callId=b.id, name=b.name, arguments=parse_arguments(b.arguments),
                         signal=st.signal, agent=run.agent)) for b in run.blocks]  # P16, P17
    i = 0
    while i < len(planned):
        if classify(w, planned[i][1]) == "parallel":
            consumed, aborted = await _pool(w, run, st, planned[i:])
        else:
            consumed, aborted = 1, await _barrier(w, st, planned[i])
        i += consumed
        if aborted:
            for block, _ in planned[i:]:
                _synthetic(w, st, block)
            return


async def _barrier(w: World, st: Step, planned: tuple[Any, Input]) -> bool:
    """One exclusive barrier (P20): the call alone, from its ``tool/call`` to its commit.
    Returns whether the step was aborted by then. Its dispatch is a task of its own, as a
    pool's are: the same turns of the scheduler as a pool of one (ready work runs before
    the dispatch starts and before the commit), without a pool's bookkeeping."""
    block, inp = planned
    if st.signal.aborted:  # P107
        _synthetic(w, st, block)
        return True
    _tool_call(w, st, block)  # P18: immediately before the call enters the registry
    rec, route = await prepare(w, inp)
    if route.kind == "dispatch":
        route = await w.sched.spawn(_dispatched(w, rec))
    else:
        w.open_gate(rec.callId)  # never dispatched
    await _commit(w, st, block, rec, route)
    return st.signal.aborted


async def _dispatched(w: World, rec: Record) -> Route:
    route = await dispatch(w, rec)
    w.open_gate(rec.callId)
    return route


async def _commit(w: World, st: Step, block: Any, rec: Record, route: Route) -> None:
    result = await finalize(w, rec, route)  # P103: tools/result before tool/result
    w.trace.results.append(_call_result(w, block.id, result))
    _tool_result(w, st, block, result)
    w.obs(block.id, "loop", "commit", None, None, ("P104", "P105", "P109"))
    for context in result.get("additionalContexts", []):  # P109, in array order, failures included
        splice_append(w, context)
    st.concluded = st.concluded or result.get("concludesTurn") is True


async def _pool(w: World, run: LoopRun, st: Step, group: list[tuple[Any, Input]]) -> tuple[int, bool]:
    """One rolling parallel pool (P20, P21). Returns (consumed, aborted)."""
    slots: list[tuple[Record, Route] | None] = [None] * len(group)
    in_flight: dict[int, Task] = {}
    started = committed = next_to_start = 0
    aborted = st.signal.aborted

    async def commit_ready() -> None:
        nonlocal committed
        while committed < len(group) and slots[committed] is not None:
            rec, route = slots[committed]  # type: ignore[misc]
            await _commit(w, st, group[committed][0], rec, route)
            committed += 1

    async def dispatch_one(index: int, rec: Record) -> int:
        slots[index] = (rec, await _dispatched(w, rec))
        return index

    async def start(index: int) -> None:
        nonlocal started
        block, inp = group[index]
        _tool_call(w, st, block)  # P18: immediately before the call enters the registry
        started += 1
        rec, route = await prepare(w, inp)
        if route.kind == "dispatch":
            in_flight[index] = w.sched.spawn(dispatch_one(index, rec))
        else:
            slots[index] = (rec, route)  # never dispatched: occupies no pool slot (P20)
            w.open_gate(rec.callId)

    async def fill_pool() -> None:
        nonlocal next_to_start, aborted
        while not aborted and next_to_start < len(group) and len(in_flight) < run.maxParallelToolCalls:
            if next_to_start > 0 and classify(w, group[next_to_start][1]) != "parallel":
                break  # P20: re-classified exclusive: ends the pool
            await start(next_to_start)
            next_to_start += 1
            await commit_ready()
            if st.signal.aborted:
                aborted = True

    try:
        await fill_pool()
        while in_flight:
            tasks = list(in_flight.values())
            settled = await w.sched.any_of(*tasks)
            index = tasks[settled].value
            del in_flight[index]
            await commit_ready()
            if st.signal.aborted:
                aborted = True
            await fill_pool()
    except Thrown:
        for task in list(in_flight.values()):  # P108: wait for in-flight dispatches to settle
            if not task.done:
                await task
        raise
    if aborted:  # P107
        for block, _ in group[started:]:
            _synthetic(w, st, block)
        return len(group), True
    return started, False


def _call_result(w: World, call_id: str, result: dict[str, Any]) -> Any:
    return call_result(call_id, result, w.is_deeply_frozen(result), True)
