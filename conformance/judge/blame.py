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

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import jsonschema

from dsh_conformance.kit.trace import PIPELINE_STAGES

from dsh_conformance.judge import masks as masking
from dsh_conformance.judge.agreement import agree_under
from dsh_conformance.judge.findings import Compared, Divergence, Finding, Warnings
from dsh_conformance.judge.lanes import RESOLUTION_REASONS
from dsh_conformance.judge.masks import Masks
from dsh_conformance.judge.rule_blame import (
    STAGE_RULES,
    event_blame,
    handed_result,
    own_failure,
    routed_otherwise,
    shape_blame,
)
from dsh_conformance.spec import contract

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


def calls_of(items: list[Compared], stage: str, who: str) -> int:
    return sum(1 for x in items if (x.item["stage"], x.item["what"], x.item["who"]) == (stage, "call", who))


def not_called(es: list[Compared], acts: list[Compared], i: int) -> Finding | None:
    """When the expected item is a participant's invocation that the implementation never
    made while its stage did run: the rules that say the participant is called."""
    item = es[i].item
    stage, who = item["stage"], item["who"]
    kind = contract.participant(stage)
    if item["what"] != "call" or who is None or kind is None or not kind.called_by:
        return None
    if decided(es[i]):
        return None  # the oracle decided which participant this is (P26's finalizer): that decision is to blame
    if calls_of(acts, stage, who) >= calls_of(es[: i + 1], stage, who):
        return None  # it was called, elsewhere in the lane: an order question, not this one
    if (stage, "start") in contract.PROBE_POINTS:
        ran = any((x.item["stage"], x.item["what"], x.item["who"]) == (stage, "start", None) for x in acts)
    else:
        ran = any(x.item["stage"] == stage and x.item["who"] not in (None, who) for x in acts)
    if not ran and not _passed(stage, acts):
        return None  # the stage itself did not run: the routing's question
    return Finding(list(kind.called_by), f"the {stage} stage ran but {kind.meaning} {who!r} was never called")


def _passed(stage: str, acts: list[Compared]) -> bool:
    """Whether the implementation's lane reaches a stage that comes after ``stage`` on every
    path (``kit.trace.PIPELINE_STAGES``), so that ``stage`` was passed over: a finalizer not
    called before the observers are (P93 calls it on every outcome)."""
    if stage not in PIPELINE_STAGES or stage not in ALWAYS_RUN:
        return False
    later = PIPELINE_STAGES[PIPELINE_STAGES.index(stage) + 1:]
    return any(x.item["stage"] in later and x.item["who"] is None for x in acts)


# Stages that run on every outcome once the call has one (P93: finalizeContent; P98: the observers).
ALWAYS_RUN = frozenset({"finalize", "result"})


def decided(e: Compared) -> bool:
    """Whether the oracle recorded a decision of the item's own stage just before it (a
    finalize resolve: which finalizer applies, P26): then that decision explains which
    participant runs there, and the blame is the decision's."""
    return any(stage == e.item["stage"] for stage, _what, _rules in e.blame.reasons)


def called_too_often(es: list[Compared], acts: list[Compared], j: int) -> Finding | None:
    """When the implementation's item invokes a participant more often in the lane than the
    oracle ever does: the rules that say which participants run (for listeners a call's
    agent selects, P7 beside them)."""
    item = acts[j].item
    stage, who = item["stage"], item["who"]
    kind = contract.participant(stage)
    if item["what"] != "call" or who is None or kind is None or not kind.called_by:
        return None
    if calls_of(acts[: j + 1], stage, who) <= calls_of(es, stage, who):
        return None
    once = ["P98"] if stage == "result" else []  # an observer called again: a second notification (P98)
    rules = list(dict.fromkeys([*once, *(["P7"] if stage in contract.SCOPED_STAGES else []), *kind.called_by]))
    return Finding(rules, f"{kind.meaning} {who!r} was called where the oracle does not call it")


def unreported_step(es: list[Compared], i: int, a: Compared, same: Same) -> str | None:
    """When the implementation's item is the one after the expected step of the same
    participant's invocation (the two agree): the step ran, as its script says, and the
    adapter did not report it. The scenario fixes a participant's steps, so no pipeline
    rule is to blame: each step that makes an observation is reported (the catalog)."""
    item = es[i].item
    if item["who"] is None or item["what"] in ("call", "return", "throw") or i + 1 >= len(es):
        return None
    after = es[i + 1].item
    if (after["stage"], after["who"]) != (item["stage"], item["who"]) or not same(after, a.item):
        return None
    return (f"$: the {item['what']!r} step of {item['who']!r} ({item['stage']}) is not reported; "
            "every scripted step that makes an observation is (docs/observations.md)")


def label(item: dict[str, Any]) -> str:
    who = f" of {item['who']!r}" if item["who"] is not None else ""
    return f"{item['stage']} {item['what']}{who}"


