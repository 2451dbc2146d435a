"""What follows a loop run's tool step: its step boundaries, the end of its turn, and the
next turn a scenario asks for (``run.nextTurn``; profile ``loop``: P106, P110, P112).

At each step boundary the agent claims its next-step queue (and, at a turn's first step,
the first queued turn message), hands the claimed messages to the ``agent/pre-step``
waterfall, which may rewrite them (``{kind:"enter", messages}``) or reject the step
(``{kind:"reject"}``), and only then starts the step: ``step/start``, one ``user/message``
per message, the model request (P110). The scripted model answers every request after the
tool step with a text block, so a step after the tool step ends its turn unless something
was queued meanwhile.

The trace's window ends at the model request of the first step after the tool step, or,
when there is a next turn (``nextTurn``, or a steer after the abort that woke the agent),
at the model request of that turn's first step.
"""

from __future__ import annotations

from typing import Any, Literal

from .inbox import claim, splice_append
from ..kit.jsvalue import clone, UNDEFINED, JsValue, Thrown, token
from .registry import World
from ..kit.scenario import DELEGATE, Behavior, Listener, LoopRun, ScenarioError
from ..kit.script import Invocation, perform

TurnEnd = Literal["tools", "aborted", "max-tokens", "failed"]
PRE_STEP = "agent/pre-step"


async def after_tool_step(w: World, run: LoopRun, st: Any, ended: TurnEnd) -> None:
    """Everything after the tool step's ``step/end`` (see the module)."""
    agent = run.agent
    step = 1
    if ended == "tools" and not st.signal.aborted:
        turn_ends = "completed" if st.concluded else None
        while True:
            if turn_ends is not None and not w.inbox:  # P106: the turn is over
                w.obs(None, "loop", "end", None, "concluded" if st.concluded else "completed", ("P106",))
                break
            decision = await boundary(w, run, turn=1, step=step + 1, first_of_turn=False)
            if decision is None:  # rejected, or the waterfall failed: the turn is over
                break
            if turn_ends is not None and not decision:
                w.obs(None, "loop", "end", None, "concluded", ("P106",))
                break
            step += 1
            start_step(w, agent, 1, step, decision)
            if run.nextTurn is None:
                w.obs(None, "loop", "end", None, "next-step", ("P110",))
                return  # the window ends at this step's model request
            # The scripted model answers with text: the step completes the turn.
            w.append_event(agent, "assistant/message", {"turn": 1, "step": step, "content": [{"type": "text", "text": "done"}]})
            w.append_event(agent, "step/end", {"turn": 1, "step": step})
            turn_ends = "completed"
    elif st.signal.aborted:  # the turn aborts; accepted contexts stay queued (P112)
        w.obs(None, "loop", "end", None, "aborted", ("P107", "P112"))
    woke = st.signal.aborted and w.wake_requested and bool(w.inbox_next_turn)
    if run.nextTurn is None and not woke:
        return
    await next_turn(w, run, aborted=st.signal.aborted)


async def next_turn(w: World, run: LoopRun, aborted: bool) -> None:
    """P112: the next turn's first step claims what stayed queued. After an aborted turn a
    steer that asked to wake the agent has started that turn already; otherwise the caller
    starts it with ``followup(run.nextTurn)``."""
    woke = aborted and w.wake_requested and bool(w.inbox_next_turn)
    if not woke:
        try:
            splice_append(w, clone(run.nextTurn), "next-turn")
        except Thrown:  # an id already queued: followup() throws, no turn starts
            w.obs(None, "loop", "end", None, "followup-refused", ("P113",))
            return
    decision = await boundary(w, run, turn=2, step=1, first_of_turn=True)
    if decision is None:
        return
    if not decision:  # a turn's first step with nothing to enter: the turn ends there
        w.obs(None, "loop", "end", None, "completed", ("P110",))
        return
    start_step(w, run.agent, 2, 1, decision)
    w.obs(None, "loop", "end", None, "next-turn", ("P110", "P112"))


async def boundary(w: World, run: LoopRun, turn: int, step: int, first_of_turn: bool) -> list[JsValue] | None:
    """Claim, then the ``agent/pre-step`` waterfall (P5, P6, P110). Returns the messages
    the step enters with, or None when a listener rejected the step or the waterfall threw
    (the turn is over either way)."""
    claimed = claim(w, run.agent, first_of_turn)
    # The agent's dispatch adds ``agent``; the signal is the turn's (a new turn has its own).
    payload = {"messages": claimed, "turn": turn, "step": step, "agent": run.agent}
    listeners = [l for l in w.selected(PRE_STEP, None)]
    cursor = _PreStep(w, listeners, claimed, payload, turn)
    try:
        decision = await cursor.next_()
    except Thrown as t:
        w.obs(None, "loop", "throw", None, t.value, ("P110",))
        return None
    kind = decision.get("kind") if isinstance(decision, dict) and token(decision) is None else UNDEFINED
    if kind == "reject":
        w.obs(None, "loop", "end", None, "rejected", ("P110",))
        return None
    messages = decision.get("messages") if isinstance(decision, dict) else None
    if not isinstance(messages, list):
        raise ScenarioError("agent/pre-step", "a decision that is neither {kind:'reject'} nor one with a messages "
                            "array is outside the spec (P110 says only that the waterfall may rewrite or reject)")
    return messages


class _PreStep:
    """P6: the ``agent/pre-step`` waterfall's one shared, consuming cursor. (An object: a
    ``next`` closure handing itself to each listener is a reference cycle, and it held the
    whole world until the cyclic collector came by.)"""

    def __init__(self, w: World, listeners: list[Listener], claimed: list[JsValue], payload: dict[str, Any],
                 turn: int) -> None:
        self.w = w
        self.listeners = listeners
        self.claimed = claimed
        self.payload = payload
        self.turn = turn
        self.position = 0

    async def next_(self) -> JsValue:
        position = self.position
        self.position += 1  # P6: one shared, consuming cursor
        if position >= len(self.listeners):
            return {"kind": "enter", "messages": list(self.claimed)}  # the terminal
        l: Listener = self.listeners[position]
        inv = Invocation(who=l.id, stage="pre-step", record=None, rules=("P5", "P110"), next=self.next_,
                         request=self.payload,
                         request_signal=self.w.signal("step" if self.turn == 1 else f"turn-{self.turn}"))
        return await perform(self.w, inv, l.script or Behavior.model_validate(DELEGATE))


def start_step(w: World, agent: str, turn: int, step: int, messages: list[JsValue]) -> None:
    w.append_event(agent, "step/start", {"turn": turn, "step": step})
    for m in messages:
        w.append_event(agent, "user/message", m)
