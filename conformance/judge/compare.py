"""Differential comparison: an implementation's trace against the oracle's, per profile.

Only what any implementation can show is compared (``kit.trace.is_portable``): the
observations of scripted participants and of the outermost probes, grouped by call (the
bodies of different calls may overlap, so only each call's own sequence is ordered), the
session events a profile speaks of, the final results and the warnings (``judge.lanes``).

Profiles decide how strictly (spec section 2, verdicts per profile; ``judge.agreement``):
what no rule of the checked profiles fixes is masked (``judge.masks``, from the catalog's
parts: under ``core``, every exact text and the ``Error: `` prefix, a non-string message's
type, ``error.info``, P92's key presence, the approval request); ``reference`` compares exact
texts (tails the spec leaves to the implementation, ``oracle.texts.LOOSE_PREFIXES``, are
compared by prefix); ``loop`` adds the loop's session events. The first divergence names its
place, both items, the rules to blame (only rules of the checked profiles) and why
(``judge.blame``). ``divergences`` lists every one, in the same lanes with the same matcher.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dsh_conformance.kit.trace import Trace

from dsh_conformance.judge import masks as masking
from dsh_conformance.judge.agreement import agree_under, matcher, warnings_agree
from dsh_conformance.judge.blame import event_divergence, observation_divergence, result_divergence, warnings_divergence
from dsh_conformance.judge.findings import Compared, Divergence
from dsh_conformance.judge.lanes import (
    compared_warnings,
    digest,
    event_lanes,
    observation_lanes,
    observations_by_call,
    result_pairs,
)
from dsh_conformance.judge.masks import Masks
from dsh_conformance.judge.rule_blame import unstarted
from dsh_conformance.spec.contract import PARTS


def judge(expected: Trace, actual: Trace, profiles: set[str]) -> tuple[Divergence | None, str]:
    """``first_divergence`` and ``digest(actual)`` at once, the lanes of ``actual`` made once
    (what the runner asks of every answer)."""
    lanes = observations_by_call(actual)
    return first_divergence(expected, actual, profiles, lanes), digest(actual, lanes)


def first_divergence(expected: Trace, actual: Trace, profiles: set[str],
                     act_obs: dict[str, list[Compared]] | None = None) -> Divergence | None:
    """The first place where ``actual`` breaks ``expected`` under ``profiles``, or None,
    located inside its items. ``act_obs``: ``observations_by_call(actual)``, when known already."""
    found = _first_divergence(expected, actual, profiles, act_obs)
    return found.located(matcher(profiles)).within(profiles) if found is not None else None


def _first_divergence(expected: Trace, actual: Trace, profiles: set[str],
                      act_obs: dict[str, list[Compared]] | None) -> Divergence | None:
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
            if e is None or a is None or not same(e.item, a.item):
                at = min(x.at for x in (e, a) if x is not None)
                if found is None or at < found[0]:
                    found = (at, unstarted(observation_divergence(name, es, acts, i, i, masks), es, expected))
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
    if warned is not None and not warnings_agree(warned.expected, warned.actual):
        return warnings_divergence(warned)
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
        return agree_under(e, a, self.loop_masks, False) if _result_call(e) in self.synthetic else bool(self.same(e, a))

    def same_result(self, call: str, e: Any, a: Any) -> bool:
        return agree_under(e, a, self.loop_masks, False) if call in self.synthetic else bool(self.same(e, a))

    def event_divergence(self, where: str, e: Any, a: Any) -> Divergence:
        if e is None or a is None or _result_call(e) not in self.synthetic:
            return event_divergence(where, e, a, self.masks, self.failed)
        part = masking.part_to_blame(e, a, self.loop_masks, lambda x, y, m: agree_under(x, y, m, False))
        if part is not None and part.name not in _LOOP_PARTS:  # key presence, say: reference's as anywhere
            return event_divergence(where, e, a, self.loop_masks)
        return Divergence(where, e, a, ["P107"], reason="session event tool/result: the result the loop "
                          "synthesized differs (its text and info are the loop's, P107, spec section 2)")

    def result_divergence(self, call: str, e: Any, a: Any) -> Divergence:
        if e is None or a is None or call not in self.synthetic:
            return result_divergence(call, e, a, self.masks)
        d = result_divergence(call, e, a, self.loop_masks)
        return d if d.rules and not set(d.rules) & _LOOP_RULES else replace(
            d, rules=["P107"], reason=f"call {call}: the result the loop synthesized differs (P107)")


_LOOP_PARTS = frozenset({"error.message", "error.message (non-string)", "content[].text (failure)", "error.info"})


_LOOP_RULES = frozenset(r for p in PARTS if p.name in _LOOP_PARTS for r in p.rules)


def _result_call(event: Any) -> str | None:  # the call a tool/result event is the result of
    source = ((event.get("data") or {}).get("message") or {}).get("source") \
        if isinstance(event, dict) and event.get("type") == "tool/result" else None
    return source.get("callId") if isinstance(source, dict) else None


RESYNC_WINDOW = 64  # how far ahead a lane looks for the next agreeing pair of items


def divergences(expected: Trace, actual: Trace, profiles: set[str]) -> list[Divergence]:
    """Every place where ``actual`` breaks ``expected`` under ``profiles`` (each region where
    a lane of ``first_divergence``'s parts, each result, the warnings); the first is its."""
    masks = masking.masks_for(profiles)
    same = matcher(profiles)
    out: list[tuple[int, Divergence]] = []
    for name, es, acts in observation_lanes(expected, actual):
        for i, j in _regions(es, acts, lambda e, a: same(e.item, a.item)):
            at = min(x.at for x in (es[i] if i < len(es) else None, acts[j] if j < len(acts) else None)
                     if x is not None)
            out.append((at, unstarted(observation_divergence(name, es, acts, i, j, masks), es, expected)))
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
    if warned is not None and not warnings_agree(warned.expected, warned.actual):
        found.append(warnings_divergence(warned))
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