# --------------------------------------------------------------- outcomes

ABORT_CODES = ("ABORTED", "ABORTED_BEFORE_DISPATCH")




def _abort_code(v: Any) -> str | None:
    r = handed_result(v)
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
        e = handed_result(expected)
        if aa is not None and isinstance(e, dict) and e.get("isError") is True:
            return ["P89", *(["P51"] if {"P46", "P47"} & set(routing) else [])]
        return ["P52"]
    e, a = handed_result(expected), handed_result(actual)
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


def misresolved(es: list[Compared], acts: list[Compared], i: int,
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
    spared = [r for x in es for stage, what, rs in x.blame.reasons if (stage, what) in resolution for r in rs]
    if not spared:
        return None
    own = {x.item["who"] for x in es if x.item["stage"] in DEFINITION_STAGES and x.item["who"] is not None}
    extra = [n for n, x in enumerate(acts)
             if x.item["stage"] in DEFINITION_STAGES and x.item["who"] is not None and x.item["who"] not in own]
    # The oracle hands on an unknown-tool failure the implementation never does: the lanes
    # may part at that routing, before the spared definition's participant is due.
    unknown = any(_unknown_tool(x.item["value"]) for x in es) and not any(_unknown_tool(x.item["value"]) for x in acts)
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


def readings(lane: str, rules: list[str], es: Sequence[Compared]) -> list[str]:
    """``rules`` and, in a getter's lane (``observations[getter <id>]``), the rules of the
    readings the oracle read it for (its reads carry them, ``kit.realm.reading``): a read too
    many or too few is that reading's (P9's message(x) of a thrown Error) as much as the
    snapshot's or entry's."""
    if not lane.removeprefix("observations[").startswith("getter "):
        return rules
    return list(dict.fromkeys([*rules, *(r for x in es for r in x.blame.rules)]))


def ended_early(rules: list[str]) -> list[str]:
    """``rules`` of a sub-call's lane that ends before the oracle's, and P125 beside them: the
    trace runs until every call of the scenario has returned and a sub-call lives inside its
    run_code's body, so the started sub-call was still running when run_code returned, which
    P125 forbids (the body returns only after every started sub-call has committed)."""
    return list(dict.fromkeys([*rules, "P125"]))


# --------------------------------------------------------------------------- divergences, blamed

EVENT_RULES = {"tool/call": ["P18"], "tool/result": ["P104", "P105"], "agent/inbox/spliced": ["P109"],
               "user/message": ["P110"], "step/start": ["P110", "P106"], "step/end": ["P105"],
               "assistant/message": ["P15"], "approval/asked": ["P43"], "approval/decided": ["P43"], "todo/write": ["P71"],
               "tool/code-dispatch-start": ["P122"], "tool/code-dispatch": ["P122", "P124"]}


_SUB_CALL_LANE = re.compile(r"^observations\[.+:code:[1-9][0-9]*\]$")


def event_divergence(where: str, e: Any, a: Any, masks: Masks, failed_turn: bool = False) -> Divergence:
    kind = (e or a or {}).get("type", "")
    side = "missing" if a is None else "one too many" if e is None else "different"
    if e is not None and a is not None:
        part = masking.part_to_blame(e, a, masks, lambda x, y, m: agree_under(x, y, m, False))
        if part is not None:  # the event differs only in a part of the catalog: that part's rules
            return Divergence(where, e, a, list(part.rules),
                              reason=f"session event {kind}: {part.meaning} differs, which {', '.join(part.rules)} fix")
    rules = [*EVENT_RULES.get(kind, []), *event_blame(kind, e, a, failed_turn)]
    return Divergence(where, e, a, rules, reason=f"session event {kind or '?'}: {side} (the rules of the event)")


def result_divergence(call: str, e: Any, a: Any, masks: Masks) -> Divergence:
    if e is None or a is None:
        return Divergence(f"results[{call}]", e, a, ["P98"],
                          reason=f"call {call}: {'no' if a is None else 'an unexpected'} final result (one result per call, P98)")
    rules = _result_rules(e, a) or _parts_to_blame(e, a, masks)
    why = ("whether the final result is deeply frozen" if rules == ["P11", "P99"]
           else "whether the final result is the object the observers received" if rules == ["P98"]
           else f"a part of the final result that only {', '.join(rules)} fix" if rules
           else "the final result itself (the rules the case cites)")
    return Divergence(f"results[{call}]", e, a, rules, reason=f"call {call}: {why} differs")


def warnings_divergence(warned: Warnings) -> Divergence:
    return Divergence("warnings", warned.expected, warned.actual, warned.rules, reason="the warnings of contained failures differ")


def observation_divergence(name: str, es: list[Compared], acts: list[Compared], i: int, j: int, masks: Masks) -> Divergence:
    """The divergence of an observation lane at ``es[i]`` / ``acts[j]``, blamed: on the
    contract when the implementation's item breaks the catalog; on the rules that say a
    participant is called when it never was; else on the rules behind the items."""
    e = es[i] if i < len(es) else None
    a = acts[j] if j < len(acts) else None
    where = f"{name}[{i}]"
    # Two items that differ only in a part of the catalog (a success's `concludesTurn: false`,
    # P92) are that part's rules' to blame, though the result schema allows only `true`.
    in_part = (e is not None and a is not None
               and masking.part_to_blame(e.item, a.item, masks, lambda x, y, m: agree_under(x, y, m, False)) is not None)
    if a is not None and not in_part:
        broken = contract_error(a.item)
        if broken is not None:
            return Divergence(where, e.item if e else None, a.item, [],
                              reason="the implementation's observation is outside the observation catalog", contract=broken)
    if e is not None and a is not None:
        skipped = unreported_step(es, i, a, lambda x, y: agree_under(x, y, masks, False))
        if skipped is not None:
            return Divergence(where, e.item, a.item, [], reason="a scripted step's observation is missing",
                              contract=skipped)
    wrong = misresolved(es, acts, i, RESOLUTION_REASONS)
    if wrong is not None:
        return Divergence(where, e.item if e else None, a.item if a else None, wrong,
                          reason="the implementation ran a definition that a restriction hides from the caller (P56)")
    # The oracle's decisions since the previous observation decided which participant runs
    # here (P6: the shared cursor sent a next() past its caller's neighbour; P61: a checkpoint
    # fired; P75: arguments failed validation): a port that decided otherwise runs another.
    cursor = list(dict.fromkeys(r for _stage, _what, rs in (e.blame.reasons if e is not None else []) for r in rs))
    shared = (f"; the oracle decided otherwise just before ({', '.join(cursor)})" if cursor else "")
    if e is not None:
        missing = not_called(es, acts, i)
        if missing is not None:
            return Divergence(where, e.item, a.item if a else None,
                              list(dict.fromkeys([*cursor, *readings(name, missing.rules, es)])),
                              reason=missing.reason + shared)
    if a is not None and not (e is not None and decided(e)):
        extra = called_too_often(es, acts, j)
        if extra is not None:
            return Divergence(where, e.item if e else None, a.item,
                              list(dict.fromkeys([*cursor, *readings(name, extra.rules, es)])),
                              reason=extra.reason + shared)
    rules = _lane_rules(name, _observation_rules(e, a, masks), es)
    if e is not None and a is None and _SUB_CALL_LANE.match(name):
        rules = ended_early(rules)  # P125: run_code returned before the sub-call committed
    if e is None and _SUB_CALL_LANE.match(name) and any(
            x.item["stage"] == "result" and x.item["who"] is None for x in acts[:j]):
        return Divergence(where, None, a.item if a else None, ["P119"],
                          reason="a sub-call id came round again: sub-call numbering restarted (P119)")
    return Divergence(where, e.item if e else None, a.item if a else None, rules, reason=_observation_reason(e, a, masks),
                      follows=_routing_consequences(e, a, rules))


def _routing_consequences(e: Compared | None, a: Compared | None, rules: list[str]) -> tuple[str, ...]:
    """The rules ``_observation_rules`` adds for a call routed otherwise than the oracle's
    routing (P2's table, the rule of a stage that ran on one side only), those that are not
    among the routing rules themselves."""
    if e is None or a is None or not e.blame.routing or e.item["stage"] == a.item["stage"]:
        return ()
    extra = routed_otherwise(e.item["stage"], a.item["stage"])
    return tuple(r for r in rules if r in extra and r not in e.blame.routing)


def _observation_reason(e: Compared | None, a: Compared | None, masks: Masks) -> str:
    if e is None:
        assert a is not None
        return f"the implementation made a {label(a.item)} the oracle does not make here: a stage or invocation too many"
    if a is None:
        return f"the implementation's lane ends: it made no {label(e.item)}, which the oracle makes next"
    if (e.item["stage"], e.item["what"], e.item["who"]) != (a.item["stage"], a.item["what"], a.item["who"]):
        how = "the call was routed otherwise" if e.blame.routing else "stage order and transitions"
        return f"{label(a.item)} where the oracle has {label(e.item)}: {how}"
    if e.blame.outcome is not None and not _same_outcome(e.item, a.item, masks):
        return f"{label(e.item)}: the outcome handed on differs"
    part = masking.part_to_blame(e.item, a.item, masks, lambda x, y, m: agree_under(x, y, m, False))
    if part is not None:
        fix = "fixes" if len(part.rules) == 1 else "fix"
        return f"{label(e.item)}: {part.name} differs, which only {', '.join(part.rules)} {fix}"
    return f"{label(e.item)}: the implementation's value is not the oracle's (the rules the observation witnesses)"


def _observation_rules(e: Compared | None, a: Compared | None, masks: Masks = masking.NOTHING_HIDDEN) -> list[str]:
    """The rules a divergence in an observation is put down to. The outcome handed to
    ``tools/result`` sums up everything before it, so a difference there is put down to the
    rules the case cites (an empty list tells the runner so)."""
    if e is None:
        # an invocation too many: which listeners a waterfall selects (P7) and which one a
        # next() reaches (P5, P6)
        extra = ["P5", "P6", "P7"] if a and a.item["who"] is not None and a.item["stage"] in contract.SCOPED_STAGES else []
        return ["P1", "P2", *extra] + (STAGE_RULES.get(a.item["stage"], []) if a else [])
    item, (rules, outcome_rules, routing, reasons) = e.item, e.blame
    # A binding list that differs where the oracle hid a name from the program (P56, P117):
    # the namespace is the calling agent's view, so the resolution is to blame.
    hidden = [r for stage, what, rs in reasons if (stage, what) == ("code-mode", "hide") for r in rs]
    if hidden and (item["stage"], item["what"]) == ("program", "start"):
        return list(dict.fromkeys(hidden))
    # A reason of the expected step's own stage (a finalize/resolve: the finalizer captured at
    # entry is not the one visible now, P26) says which participant that step has; when the
    # implementation is at another stage altogether, the routing explains it, not that.
    why = [r for stage, what, rs in reasons
           if a is None or stage != item["stage"] or stage == a.item["stage"] for r in rs]
    if a is not None and (item["stage"], item["what"], item["who"]) != (a.item["stage"], a.item["what"], a.item["who"]):
        # Not the same step at all: the walk left the path. Blame why the oracle routed the
        # call as it did: the stage that ran instead is that routing's consequence. Without a
        # routing, blame stage order and transitions, and the rule of the stage that ran.
        cancel = outcome_blame(item["value"], a.item["value"], routing)
        if routing:
            return list(dict.fromkeys([*why, *routing, *routed_otherwise(item["stage"], a.item["stage"]), *cancel]))
        return list(dict.fromkeys([*why, *rules, "P1", "P2", *STAGE_RULES.get(a.item["stage"], []), *cancel]))
    fixed = _parts_to_blame(item, a.item, masks) if a is not None else []
    if fixed:  # the two differ only in a part of the catalog: the rules that fix that part
        return own_failure(fixed, routing)
    if outcome_rules is not None and a is not None and not _same_outcome(item, a.item, masks):
        # empty: the runner blames the rules the case cites
        found = [*why, *outcome_rules, *outcome_blame(item["value"], a.item["value"], routing),
                 *shape_blame(item["value"], a.item["value"])]
        return list(dict.fromkeys(found))
    # the same step, its own detail differs: the oracle's decisions had no part (a wrong shape is P4's)
    return list(dict.fromkeys([*rules, *(shape_blame(item["value"], a.item["value"]) if a is not None else [])]))


def _lane_rules(lane: str, rules: list[str], es: Sequence[Compared] = ()) -> list[str]:
    """A getter's lane holds its reads: how many and what each gave is the snapshot's
    traversal (P13), entry reading the input once (P23), or the reading the oracle's reads
    were made for (its reads carry that reading's rules: P9's message(x) of a thrown Error).
    A program's lanes exist only where run_code is there, passes its checks and runs (P114,
    P115, P117)."""
    if lane.removeprefix("observations[").startswith("getter "):
        return list(dict.fromkeys([*readings(lane, rules, es), "P13", "P23"]))
    if lane.removesuffix("]").endswith((" program", " settled")):
        return list(dict.fromkeys([*rules, "P114", "P115", "P117"]))
    return rules


def _parts_to_blame(e: Any, a: Any, masks: Masks) -> list[str]:
    """The rules of the catalog's part (``contract.PARTS``) in which alone two items differ."""
    return masking.parts_to_blame(e, a, masks, lambda x, y, m: agree_under(x, y, m, False))


def _same_outcome(e: dict[str, Any], a: dict[str, Any], masks: Masks) -> bool:
    """Whether two outcome-carrying observations agree on the outcome (an ``observe`` of a
    result may differ only in whether the result is frozen)."""
    ev, av = e["value"], a["value"]
    if isinstance(ev, dict) and isinstance(av, dict) and "result" in ev:
        return agree_under(ev.get("result"), av.get("result"), masks, False)
    return agree_under(ev, av, masks, False)




def _result_rules(e: dict[str, Any], a: dict[str, Any]) -> list[str]:
    if e.get("frozen") != a.get("frozen"):
        return ["P11", "P99"]
    if e.get("observed") != a.get("observed"):
        return ["P98"]
    return []  # the outcome itself differs: see _observation_rules
