"""Blame: what a divergence in an observation lane is put down to, where the trace shows it.

``conformance.compare`` finds where two traces part; the helpers here say what broke
there, from the observation catalog (``conformance.contract``) and the two lanes:

- an implementation's observation outside the catalog is a **contract error** (the IUT
  sent data the contract does not allow), as is a scripted step's observation left out
  while the participant's next one is there (the scenario fixes each participant's steps);
- a participant the oracle calls and the implementation never did, while its stage ran,
  breaks the rules that say it is called (``Participant.called_by``: P5 for a waterfall
  listener, P100 for an observer, ...); one called more often than the oracle ever calls
  it, the rules that say which participants run (P7 beside them where a call's agent
  selects them).

Where the oracle recorded a decision of the step's own stage (which finalizer applies,
P26), that decision is to blame instead, as ``compare`` says. An outcome that differs by its
kind (an abort on one side only, another ``info``) points at the rules of that kind
(``outcome_blame``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from typing import Any

import jsonschema

from dsh_conformance.kit.trace import PIPELINE_STAGES

from . import contract

# An observation as compared (``compare.Item``): the item, its blame, its position.
Item = tuple[dict[str, Any], Any, int]
Same = Callable[[Any, Any], bool]


def contract_error(item: dict[str, Any]) -> str | None:
    """Where and how a portable observation (as compared: stage, what, who, value) breaks
    the observation catalog (``conformance.contract``); None when the catalog allows it."""
    stage, what, who = item["stage"], item["what"], item["who"]
    if contract.value_schema(stage, what, who) is None:
        kind = "probe (who null)" if who is None else "participant"
        return f"$.what: the catalog has no {stage!r} {what!r} observation of a {kind}"
    error = jsonschema.exceptions.best_match(_value_validator(stage, what, who is None).iter_errors(item["value"]))
    if error is None:
        return None
    path = "$.value" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{path}: {error.message}"


@cache
def _value_validator(stage: str, what: str, probe: bool) -> jsonschema.protocols.Validator:
    schema = contract.value_schema(stage, what, None if probe else "participant")
    assert schema is not None
    return jsonschema.Draft202012Validator({**schema, "$defs": _value_defs()})


@cache
def _value_defs() -> dict[str, Any]:
    return contract.value_defs()


def calls_of(items: list[Item], stage: str, who: str) -> int:
    return sum(1 for x in items if (x[0]["stage"], x[0]["what"], x[0]["who"]) == (stage, "call", who))


def not_called(es: list[Item], acts: list[Item], i: int) -> tuple[list[str], str] | None:
    """When the expected item is a participant's invocation that the implementation never
    made while its stage did run: the rules that say the participant is called."""
    item = es[i][0]
    stage, who = item["stage"], item["who"]
    kind = contract.participant(stage)
    if item["what"] != "call" or who is None or kind is None or not kind.called_by:
        return None
    if decided(es[i]):
        return None  # the oracle decided which participant this is (P26's finalizer): that decision is to blame
    if calls_of(acts, stage, who) >= calls_of(es[: i + 1], stage, who):
        return None  # it was called, elsewhere in the lane: an order question, not this one
    if (stage, "start") in contract.PROBE_POINTS:
        ran = any((x[0]["stage"], x[0]["what"], x[0]["who"]) == (stage, "start", None) for x in acts)
    else:
        ran = any(x[0]["stage"] == stage and x[0]["who"] not in (None, who) for x in acts)
    if not ran and not _passed(stage, acts):
        return None  # the stage itself did not run: the routing's question
    return list(kind.called_by), f"the {stage} stage ran but {kind.meaning} {who!r} was never called"


def _passed(stage: str, acts: list[Item]) -> bool:
    """Whether the implementation's lane reaches a stage that comes after ``stage`` on every
    path (``kit.trace.PIPELINE_STAGES``), so that ``stage`` was passed over: a finalizer not
    called before the observers are (P93 calls it on every outcome)."""
    if stage not in PIPELINE_STAGES or stage not in ALWAYS_RUN:
        return False
    later = PIPELINE_STAGES[PIPELINE_STAGES.index(stage) + 1:]
    return any(x[0]["stage"] in later and x[0]["who"] is None for x in acts)


# Stages that run on every outcome once the call has one (P93: finalizeContent; P98: the observers).
ALWAYS_RUN = frozenset({"finalize", "result"})


def decided(e: Item) -> bool:
    """Whether the oracle recorded a decision of the item's own stage just before it (a
    finalize resolve: which finalizer applies, P26): then that decision explains which
    participant runs there, and the blame is the decision's."""
    return any(stage == e[0]["stage"] for stage, _what, _rules in e[1][3])


