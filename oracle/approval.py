"""G3, the approval stage (P36..P43): an ``ask`` resolved into an allow or a deny.

Without a service or an agent the ask is denied (P37, P38); a custom service's script, or
the shipped service (P43: its audit pair, its ``approval/request`` answerers, abandoned on
abort), gives an outcome of the closed vocabulary (``decisions.OUTCOMES``), and each
outcome's route is read from that table (P40, P41). The pipeline hands in its waterfall.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from . import texts
from .departures import NotComputable
from ..kit.decisions import GRANTED, OUTCOMES
from ..kit.jsvalue import UNDEFINED, JsValue, Thrown, js_error, js_string, json_text
from ..kit.record import Record
from .registry import World
from ..kit.scenario import CustomApproval
from ..kit.script import Invocation, perform

Waterfall = Callable[..., Awaitable[JsValue]]
"""The pipeline's ``waterfall(w, event, rec, args, terminal, rules, agent=...)`` (P5, P6)."""

ROUTES: dict[str, tuple[str, Callable[[str], str] | None]] = {
    GRANTED: ("allow", None),
    "rejected": ("deny", texts.approval_rejected),
    "unavailable": ("deny", texts.approval_unavailable),
    "cancelled": ("deny", texts.approval_cancelled),
}
"""P40, P41: where each outcome of the vocabulary (``decisions.OUTCOMES``) sends the call,
with the denial reason of each outcome that does not grant."""


async def ask(w: World, rec: Record, reason: JsValue, waterfall: Waterfall) -> tuple[str, JsValue, bool]:
    """G3: resolve an ask into allow or deny (P36, P37, P38, P40, P41); returns (kind, reason,
    cancelled). Throws are G-throws. ``waterfall`` runs the shipped service's
    ``approval/request`` answerers (the pipeline's waterfall, P43)."""
    approval = w.scenario.approval
    if approval is None:  # P37, P38
        text = reason if isinstance(reason, str) else texts.approval_not_supported(rec.name)
        w.obs(rec.callId, "approval", "deny", None, "no-service", ("P37", "P38"))
        return "deny", text, False
    if rec.agent is None:  # P37, P38
        w.obs(rec.callId, "approval", "deny", None, "no-agent", ("P37", "P38"))
        return "deny", texts.approval_no_agent(rec.name), False
    if w.forged(rec.agent):  # the reference's P24 departure: what its approval service makes of it is not computed
        raise NotComputable(f"call {rec.callId}", "an approval request for a forged agent")
    request: dict[str, Any] = {"agent": rec.agent, "toolName": rec.name, "callId": rec.current_call_id}
    if isinstance(reason, str):
        request["reason"] = reason  # P39
    signal = rec.signal  # P39: the record's signal at this moment
    w.obs(rec.callId, "approval", "start", None, None, ("P36",))
    w.obs(rec.callId, "approval", "request", None, request, ("P36", "P39"))
    try:
        if isinstance(approval, CustomApproval):
            inv = Invocation(who="approval", stage="approval", record=rec, rules=("P40",),
                             request=request, request_signal=signal)
            outcome = await perform(w, inv, approval.script)
        else:
            outcome = await shipped_approval(w, rec, request, signal, waterfall)
    except Thrown as t:
        w.obs(rec.callId, "approval", "throw", None, t.value, ("P40",))
        raise
    # the shipped service's outcome is P43's to decide, a custom service's its own
    w.obs(rec.callId, "approval", "outcome", None, outcome,
          ("P40",) if isinstance(approval, CustomApproval) else ("P40", "P43"))
    route = ROUTES.get(outcome) if isinstance(outcome, str) else None
    if route is not None:  # P40, P41
        kind, denial = route
        return kind, UNDEFINED if denial is None else denial(rec.name), outcome == "cancelled"
    raise Thrown(js_error(texts.approval_unreachable(_rendered(outcome))))


def _rendered(outcome: JsValue) -> str:
    """P41: ``JSON.stringify(o) ?? String(o)``. A throw of JSON.stringify itself (a BigInt)
    propagates as that throw; a symbol has no JSON text and renders as Symbol(desc)."""
    text = json_text(outcome)
    return text if text is not None else js_string(outcome)


async def shipped_approval(w: World, rec: Record, request: dict[str, Any], signal: Any, waterfall: Waterfall) -> str:
    """P43: the shipped service, with its audit pair around the decision."""
    agent = w.agents[request["agent"]]
    if not agent.spec.openTurn:
        raise Thrown(js_error(texts.NO_OPEN_TURN))
    w.approvals += 1
    approval_id = f"approval-{w.approvals}"
    asked = {"id": approval_id, "toolName": request["toolName"], "callId": request["callId"]}
    if "reason" in request:
        asked["reason"] = request["reason"]
    w.append_event(agent.id, "approval/asked", asked)
    policy = getattr(w.scenario.approval, "policy", "ask")
    if signal.aborted:
        outcome = "cancelled"
    elif policy == "never":
        outcome = "rejected"
    else:
        outcome = await _answer(w, rec, request, signal, waterfall)
    w.append_event(agent.id, "approval/decided", {"id": approval_id, "outcome": outcome})
    return outcome


async def _answer(w: World, rec: Record, request: dict[str, Any], signal: Any, waterfall: Waterfall) -> str:
    async def unavailable() -> JsValue:
        return "unavailable"

    async def answered() -> JsValue:
        try:
            o = await waterfall(w, "approval/request", rec,
                                {"request": request, "request_signal": signal}, unavailable,
                                ("P43",), agent=request["agent"])
        except Thrown:
            return "unavailable"
        return o if isinstance(o, str) and o in OUTCOMES else "unavailable"

    task = w.sched.spawn(answered())
    first = await w.sched.any_of(task, signal.on_abort)
    if first == 1:  # P43.5: the abort came first; any later answer is discarded
        w.obs(rec.callId, "approval", "abandon", None, None, ("P43",))
        return "cancelled"
    return task.value
