"""The loop agent's two pending queues (profile ``loop``: P109..P113): the next-step queue
and the next-turn queue, and the three things done to them: append (``inject``,
``steer``, a commit's contexts, a follow-up turn), claim (a step boundary), and the
caller's ``cancel``. Every change is one ``agent/inbox/spliced`` event.

The loop, the turns after it and the script interpreter (a participant's ``inject``,
``steer`` and ``cancel`` steps) all change the queues through these functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..kit.jsvalue import JsValue, Thrown, get, js_error

if TYPE_CHECKING:  # annotations only: the registry's World calls these for the script's steps
    from .registry import World


def splice_append(w: World, message: JsValue, target: str = "next-step") -> None:
    """Append one message to a pending queue, recorded as ``agent/inbox/spliced`` (P109).
    A message id that is already pending in either queue throws (P113)."""
    agent = w.loop_agent
    assert agent is not None
    mid = get(message, "id")
    if any(get(m, "id") == mid for m in (*w.inbox, *w.inbox_next_turn)):
        raise Thrown(js_error(f'message "{mid}" is already pending'))
    queue = w.inbox if target == "next-step" else w.inbox_next_turn
    w.append_event(agent, "agent/inbox/spliced", {"target": target, "start": len(queue), "inserted": [message]})
    queue.append(message)


def claim(w: World, agent: str, first_of_turn: bool) -> list[JsValue]:
    """The boundary's claim: the whole next-step queue, then (at a turn's first step) the
    first queued turn message; each list's removal is one ``agent/inbox/spliced``."""
    claimed = list(w.inbox)
    if claimed:
        w.append_event(agent, "agent/inbox/spliced", {"target": "next-step", "start": 0,
                                                      "removedCount": len(claimed), "inserted": []})
        w.inbox.clear()
    if first_of_turn and w.inbox_next_turn:
        claimed.append(w.inbox_next_turn.pop(0))
        w.append_event(agent, "agent/inbox/spliced", {"target": "next-turn", "start": 0, "removedCount": 1,
                                                      "inserted": []})
    return claimed


def cancel(w: World, keep_inbox: bool, reason: JsValue) -> None:
    """The agent's ``cancel(reason, {keepInbox})``: without ``keepInbox`` both queues are
    cleared first, next-step before next-turn, each clearing one ``agent/inbox/spliced``
    with outcome ``canceled`` (P112); then the step's signal aborts."""
    agent = w.loop_agent
    assert agent is not None
    if not keep_inbox:
        for target, queue in (("next-step", w.inbox), ("next-turn", w.inbox_next_turn)):
            if queue:
                w.append_event(agent, "agent/inbox/spliced", {"target": target, "start": 0, "removedCount": len(queue),
                                                              "inserted": [], "outcome": "canceled"})
                queue.clear()
        w.wake_requested = False
    w.signal("step").abort(reason)