def called_too_often(es: list[Item], acts: list[Item], j: int) -> tuple[list[str], str] | None:
    """When the implementation's item invokes a participant more often in the lane than the
    oracle ever does: the rules that say which participants run (for listeners a call's
    agent selects, P7 beside them)."""
    item = acts[j][0]
    stage, who = item["stage"], item["who"]
    kind = contract.participant(stage)
    if item["what"] != "call" or who is None or kind is None or not kind.called_by:
        return None
    if calls_of(acts[: j + 1], stage, who) <= calls_of(es, stage, who):
        return None
    once = ["P98"] if stage == "result" else []  # an observer called again: a second notification (P98)
    rules = list(dict.fromkeys([*once, *(["P7"] if stage in contract.SCOPED_STAGES else []), *kind.called_by]))
    return rules, f"{kind.meaning} {who!r} was called where the oracle does not call it"


def unreported_step(es: list[Item], i: int, a: Item, same: Same) -> str | None:
    """When the implementation's item is the one after the expected step of the same
    participant's invocation (the two agree): the step ran, as its script says, and the
    adapter did not report it. The scenario fixes a participant's steps, so no pipeline
    rule is to blame: each step that makes an observation is reported (the catalog)."""
    item = es[i][0]
    if item["who"] is None or item["what"] in ("call", "return", "throw") or i + 1 >= len(es):
        return None
    after = es[i + 1][0]
    if (after["stage"], after["who"]) != (item["stage"], item["who"]) or not same(after, a[0]):
        return None
    return (f"$: the {item['what']!r} step of {item['who']!r} ({item['stage']}) is not reported; "
            "every scripted step that makes an observation is (docs/observations.md)")


def label(item: dict[str, Any]) -> str:
    who = f" of {item['who']!r}" if item["who"] is not None else ""
    return f"{item['stage']} {item['what']}{who}"


# --------------------------------------------------------------- outcomes

ABORT_CODES = ("ABORTED", "ABORTED_BEFORE_DISPATCH")


def _handed_result(v: Any) -> Any:
    return v["result"] if isinstance(v, dict) and isinstance(v.get("result"), dict) else v


def _abort_code(v: Any) -> str | None:
    r = _handed_result(v)
    if isinstance(r, dict) and r.get("isError") is True and isinstance(r.get("error"), dict):
        info = r["error"].get("info")
        if isinstance(info, dict) and info.get("code") in ABORT_CODES:
            return str(info["code"])
    return None


def outcome_blame(expected: Any, actual: Any, routing: list[str]) -> list[str]:
    """Rules an outcome difference points at by its kind. An abort result on one side only:
    the checkpoints read the caller's signal (P52), and where the oracle kept a failure,
    cancellation never overrides it (P89; a guard denial wins over the abort, P51). Two
    failures that differ only in ``error.info``: a thrown value's info (P9, P10)."""
    if DECISION_ROUTES & set(routing):
        return []  # the oracle's verdict is a decision check's: that check is to blame
    ea, aa = _abort_code(expected), _abort_code(actual)
    if ea is not None and aa is not None and ea != aa:
        return ["P59"]  # both aborts: whether the body was invoked selects abortA or abortBD (P59)
    if (ea is None) != (aa is None):
        e = _handed_result(expected)
        if aa is not None and isinstance(e, dict) and e.get("isError") is True:
            return ["P89", *(["P51"] if {"P46", "P47"} & set(routing) else [])]
        return ["P52"]
    e, a = _handed_result(expected), _handed_result(actual)
    if (isinstance(e, dict) and isinstance(a, dict) and e.get("isError") is True and a.get("isError") is True
            and isinstance(e.get("error"), dict) and isinstance(a.get("error"), dict)
            and e["error"].get("info") != a["error"].get("info")):
        return ["P9", "P10"]
    if (isinstance(e, dict) and isinstance(a, dict) and e.get("isError") is True and a.get("isError") is True
            and isinstance(e.get("error"), dict) and isinstance(a.get("error"), dict)
            and e["error"].get("message") != a["error"].get("message") and THROW_ROUTES & set(routing)):
        return ["P9"]  # the failure of a thrown value: its message (P9)
    return []


