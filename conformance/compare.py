"""Differential comparison: an implementation's trace against the oracle's, per profile.

Only what any implementation can show is compared (``kit.trace.is_portable``): the
observations of scripted participants and of the outermost probes, grouped by call (the
bodies of different calls may overlap, so only each call's own sequence is ordered), the
session events a profile speaks of, the final results and the warnings.

Profiles decide how strictly (spec section 2, verdicts per profile): what no rule of the
checked profiles fixes is masked (``conformance.masks``, from the catalog's parts: under
``core``, every exact text and the ``Error: `` prefix, a non-string message's type,
``error.info``, P92's key presence, the approval request); ``reference`` compares exact texts
(tails the spec leaves to the implementation, ``oracle.texts.LOOSE_PREFIXES``, are compared by
prefix); ``loop`` adds the loop's session events. The first divergence names its place, both
items, the rules to blame (only rules of the checked profiles) and why: a contract error when
the implementation's item is outside the observation catalog (``conformance.contract``), the
rules of a part when the items differ in that part alone, else the rules whose requirement
the actual trace contradicts. ``divergences`` lists every one, in the same lanes with the
same matcher.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dsh_conformance.oracle import texts

from dsh_conformance.kit import jsontext
from dsh_conformance.kit.jsvalue import same_value
from dsh_conformance.kit.trace import ANY, CallResult, Event, Trace, portable

from . import blame, exact_texts, masks as masking, value_diff
from .contract import PARTS
from .masks import Masks
from .same_json import same_json

LOOP_EVENTS = frozenset({"assistant/message", "tool/call", "tool/result", "agent/inbox/spliced",
                         "step/start", "step/end", "user/message"})
APPROVAL_EVENTS = frozenset({"approval/asked", "approval/decided"})
BODY_EVENTS = frozenset({"todo/write"})  # tool-owned events a body appends (P71)
CODE_EVENTS = frozenset({"tool/code-dispatch-start", "tool/code-dispatch"})  # the run_code bridge's (P122)
DISPATCH_LOG = "tool/code-dispatch"
EVENT_RULES = {"tool/call": ["P18"], "tool/result": ["P104", "P105"], "agent/inbox/spliced": ["P109"],
               "user/message": ["P110"], "step/start": ["P110", "P106"], "step/end": ["P105"],
               "assistant/message": ["P15"], "approval/asked": ["P43"], "approval/decided": ["P43"], "todo/write": ["P71"],
               "tool/code-dispatch-start": ["P122"], "tool/code-dispatch": ["P122", "P124"]}


@dataclass(frozen=True)
class Divergence:
    """Where two traces first part: ``where`` is a readable place such as
    ``observations[c1][3]``, ``events[5]``, ``results[c1]`` or ``warnings``. Items are
    JSON objects (or the warnings list); None stands for "no item on this side"."""

    where: str
    expected: Any
    actual: Any
    rules: list[str] = field(default_factory=list)
    at: list[str | int] | None = None  # the path inside the items where they first disagree (value_diff)
    reason: str = ""  # the blame's reason, one line
    contract: str | None = None  # the actual item breaks the observation catalog: where and how

    def to_json(self) -> dict[str, Any]:
        doc = {"where": self.where, "expected": self.expected, "actual": self.actual, "rules": self.rules}
        if self.at is not None:
            doc["at"] = self.at
        if self.reason:
            doc["reason"] = self.reason
        if self.contract is not None:
            doc["contract"] = self.contract
        return doc

    def located(self, same: Callable[[Any, Any], bool]) -> Divergence:
        """This divergence with ``at`` found by the comparison that decided it."""
        return replace(self, at=value_diff.first_difference(self.expected, self.actual, same))

    def within(self, profiles: set[str]) -> Divergence:
        """This divergence blamed only on rules of the checked profiles (section 2: a verdict
        for a profile set depends only on its rules; nothing left: the case's rules), its
        reason saying what those rules are about (issue 39: words a port author can act on)."""
        kept = masking.within(self.rules, profiles)
        return replace(self, rules=kept, reason=self.reason + _what_rules_say(kept) if self.reason else self.reason)

    def describe(self) -> str:
        found = value_diff.locate(self.expected, self.actual, self.at)
        blame = (f"contract error: {self.contract}" if self.contract is not None
                 else f"rules {', '.join(self.rules) or '-'}")
        why = [f"  why:      {self.reason}"] if self.reason else []
        return "\n".join([f"first divergence at {self.where} ({blame}):", *found.lines(), *why])


def _what_rules_say(rule_ids: list[str]) -> str:
    """`` (P93: called once, on every outcome; ...)``: the titles of the first blamed rules."""
    from .rules import rules

    known = rules()
    said = [f"{r}: {known[r].title[:1].lower()}{known[r].title[1:]}" for r in rule_ids[:3] if r in known]
    return f" ({'; '.join(said)})" if said else ""


# --------------------------------------------------------------------------- agreement

_SUB_CALL_LANE = re.compile(r"^observations\[.+:code:[1-9][0-9]*\]$")


def agree(expected: Any, actual: Any, exact: bool, code_mode: bool = False, masks: Masks | None = None) -> bool:
    """Whether ``actual`` is what ``expected`` requires under ``masks`` (a profile set's,
    ``conformance.masks``; without it ``exact`` picks none or core's); Code Mode's own texts
    stay compared under code-mode (section 2); ``kit.trace.ANY`` is a value the spec leaves open."""
    if masks is None:
        masks = masking.NOTHING_HIDDEN if exact else masking.core_masks()
    return _agree(expected, actual, masks, code_mode)


def _agree(expected: Any, actual: Any, masks: Masks, code_mode: bool) -> bool:
    exact = masks.texts
    kind = type(expected)
    if kind is str:
        if type(actual) is not str:
            return False
        if expected == actual:
            return True  # what every rule below allows: the same text
        if code_mode and not exact and exact_texts.code_mode_text(expected):
            return _agree(expected, actual, masking.NOTHING_HIDDEN, code_mode)
        if exact:
            return exact_texts.same_text(expected, actual)
        # Texts core does not fix are masked by the part that holds them (masks.py); any other
        # string is data some core rule fixes (a value, arguments, a key), compared exactly.
        return jsontext.same_units(expected, actual)
    if kind is dict:
        if expected == ANY:
            return True
        if type(actual) is not dict:
            return False
        if masks.hidden:
            # Section 2: what no rule of the checked profiles fixes is not compared (the
            # catalog's parts): inside a result, an Error, and the observations that carry them.
            keep = (lambda t: exact_texts.code_mode_text(t)) if code_mode else (lambda _t: False)
            if type(expected.get("isError")) is bool:
                expected, actual = masks.result_pair(expected, actual, keep)
            elif expected.get("$js") == "error":
                expected, actual = masks.error_pair(expected, actual, keep)
            elif expected.get("type") == "tool/result" and "data" in expected:
                expected, actual = masks.event_pair(expected, actual)
            elif "stage" in expected and "what" in expected:
                expected, actual = masks.item_pair(expected, actual, keep)
        if expected.keys() != actual.keys():
            return False
        for k, e in expected.items():
            a = actual[k]
            if not _agree(e, a, masks, code_mode):
                return False
        return True
    if kind is list:
        if type(actual) is not list or len(expected) != len(actual):
            return False
        for e, a in zip(expected, actual):
            if not _agree(e, a, masks, code_mode):
                return False
        return True
    return same_value(expected, actual)


def warnings_agree(expected: list[str], actual: list[str]) -> bool:
    """P101's warnings: the text before the observer's message is the spec's; the message
    is compared as any failure message is (a refused write's wording is the engine's)."""
    if len(expected) != len(actual):
        return False
    for e, a in zip(expected, actual):
        marker = texts.OBSERVER_FAILED
        if marker in e and marker in a:
            (e_head, e_msg), (a_head, a_msg) = e.split(marker, 1), a.split(marker, 1)
            if e_head != a_head or not agree(e_msg, a_msg, True):
                return False
        elif not agree(e, a, True):
            return False
    return True


# --------------------------------------------------------------------------- views

def _event_doc(e: Event) -> dict[str, Any]:
    """``e.model_dump(mode="python", exclude_none=True)``, its values shared rather than copied
    (the comparison only reads them)."""
    doc: dict[str, Any] = {"agent": e.agent, "seq": e.seq, "type": e.type}
    if e.data is not None:
        doc["data"] = e.data
    if e.sourceEventSeqs is not None:
        doc["sourceEventSeqs"] = e.sourceEventSeqs
    if e.at is not None:
        doc["at"] = e.at
    return doc


def _result_doc(r: CallResult) -> dict[str, Any]:
    """``r.model_dump(mode="python")``, its result shared rather than copied."""
    return {"callId": r.callId, "result": r.result, "frozen": r.frozen, "observed": r.observed}


# (the observation's own rules, the outcome's when it carries one, the routing in force,
# the oracle's reasons: the decisions it took for the call since the call's previous
# portable observation, each as (stage, what, rules))
Reason = tuple[str, str, list[str]]
Blame = tuple[list[str], list[str] | None, list[str], list[Reason]]

# The oracle's own observations that record a decision an implementation makes without a
# probe to show it (a checkpoint that fired, a denial, a collapse, a synthetic pair, a
# throw the registry caught): when the next portable observation differs, the rule that
# decided it is to blame beside the symptom (issue 15: a failure is blamed on the rule
# that was broken, not only on the first stage that shows it).
REASONS = frozenset({("checkpoint", "abort"), ("dispatch", "abort"), ("approval", "deny"), ("approval", "abandon"),
                     ("pre-execute", "deny"), ("entry", "collapse"), ("loop", "synthetic"), ("guards", "throw"),
                     ("finalize", "throw"), ("materialize", "throw"), ("body", "throw"), ("code-mode", "conclude"),
                     ("code-mode", "defer"), ("code-mode", "abandon"), ("entry", "snapshot"),
                     ("execute", "defer"), ("dispatch", "outcome"), ("post-execute", "outcome"),
                     ("finalize", "resolve"), ("entry", "hide"), ("dispatch", "hide"), ("code-mode", "hide"),
                     ("pre-execute", "cursor"), ("approval", "cursor"), ("execute", "cursor"), ("post-execute", "cursor"),
                     ("fs-intent", "cursor"), ("materialize", "outcome")})
# An inherited definition that a restriction on the chain hides from the calling agent (P56):
# an implementation that resolves the name all the same takes that definition, and every
# later difference of the call follows from that, so the resolution alone is to blame.
RESOLUTION_REASONS = frozenset({("entry", "hide"), ("dispatch", "hide"), ("code-mode", "hide")})
PARTICIPANT_STAGES = ("pre-execute", "execute", "post-execute", "result", "approval", "code-dispatch-log")


# An observation as compared: the item, the blame, and its position in its trace.
Item = tuple[dict[str, Any], Blame, int]


def observations_by_call(trace: Trace) -> dict[str, list[Item]]:
    """Each call's portable observations with the rules to blame when one differs. When an
    observation carries the call's outcome and the outcome differs, the oracle's latest
    routing of that call (why the outcome is what it is) is blamed, where there is one.

    A run_code program's observations are lanes of their own (``<call> program``), and how
    its calls settled another (``<call> settled``, by the program's call number): where a
    settlement falls among the program's steps and the sub-calls' stages is JavaScript's
    microtask order, which the spec leaves open (laws check what it does fix)."""
    out: dict[str, list[Item]] = {}
    route: dict[str, list[str]] = {}
    reasons: dict[str, list[Reason]] = {}
    # Two traces a case, tens of observations each: each field read once.
    for n, o in enumerate(trace.observations):
        stage, what, who = o.stage, o.what, o.who
        # A getter's reads form a lane of their own: how many there are and what each read
        # gave is the spec's (P13, P23); how they interleave with other getters' reads and
        # with the stages is not.
        call = f"getter {who}" if stage == "getter" else (o.call or "-")
        if stage == "route":
            route[call] = list(o.rules)
            continue
        if _portable(stage, what, who):
            value = o.value
            # it carries the call's outcome: tools/result or post-execute starts, or a participant observes a result
            carries = (who is None and (stage, what) in _OUTCOME_PROBES) or (
                what == "observe" and isinstance(value, dict) and "result" in value)
            outcome = route.get(call, []) if carries else None
            why = reasons.pop(call, [])
            if stage == "program":
                call = f"{call} {'settled' if what == 'settle' else 'program'}"
            item = {"stage": stage, "what": what, "who": who, "value": value}  # the item as compared
            out.setdefault(call, []).append((item, (list(o.rules), outcome, route.get(call, []), why), n))
        elif (stage, what) in REASONS:
            reasons.setdefault(call, []).append((stage, what, list(o.rules)))
    for lane, items in out.items():
        if lane.endswith(" settled"):
            items.sort(key=lambda i: i[0]["value"].get("n", 0) if isinstance(i[0]["value"], dict) else 0)
        else:
            out[lane] = _one_classification(items)
    return out


def _one_classification(items: list[Item]) -> list[Item]:
    """A queued sub-call is classified again each time the lane looks at it (P121: "re-read
    just before each start"); how often that is before it starts is the implementation's.
    Repeats of the same classifier step at the head of a sub-call's lane count once."""
    head: list[Item] = []
    i = 0
    while i < len(items) and items[i][0]["stage"] == "classify":
        head.append(items[i])
        i += 1
    if not head:
        return items
    groups: list[list[Item]] = []  # one per invocation: its call, then its steps
    for item in head:
        if item[0]["what"] == "call" or not groups:
            groups.append([])
        groups[-1].append(item)
    if len({json.dumps([x[0] for x in g], sort_keys=True) for g in groups}) == 1:
        return groups[0] + items[i:]
    return items


# kit.trace.portable by kind of step (stage, what, who): a trace repeats a few tens of them.
_portable = functools.lru_cache(maxsize=4096)(portable)
_OUTCOME_PROBES = frozenset({("result", "start"), ("post-execute", "start")})


def events_for(trace: Trace, profiles: set[str]) -> list[dict[str, Any]]:
    types: set[str] = set()
    if "loop" in profiles:
        types |= LOOP_EVENTS
    if "reference" in profiles:
        types |= APPROVAL_EVENTS | BODY_EVENTS
    if "code-mode" in profiles:
        types |= CODE_EVENTS
    out = []
    for e in trace.events:
        if e.type not in types:
            continue
        doc = _event_doc(e)
        doc.pop("at", None)  # where an event falls among the observations: laws read it, not comparisons
        if e.type == "assistant/message" and isinstance(doc.get("data"), dict):
            # The model's message comes from the scenario; only its place in the log is the loop's.
            doc["data"] = {k: v for k, v in doc["data"].items() if k in ("turn", "step")}
        out.append(doc)
    return out


# --------------------------------------------------------------------------- first divergence

def _is_answerer(item: dict[str, Any]) -> bool:
    return item["stage"] == "approval" and item["who"] not in (None, "approval")


def _abandoned_answers(trace: Trace) -> list[str]:
    """Calls whose request signal aborted while answerers were deciding: the shipped
    service settles as cancelled and abandons them (P43.5; the oracle notes it). Where
    their own steps fall against the call's next stages is microtask scheduling, not spec."""
    return [o.call for o in trace.observations if (o.stage, o.what) == ("approval", "abandon") and o.call]


def _answerer_lane(by_call: dict[str, list[Any]], call: str) -> dict[str, list[Any]]:
    """The call's observations with its answerers' moved to a lane of their own, which
    keeps their order among themselves."""
    items = by_call.get(call, [])
    out = dict(by_call)
    out[call] = [i for i in items if not _is_answerer(i[0])]
    lane = [i for i in items if _is_answerer(i[0])]
    if lane:
        out[f"{call} answerers"] = lane
    return out


def matcher(profiles: set[str]) -> Callable[[Any, Any], bool]:
    """``agree`` at the strictness of ``profiles``. Two items that are the same JSON agree
    under every profile, and ``same_json.same_json`` tells so at C speed (``==`` alone would take
    ``True`` for ``1``); ``==`` comes first, as it is cheaper on items that differ."""
    masks, code_mode = masking.masks_for(profiles), "code-mode" in profiles
    return lambda e, a: (e == a and same_json(e, a)) or _agree(e, a, masks, code_mode)


def observation_lanes(expected: Trace, actual: Trace,
                      act_obs: dict[str, list[Item]] | None = None) -> list[tuple[str, list[Item], list[Item]]]:
    """The observation lanes both traces are compared in, named ``observations[<lane>]``:
    each call's, an abandoned approval's answerers apart, a program's steps and its
    settlements apart. ``act_obs``: ``observations_by_call(actual)``, when known already."""
    exp_obs = observations_by_call(expected)
    act_obs = observations_by_call(actual) if act_obs is None else act_obs
    for call in _abandoned_answers(expected):
        exp_obs, act_obs = _answerer_lane(exp_obs, call), _answerer_lane(act_obs, call)
    return [(f"observations[{call}]", exp_obs.get(call, []), act_obs.get(call, []))
            for call in list(exp_obs) + [c for c in act_obs if c not in exp_obs]]


def event_lanes(expected: Trace, actual: Trace, profiles: set[str]) -> list[tuple[str, list[Any], list[Any]]]:
    """The session events the profiles speak of, in the lanes they are compared in."""
    ee, ae = events_for(expected, profiles), events_for(actual, profiles)
    # P122: a sub-call's tool/code-dispatch follows its commit, after the log waterfall, so
    # where it falls against later starts and commits is microtask order: a lane of its own,
    # by sub-call.
    logs = ("events.dispatch-log", _by_sub_call([ev for ev in ee if ev["type"] == DISPATCH_LOG]),
            _by_sub_call([ev for ev in ae if ev["type"] == DISPATCH_LOG]))
    extra = [logs] if logs[1] or logs[2] else []
    if extra:
        # Without them, the other events' sequence numbers say nothing: compare them by place.
        ee = _lane_view([ev for ev in ee if ev["type"] != DISPATCH_LOG])
        ae = _lane_view([ev for ev in ae if ev["type"] != DISPATCH_LOG])
    if _pooled(expected):
        # P21: in a parallel pool a later call's tool/call *may* follow an earlier call's
        # tool/result, so the interleaving of starts and commits is free. Each lane keeps its
        # order: starts (tool/call, approval), commits (tool/result, inbox) and the rest.
        lanes = [(name, [ev for ev in _lane_view(ee) if lane(ev)], [ev for ev in _lane_view(ae) if lane(ev)])
                 for name, lane in LANES]
    else:
        lanes = [("events", ee, ae)]
    return lanes + extra


def result_pairs(expected: Trace, actual: Trace) -> list[tuple[str, Any, Any]]:
    """Each call's final result on both sides (None: no result on that side)."""
    exp_res = {r.callId: _result_doc(r) for r in expected.results}
    act_res = {r.callId: _result_doc(r) for r in actual.results}
    return [(call, exp_res.get(call), act_res.get(call)) for call in list(exp_res) + [c for c in act_res if c not in exp_res]]


def compared_warnings(expected: Trace, actual: Trace, profiles: set[str]) -> tuple[list[str], list[str], list[str]] | None:
    """The warnings the profiles compare (reference: all; code-mode: P123's), with the rules
    they are put down to; None when the profiles compare none."""
    if "reference" in profiles:
        logs = _dispatch_log_warnings(expected.warnings) != _dispatch_log_warnings(actual.warnings)
        return expected.warnings, actual.warnings, ["P123"] if logs else ["P101"]
    if "code-mode" in profiles:
        return _dispatch_log_warnings(expected.warnings), _dispatch_log_warnings(actual.warnings), ["P123"]
    return None


def judge(expected: Trace, actual: Trace, profiles: set[str]) -> tuple[Divergence | None, str]:
    """``first_divergence`` and ``digest(actual)`` at once, the lanes of ``actual`` made once
    (what the runner asks of every answer)."""
    lanes = observations_by_call(actual)
    return first_divergence(expected, actual, profiles, lanes), digest(actual, lanes)


def first_divergence(expected: Trace, actual: Trace, profiles: set[str],
                     act_obs: dict[str, list[Item]] | None = None) -> Divergence | None:
    """The first place where ``actual`` breaks ``expected`` under ``profiles``, or None,
    located inside its items. ``act_obs``: ``observations_by_call(actual)``, when known already."""
    found = _first_divergence(expected, actual, profiles, act_obs)
    return found.located(matcher(profiles)).within(profiles) if found is not None else None


def _first_divergence(expected: Trace, actual: Trace, profiles: set[str],
                      act_obs: dict[str, list[Item]] | None) -> Divergence | None:
    masks = masking.masks_for(profiles)
    same = matcher(profiles)
    # Each call's lane is compared in order; of the lanes that part, the first divergence is
    # the earliest, so that a consequence in one call (a tool a later call unregistered,
    # shown missing at the end of an earlier call's lane; a classifier that ran only because
    # an earlier call went elsewhere) is not reported before its cause. The two traces agree
    # up to their first divergence, so where each side reaches it is comparable: the
    # earlier of the two counts.
    found: tuple[int, Divergence] | None = None
    for name, es, acts in observation_lanes(expected, actual, act_obs):
        for i in range(max(len(es), len(acts))):
            e = es[i] if i < len(es) else None
            a = acts[i] if i < len(acts) else None
            if e is None or a is None or not same(e[0], a[0]):
                at = min(x[2] for x in (e, a) if x is not None)
                if found is None or at < found[0]:
                    found = (at, blame.unstarted(_observation_divergence(name, es, acts, i, i, masks), es, expected))
                break
    if found is not None:
        return found[1]
    outcomes = LoopOutcomes(expected, profiles, masks, same)
    for name, el, al in event_lanes(expected, actual, profiles):
        for i in range(max(len(el), len(al))):
            e = el[i] if i < len(el) else None
            a = al[i] if i < len(al) else None
            if e is None or a is None or not outcomes.same_event(e, a):
                return outcomes.event_divergence(f"{name}[{i}]", e, a)
    for call, e, a in result_pairs(expected, actual):
        if e is None or a is None or not outcomes.same_result(call, e, a):
            return outcomes.result_divergence(call, e, a)
    warned = compared_warnings(expected, actual, profiles)
    if warned is not None and not warnings_agree(warned[0], warned[1]):
        return _warnings_divergence(warned)
    return None


class LoopOutcomes:
    """Session events and final results as the checked profiles fix them: what the loop
    synthesized for a call (P107) with its text and info under ``loop`` (spec section 2: not
    reference's, as the registry's texts are), every other one with the profile set's masks."""

    def __init__(self, expected: Trace, profiles: set[str], masks: Masks, same: Any) -> None:
        self.masks, self.same = masks, same
        self.synthetic = frozenset(o.call for o in expected.observations if "loop" in profiles
                                   and (o.stage, o.what) == ("loop", "synthetic") and o.call is not None)
        self.loop_masks = masking.Masks(masks.hidden - _LOOP_PARTS)
        self.failed = "loop" in profiles and any((o.stage, o.what) == ("loop", "throw") for o in expected.observations)

    def same_event(self, e: Any, a: Any) -> bool:
        return _agree(e, a, self.loop_masks, False) if _result_call(e) in self.synthetic else bool(self.same(e, a))

    def same_result(self, call: str, e: Any, a: Any) -> bool:
        return _agree(e, a, self.loop_masks, False) if call in self.synthetic else bool(self.same(e, a))

    def event_divergence(self, where: str, e: Any, a: Any) -> Divergence:
        if e is None or a is None or _result_call(e) not in self.synthetic:
            return _event_divergence(where, e, a, self.masks, self.failed)
        part = masking.part_to_blame(e, a, self.loop_masks, lambda x, y, m: _agree(x, y, m, False))
        if part is not None and part.name not in _LOOP_PARTS:  # key presence, say: reference's as anywhere
            return _event_divergence(where, e, a, self.loop_masks)
        return Divergence(where, e, a, ["P107"], reason="session event tool/result: the result the loop "
                          "synthesized differs (its text and info are the loop's, P107, spec section 2)")

    def result_divergence(self, call: str, e: Any, a: Any) -> Divergence:
        if e is None or a is None or call not in self.synthetic:
            return _result_divergence(call, e, a, self.masks)
        d = _result_divergence(call, e, a, self.loop_masks)
        return d if d.rules and not set(d.rules) & _LOOP_RULES else replace(
            d, rules=["P107"], reason=f"call {call}: the result the loop synthesized differs (P107)")


_LOOP_PARTS = frozenset({"error.message", "error.message (non-string)", "content[].text (failure)", "error.info"})
_LOOP_RULES = frozenset(r for p in PARTS if p.name in _LOOP_PARTS for r in p.rules)


def _result_call(event: Any) -> str | None:  # the call a tool/result event is the result of
    source = ((event.get("data") or {}).get("message") or {}).get("source") \
        if isinstance(event, dict) and event.get("type") == "tool/result" else None
    return source.get("callId") if isinstance(source, dict) else None


def _event_divergence(where: str, e: Any, a: Any, masks: Masks, failed_turn: bool = False) -> Divergence:
    kind = (e or a or {}).get("type", "")
    side = "missing" if a is None else "one too many" if e is None else "different"
    if e is not None and a is not None:
        part = masking.part_to_blame(e, a, masks, lambda x, y, m: _agree(x, y, m, False))
        if part is not None:  # the event differs only in a part of the catalog: that part's rules
            return Divergence(where, e, a, list(part.rules),
                              reason=f"session event {kind}: {part.meaning} differs, which {', '.join(part.rules)} fix")
    rules = [*EVENT_RULES.get(kind, []), *blame.event_blame(kind, e, a, failed_turn)]
    return Divergence(where, e, a, rules, reason=f"session event {kind or '?'}: {side} (the rules of the event)")


def _result_divergence(call: str, e: Any, a: Any, masks: Masks) -> Divergence:
    if e is None or a is None:
        return Divergence(f"results[{call}]", e, a, ["P98"],
                          reason=f"call {call}: {'no' if a is None else 'an unexpected'} final result (one result per call, P98)")
    rules = _result_rules(e, a) or _parts_to_blame(e, a, masks)
    why = ("whether the final result is deeply frozen" if rules == ["P11", "P99"]
           else "whether the final result is the object the observers received" if rules == ["P98"]
           else f"a part of the final result that only {', '.join(rules)} fix" if rules
           else "the final result itself (the rules the case cites)")
    return Divergence(f"results[{call}]", e, a, rules, reason=f"call {call}: {why} differs")


def _warnings_divergence(warned: tuple[list[str], list[str], list[str]]) -> Divergence:
    return Divergence("warnings", warned[0], warned[1], warned[2], reason="the warnings of contained failures differ")


# --------------------------------------------------------------------------- blame

def _observation_divergence(name: str, es: list[Item], acts: list[Item], i: int, j: int, masks: Masks) -> Divergence:
    """The divergence of an observation lane at ``es[i]`` / ``acts[j]``, blamed: on the
    contract when the implementation's item breaks the catalog; on the rules that say a
    participant is called when it never was; else on the rules behind the items."""
    e = es[i] if i < len(es) else None
    a = acts[j] if j < len(acts) else None
    where = f"{name}[{i}]"
    # Two items that differ only in a part of the catalog (a success's `concludesTurn: false`,
    # P92) are that part's rules' to blame, though the result schema allows only `true`.
    in_part = (e is not None and a is not None
               and masking.part_to_blame(e[0], a[0], masks, lambda x, y, m: _agree(x, y, m, False)) is not None)
    if a is not None and not in_part:
        broken = blame.contract_error(a[0])
        if broken is not None:
            return Divergence(where, e[0] if e else None, a[0], [],
                              reason="the implementation's observation is outside the observation catalog", contract=broken)
    if e is not None and a is not None:
        skipped = blame.unreported_step(es, i, a, lambda x, y: _agree(x, y, masks, False))
        if skipped is not None:
            return Divergence(where, e[0], a[0], [], reason="a scripted step's observation is missing",
                              contract=skipped)
    wrong = blame.misresolved(es, acts, i, RESOLUTION_REASONS)
    if wrong is not None:
        return Divergence(where, e[0] if e else None, a[0] if a else None, wrong,
                          reason="the implementation ran a definition that a restriction hides from the caller (P56)")
    # The oracle's decisions since the previous observation decided which participant runs
    # here (P6: the shared cursor sent a next() past its caller's neighbour; P61: a checkpoint
    # fired; P75: arguments failed validation): a port that decided otherwise runs another.
    cursor = list(dict.fromkeys(r for _stage, _what, rs in (e[1][3] if e is not None else []) for r in rs))
    shared = (f"; the oracle decided otherwise just before ({', '.join(cursor)})" if cursor else "")
    if e is not None:
        missing = blame.not_called(es, acts, i)
        if missing is not None:
            return Divergence(where, e[0], a[0] if a else None,
                              list(dict.fromkeys([*cursor, *blame.readings(name, missing[0], es)])),
                              reason=missing[1] + shared)
    if a is not None and not (e is not None and blame.decided(e)):
        extra = blame.called_too_often(es, acts, j)
        if extra is not None:
            return Divergence(where, e[0] if e else None, a[0],
                              list(dict.fromkeys([*cursor, *blame.readings(name, extra[0], es)])),
                              reason=extra[1] + shared)
    rules = _lane_rules(name, _observation_rules(e, a, masks), es)
    if e is not None and a is None and _SUB_CALL_LANE.match(name):
        rules = blame.ended_early(rules)  # P125: run_code returned before the sub-call committed
    if e is None and _SUB_CALL_LANE.match(name) and any(
            x[0]["stage"] == "result" and x[0]["who"] is None for x in acts[:j]):
        return Divergence(where, None, a[0] if a else None, ["P119"],
                          reason="a sub-call id came round again: sub-call numbering restarted (P119)")
    return Divergence(where, e[0] if e else None, a[0] if a else None, rules, reason=_observation_reason(e, a, masks))


def _observation_reason(e: Item | None, a: Item | None, masks: Masks) -> str:
    if e is None:
        assert a is not None
        return f"the implementation made a {blame.label(a[0])} the oracle does not make here: a stage or invocation too many"
    if a is None:
        return f"the implementation's lane ends: it made no {blame.label(e[0])}, which the oracle makes next"
    if (e[0]["stage"], e[0]["what"], e[0]["who"]) != (a[0]["stage"], a[0]["what"], a[0]["who"]):
        how = "the call was routed otherwise" if e[1][2] else "stage order and transitions"
        return f"{blame.label(a[0])} where the oracle has {blame.label(e[0])}: {how}"
    if e[1][1] is not None and not _same_outcome(e[0], a[0], masks):
        return f"{blame.label(e[0])}: the outcome handed on differs"
    part = masking.part_to_blame(e[0], a[0], masks, lambda x, y, m: _agree(x, y, m, False))
    if part is not None:
        fix = "fixes" if len(part.rules) == 1 else "fix"
        return f"{blame.label(e[0])}: {part.name} differs, which only {', '.join(part.rules)} {fix}"
    return f"{blame.label(e[0])}: the implementation's value is not the oracle's (the rules the observation witnesses)"


def _dispatch_log_warnings(warnings: list[str]) -> list[str]:
    """P123's warnings: Code Mode's own texts, compared under the code-mode profile."""
    return [w for w in warnings if w.startswith("tools: code-dispatch-log listener failed for ")]


def _by_sub_call(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def key(ev: dict[str, Any]) -> tuple[Any, ...]:
        data = ev.get("data") if isinstance(ev.get("data"), dict) else {}
        sub = str(data.get("subCallId", ""))
        head, _, n = sub.rpartition(":code:")
        return (ev.get("agent", ""), head, int(n) if n.isdigit() else 0, sub)
    return [{k: v for k, v in ev.items() if k != "seq"} for ev in sorted(events, key=key)]


def _observation_rules(e: Item | None, a: Item | None, masks: Masks = masking.NOTHING_HIDDEN) -> list[str]:
    """The rules a divergence in an observation is put down to. The outcome handed to
    ``tools/result`` sums up everything before it, so a difference there is put down to the
    rules the case cites (an empty list tells the runner so)."""
    if e is None:
        # an invocation too many: which listeners a waterfall selects (P7) and which one a
        # next() reaches (P5, P6)
        extra = ["P5", "P6", "P7"] if a and a[0]["who"] is not None and a[0]["stage"] in PARTICIPANT_STAGES else []
        return ["P1", "P2", *extra] + (blame.STAGE_RULES.get(a[0]["stage"], []) if a else [])
    item, (rules, outcome_rules, routing, reasons) = e[0], e[1]
    # A binding list that differs where the oracle hid a name from the program (P56, P117):
    # the namespace is the calling agent's view, so the resolution is to blame.
    hidden = [r for stage, what, rs in reasons if (stage, what) == ("code-mode", "hide") for r in rs]
    if hidden and (item["stage"], item["what"]) == ("program", "start"):
        return list(dict.fromkeys(hidden))
    # A reason of the expected step's own stage (a finalize/resolve: the finalizer captured at
    # entry is not the one visible now, P26) says which participant that step has; when the
    # implementation is at another stage altogether, the routing explains it, not that.
    why = [r for stage, what, rs in reasons
           if a is None or stage != item["stage"] or stage == a[0]["stage"] for r in rs]
    if a is not None and (item["stage"], item["what"], item["who"]) != (a[0]["stage"], a[0]["what"], a[0]["who"]):
        # Not the same step at all: the walk left the path. Blame why the oracle routed the
        # call as it did: the stage that ran instead is that routing's consequence. Without a
        # routing, blame stage order and transitions, and the rule of the stage that ran.
        cancel = blame.outcome_blame(item["value"], a[0]["value"], routing)
        if routing:
            return list(dict.fromkeys([*why, *routing, *blame.routed_otherwise(item["stage"], a[0]["stage"]), *cancel]))
        return list(dict.fromkeys([*why, *rules, "P1", "P2", *blame.STAGE_RULES.get(a[0]["stage"], []), *cancel]))
    fixed = _parts_to_blame(item, a[0], masks) if a is not None else []
    if fixed:  # the two differ only in a part of the catalog: the rules that fix that part
        return blame.own_failure(fixed, routing)
    if outcome_rules is not None and a is not None and not _same_outcome(item, a[0], masks):
        # empty: the runner blames the rules the case cites
        found = [*why, *outcome_rules, *blame.outcome_blame(item["value"], a[0]["value"], routing),
                 *blame.shape_blame(item["value"], a[0]["value"])]
        return list(dict.fromkeys(found))
    # the same step, its own detail differs: the oracle's decisions had no part (a wrong shape is P4's)
    return list(dict.fromkeys([*rules, *(blame.shape_blame(item["value"], a[0]["value"]) if a is not None else [])]))


def _lane_rules(lane: str, rules: list[str], es: Sequence[Item] = ()) -> list[str]:
    """A getter's lane holds its reads: how many and what each gave is the snapshot's
    traversal (P13), entry reading the input once (P23), or the reading the oracle's reads
    were made for (its reads carry that reading's rules: P9's message(x) of a thrown Error).
    A program's lanes exist only where run_code is there, passes its checks and runs (P114,
    P115, P117)."""
    if lane.removeprefix("observations[").startswith("getter "):
        return list(dict.fromkeys([*blame.readings(lane, rules, es), "P13", "P23"]))
    if lane.removesuffix("]").endswith((" program", " settled")):
        return list(dict.fromkeys([*rules, "P114", "P115", "P117"]))
    return rules


def _parts_to_blame(e: Any, a: Any, masks: Masks) -> list[str]:
    """The rules of the catalog's part (``contract.PARTS``) in which alone two items differ."""
    return masking.parts_to_blame(e, a, masks, lambda x, y, m: _agree(x, y, m, False))


def _same_outcome(e: dict[str, Any], a: dict[str, Any], masks: Masks) -> bool:
    """Whether two outcome-carrying observations agree on the outcome (an ``observe`` of a
    result may differ only in whether the result is frozen)."""
    ev, av = e["value"], a["value"]
    if isinstance(ev, dict) and isinstance(av, dict) and "result" in ev:
        return _agree(ev.get("result"), av.get("result"), masks, False)
    return _agree(ev, av, masks, False)


LANES = [
    ("events.starts", lambda ev: ev["type"] in ("tool/call", "approval/asked", "approval/decided")),
    ("events.commits", lambda ev: ev["type"] in ("tool/result", "agent/inbox/spliced")),
    ("events.rest", lambda ev: ev["type"] not in ("tool/call", "approval/asked", "approval/decided",
                                                   "tool/result", "agent/inbox/spliced")),
]


def _pooled(trace: Trace) -> bool:
    """Whether a parallel pool formed in the oracle's run (a call classified parallel)."""
    return any(o.stage == "classify" and o.value == "parallel" for o in trace.observations)


def _lane_view(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events without their sequence numbers, a result citing its call by call id: the
    numbers depend on the interleaving that pools leave free."""
    calls = {ev["seq"]: ev["data"].get("callId") for ev in events if ev["type"] == "tool/call" and "seq" in ev}
    out = []
    for ev in events:
        doc = {k: v for k, v in ev.items() if k not in ("seq", "sourceEventSeqs")}
        if "sourceEventSeqs" in ev:
            doc["cites"] = [calls.get(n) for n in ev["sourceEventSeqs"]]
        out.append(doc)
    return out


def _result_rules(e: dict[str, Any], a: dict[str, Any]) -> list[str]:
    if e.get("frozen") != a.get("frozen"):
        return ["P11", "P99"]
    if e.get("observed") != a.get("observed"):
        return ["P98"]
    return []  # the outcome itself differs: see _observation_rules


# --------------------------------------------------------------------------- every divergence

RESYNC_WINDOW = 64  # how far ahead a lane looks for the next agreeing pair of items


def divergences(expected: Trace, actual: Trace, profiles: set[str]) -> list[Divergence]:
    """Every place where ``actual`` breaks ``expected`` under ``profiles`` (each region where a lane
    of ``first_divergence``'s parts, each result, the warnings); the first is its."""
    masks = masking.masks_for(profiles)
    same = matcher(profiles)
    out: list[tuple[int, Divergence]] = []
    for name, es, acts in observation_lanes(expected, actual):
        for i, j in _regions(es, acts, lambda e, a: same(e[0], a[0])):
            at = min(x[2] for x in (es[i] if i < len(es) else None, acts[j] if j < len(acts) else None)
                     if x is not None)
            out.append((at, blame.unstarted(_observation_divergence(name, es, acts, i, j, masks), es, expected)))
    out.sort(key=lambda x: x[0])
    found = [d for _, d in out]
    outcomes = LoopOutcomes(expected, profiles, masks, same)
    for name, el, al in event_lanes(expected, actual, profiles):
        for i, j in _regions(el, al, outcomes.same_event):
            found.append(outcomes.event_divergence(f"{name}[{i}]", el[i] if i < len(el) else None,
                                                   al[j] if j < len(al) else None))
    found += [outcomes.result_divergence(call, e, a) for call, e, a in result_pairs(expected, actual)
              if e is None or a is None or not outcomes.same_result(call, e, a)]
    warned = compared_warnings(expected, actual, profiles)
    if warned is not None and not warnings_agree(warned[0], warned[1]):
        found.append(_warnings_divergence(warned))
    return [d.located(same).within(profiles) for d in found]


def _regions(es: list[Any], acts: list[Any], same: Any) -> list[tuple[int, int]]:
    """Where two lanes part: the (expected, actual) index at which each region of items
    that do not agree begins. After a region the walk resumes at the nearest pair of
    items that agree again (fewest items skipped on both sides, within a window)."""
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(es) or j < len(acts):
        if i < len(es) and j < len(acts) and same(es[i], acts[j]):
            i, j = i + 1, j + 1
            continue
        out.append((i, j))
        resync = _resync(es, acts, i, j, same)
        if resync is None:
            break
        i, j = resync
    return out


def _resync(es: list[Any], acts: list[Any], i: int, j: int, same: Any) -> tuple[int, int] | None:
    for skipped in range(1, 2 * RESYNC_WINDOW + 1):
        for di in range(0, skipped + 1):
            ii, jj = i + di, j + skipped - di
            if ii < len(es) and jj < len(acts) and same(es[ii], acts[jj]):
                return ii, jj
    return None


def normalized(trace: Trace, by_call: dict[str, list[Item]] | None = None) -> dict[str, Any]:
    """The trace as the comparison reads it (the portable observations, lane by lane;
    every event; the results; the warnings), in a canonical form: what a digest of an
    implementation's answer is taken of. ``by_call``: ``observations_by_call(trace)``."""
    by_call = observations_by_call(trace) if by_call is None else by_call
    lanes = {call: [item for item, _blame, _n in items] for call, items in by_call.items()}
    return {"observations": lanes,
            "events": [_event_doc(e) for e in trace.events],
            "results": [_result_doc(r) for r in trace.results],
            "warnings": list(trace.warnings)}


def digest(trace: Trace, by_call: dict[str, list[Item]] | None = None) -> str:
    """``sha256:<16 hex>`` of the normalized trace (keys sorted, lone surrogates escaped)."""
    import hashlib

    text = jsontext.dumps(normalized(trace, by_call), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
