"""Blame on the rule concerned (issue 39): besides the stage or part a divergence shows at,
the rule that the implementation broke there. A call routed otherwise breaks P2's table and
the rule of each routed stage that ran on one side only; a failure whose routing rule states
it exactly (message and ``info``) breaks that rule when only its ``info`` differs; an outcome
of the wrong shape breaks P4 or P91; a cleared queue or a failed loop turn shows in session
events (P112, P108); and a call the oracle's failed turn never started is that failure's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from dsh_conformance.judge.findings import Compared


def handed_result(v: Any) -> Any:
    return v["result"] if isinstance(v, dict) and isinstance(v.get("result"), dict) else v


# The stages that run only on some routes of P2's table: when the implementation is at one
# of them where the oracle is elsewhere (or the other way round), the rule that says when
# that stage runs is broken beside the routing (P36: approval only after an ask; P44: guards
# only after an allow; P54: tools/execute; P58: the body, only inside it; P71: a body's own
# waterfalls; P76: post-execute only for post-bound results). finalizeContent is not one: it
# runs on every route of a call that captured one (P93).
ROUTED_STAGES = frozenset({"approval", "guards", "execute", "body", "fs-intent", "post-execute"})
# The rule that says when each stage runs at all.
STAGE_RULES = {"pre-execute": ["P30"], "approval": ["P36"], "guards": ["P44"], "execute": ["P54"],
               "body": ["P54", "P58"], "fs-intent": ["P71"], "post-execute": ["P76"], "finalize": ["P93", "P97"],
               "result": ["P98"]}


def routed_otherwise(expected_stage: str, actual_stage: str) -> list[str]:
    """What a divergence where the call "was routed otherwise" breaks besides the oracle's
    routing: P2's table of transitions, and the rule of each routed stage that ran on one side
    only."""
    stages = [s for s in (actual_stage, expected_stage) if s in ROUTED_STAGES]
    return ["P2", *(r for s in stages for r in STAGE_RULES.get(s, []))]


# Routings whose rule states the exact failure the call ends with, message and `info` (or
# its absence) both: a difference in that failure's `info` is the routing rule's as well as
# the canonical shape's (P27: a non-lossless input's failure has no info; P70: the timeout's
# ToolTimeoutError; P107: the loop's synthetic abort).
OWN_FAILURE_ROUTES = frozenset({"P27", "P28", "P29", "P35", "P53", "P56", "P63", "P68", "P70", "P72", "P73",
                                "P79", "P107"})


def own_failure(fixed: list[str], routing: list[str]) -> list[str]:
    """The rules of a part that alone explains a difference (``fixed``), with the routing
    rules that state the failure exactly when that part is a failure's ``info``."""
    if set(fixed) != {"P9", "P10"}:
        return fixed
    return list(dict.fromkeys([*fixed, *(r for r in routing if r in OWN_FAILURE_ROUTES)]))


def shape_blame(expected: Any, actual: Any) -> list[str]:
    """P4, P91: an outcome of the implementation that breaks the outcome shape the oracle's
    keeps: a success without ``value`` (or with ``error``), a failure with ``value`` or
    ``concludesTurn`` (P4); or a key the snapshot keeps unless ``undefined`` (``meta``,
    ``additionalContexts``) on one side only while the other holds ``null`` (P91)."""
    e, a = handed_result(expected), handed_result(actual)
    if not (isinstance(e, dict) and isinstance(a, dict)) or e.get("isError") != a.get("isError"):
        return []
    out = []
    if _shape_ok(e) and not _shape_ok(a):
        out.append("P4")
    if any((k in e) != (k in a) and (e.get(k, a.get(k)) is None) for k in ("meta", "additionalContexts")):
        out.append("P91")
    return out


def _shape_ok(r: dict[str, Any]) -> bool:
    if r.get("isError") is True:
        return isinstance(r.get("error"), dict) and "value" not in r and "concludesTurn" not in r
    return r.get("isError") is False and "value" in r and "error" not in r


def event_blame(kind: str, e: Any, a: Any, failed_turn: bool) -> list[str]:
    """Rules a session event's difference breaks besides the event's own: a queue cleared by
    ``cancel()`` (``outcome: canceled``, P112), and a call's events after an internal
    scheduler failure of the oracle's turn, which starts no further call and fabricates no
    result (P108)."""
    out = []
    if any(isinstance(x, dict) and isinstance(x.get("data"), dict) and x["data"].get("outcome") == "canceled"
           for x in (e, a)):
        out.append("P112")
    if failed_turn and kind in ("tool/call", "tool/result"):
        out.append("P108")
    return out


def unstarted(d: Any, es: Sequence[Compared], expected: Any) -> Any:
    """A divergence in a call's lane that the oracle's run does not have at all: where the
    oracle's loop turn failed (an internal scheduler failure, P108, such as a duplicate
    context id, P113), that failure's rules are to blame: the loop starts no further call."""
    if es:
        return d
    failed = [r for o in expected.observations if (o.stage, o.what) == ("loop", "throw") for r in o.rules]
    if not failed:
        return d
    return replace(d, rules=list(dict.fromkeys([*d.rules, *failed])),
                   reason=f"{d.reason}; the oracle's turn failed before this call started ({', '.join(failed)})")