# Routings decided by checking a decision: a difference there is that check's.
DECISION_ROUTES = frozenset({"P31", "P35", "P78", "P79"})
# Routings of a call whose failure is the canonical failure of a thrown value.
THROW_ROUTES = frozenset({"P8", "P34", "P49", "P64", "P65", "P86", "P95"})


# The stages whose participants are a tool definition's own (its body, its finalizer, its
# output projections, its classifier): who ran there says which definition a call resolved to.
DEFINITION_STAGES = frozenset({"body", "finalize", "classify", "render", "presentationMeta", "presentCall",
                               "presentResult"})


def misresolved(es: list[Item], acts: list[Item], i: int,
                resolution: frozenset[tuple[str, str]]) -> list[str] | None:
    """When the oracle's lane records a definition that a restriction hides from the caller
    (one of the ``resolution`` reasons: P56 hides every inherited definition of a name it
    filters) and the implementation's lane runs a participant of a definition that the
    oracle's lane never runs, while the lanes part where that participant runs or later:
    the implementation resolved the hidden definition (upstream's bug before 43f3324a7b
    spared an ancestor scope's), and every later difference of the call (a wrapper's result,
    a post-execute decision, which finalizer applies) follows from that, so the resolution's
    rules are to blame. An implementation whose lane parts from the oracle's before any such
    participant (an earlier denial, say) is judged where it parts, unless the oracle's lane
    hands on the unknown-tool failure there and the implementation's never does."""
    spared = [r for x in es for stage, what, rs in x[1][3] if (stage, what) in resolution for r in rs]
    if not spared:
        return None
    own = {x[0]["who"] for x in es if x[0]["stage"] in DEFINITION_STAGES and x[0]["who"] is not None}
    extra = [n for n, x in enumerate(acts)
             if x[0]["stage"] in DEFINITION_STAGES and x[0]["who"] is not None and x[0]["who"] not in own]
    # The oracle hands on an unknown-tool failure the implementation never does: the lanes
    # may part at that routing, before the spared definition's participant is due.
    unknown = any(_unknown_tool(x[0]["value"]) for x in es) and not any(_unknown_tool(x[0]["value"]) for x in acts)
    if not extra or (i < extra[0] and not unknown):
        return None
    return list(dict.fromkeys(spared))


def _unknown_tool(v: Any) -> bool:
    """Whether ``v`` (an observation's value) holds a failure whose info is P56's unknown tool."""
    if isinstance(v, dict):
        info = v.get("info")
        if isinstance(info, dict) and info.get("code") == "UNKNOWN_TOOL":
            return True
        return any(_unknown_tool(x) for x in v.values())
    if isinstance(v, list):
        return any(_unknown_tool(x) for x in v)
    return False


def readings(lane: str, rules: list[str], es: Sequence[Item]) -> list[str]:
    """``rules`` and, in a getter's lane (``observations[getter <id>]``), the rules of the
    readings the oracle read it for (its reads carry them, ``kit.realm.reading``): a read too
    many or too few is that reading's (P9's message(x) of a thrown Error) as much as the
    snapshot's or entry's."""
    if not lane.removeprefix("observations[").startswith("getter "):
        return rules
    return list(dict.fromkeys([*rules, *(r for x in es for r in x[1][0])]))


def ended_early(rules: list[str]) -> list[str]:
    """``rules`` of a sub-call's lane that ends before the oracle's, and P125 beside them: the
    trace runs until every call of the scenario has returned and a sub-call lives inside its
    run_code's body, so the started sub-call was still running when run_code returned, which
    P125 forbids (the body returns only after every started sub-call has committed)."""
    return list(dict.fromkeys([*rules, "P125"]))


# ---------------------------------------------------------------------------- issue 39

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
    e, a = _handed_result(expected), _handed_result(actual)
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


def unstarted(d: Any, es: Sequence[Item], expected: Any) -> Any:
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
