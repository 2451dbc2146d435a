"""Differential comparison: an implementation's trace against the oracle's, per profile.

Only what any implementation can show is compared (``oracle.trace.is_portable``): the
observations of scripted participants and of the outermost probes, grouped by call (the
bodies of different calls may overlap, so only each call's own sequence is ordered), the
session events a profile speaks of, the final results and the warnings.

Profiles decide how strictly: ``core`` compares structure and outcomes with every message
masked; ``reference`` compares exact texts (tails the spec leaves to the implementation,
``oracle.texts.LOOSE_PREFIXES``, are compared by prefix); ``loop`` adds the loop's session
events. The first divergence names its place, both items, and the rules behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oracle import texts
from oracle.jsvalue import same_value
from oracle.trace import ANY, Observation, Trace, is_portable

MASK = "<message>"
LOOP_EVENTS = frozenset({"assistant/message", "tool/call", "tool/result", "agent/inbox/spliced",
                         "step/start", "step/end", "user/message"})
APPROVAL_EVENTS = frozenset({"approval/asked", "approval/decided"})
EVENT_RULES = {"tool/call": ["P18"], "tool/result": ["P104", "P105"], "agent/inbox/spliced": ["P109"],
               "user/message": ["P110"], "step/start": ["P110"], "step/end": ["P105"],
               "assistant/message": ["P15"], "approval/asked": ["P43"], "approval/decided": ["P43"]}
FIXED_VIOLATIONS = ("value is not lossless JSON", "value snapshot failed: ", "output.render ",
                    "output.presentationMeta ")


@dataclass(frozen=True)
class Divergence:
    """Where two traces first part: ``where`` is a readable place such as
    ``observations[c1][3]``, ``events[5]``, ``results[c1]`` or ``warnings``. Items are
    JSON objects (or the warnings list); None stands for "no item on this side"."""

    where: str
    expected: Any
    actual: Any
    rules: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "expected": self.expected, "actual": self.actual, "rules": self.rules}

    def describe(self) -> str:
        return (f"first divergence at {self.where} (rules {', '.join(self.rules) or '-'}):\n"
                f"  expected: {_short(self.expected)}\n  actual:   {_short(self.actual)}")


def _short(v: Any, limit: int = 400) -> str:
    import json

    text = "(nothing)" if v is None else json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "..."


# --------------------------------------------------------------------------- agreement

def _loose(s: str) -> str | None:
    """The fixed prefix of a string whose tail is implementation-defined, else None."""
    for prefix in texts.LOOSE_PREFIXES:
        if s.startswith(prefix):
            return prefix
    marker = texts.LOOSE_OUTPUT_SCHEMA
    if marker in s:
        head, tail = s.split(marker, 1)
        if not tail.startswith(FIXED_VIOLATIONS):
            return head + marker  # schema violation wording (section 1.3)
    return None


def agree(expected: Any, actual: Any, exact: bool) -> bool:
    """Whether ``actual`` is what ``expected`` requires. ``exact`` (reference) compares
    texts; otherwise (core) every failure message and ``Error: ...`` text is masked. Where
    the oracle's trace holds ``oracle.trace.ANY`` the spec leaves the value open."""
    if expected == ANY:
        return True
    if isinstance(expected, str) and isinstance(actual, str):
        if exact:
            e, a = expected, actual
            if e.startswith("Error: ") and a.startswith("Error: "):
                e, a = e[7:], a[7:]  # failure content repeats the message (E(m), section 3.1)
            if e in texts.IMPLEMENTATION_DEFINED:
                return True  # P63, P84: the spec leaves this message to the implementation
            if e.startswith(texts.WRITE_REFUSALS) and a.startswith(texts.WRITE_REFUSALS):
                return True  # a refused write: the TypeError's wording is the engine's (section 1)
            prefix = _loose(e)
            return a.startswith(prefix) if prefix is not None else e == a
        return _mask_text(expected) == _mask_text(actual)
    if isinstance(expected, dict) and isinstance(actual, dict):
        if expected.keys() != actual.keys():
            return False
        for k in expected:
            e, a = expected[k], actual[k]
            if not exact and k == "message" and isinstance(e, str) and isinstance(a, str):
                continue
            if not agree(e, a, exact):
                return False
        return True
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(agree(e, a, exact) for e, a in zip(expected, actual))
    return same_value(expected, actual)


def _mask_text(s: str) -> str:
    return "Error: " + MASK if s.startswith("Error: ") else s


# --------------------------------------------------------------------------- views

def _obs_item(o: Observation) -> dict[str, Any]:
    return {"stage": o.stage, "what": o.what, "who": o.who, "value": o.value}


def observations_by_call(trace: Trace) -> dict[str, list[tuple[dict[str, Any], list[str]]]]:
    out: dict[str, list[tuple[dict[str, Any], list[str]]]] = {}
    for o in trace.observations:
        if is_portable(o):
            out.setdefault(o.call or "-", []).append((_obs_item(o), o.rules))
    return out


def events_for(trace: Trace, profiles: set[str]) -> list[dict[str, Any]]:
    types: set[str] = set()
    if "loop" in profiles:
        types |= LOOP_EVENTS
    if "reference" in profiles:
        types |= APPROVAL_EVENTS
    out = []
    for e in trace.events:
        if e.type not in types:
            continue
        doc = e.model_dump(mode="json", exclude_none=True)
        if e.type == "assistant/message" and isinstance(doc.get("data"), dict):
            # The model's message comes from the scenario; only its place in the log is the loop's.
            doc["data"] = {k: v for k, v in doc["data"].items() if k in ("turn", "step")}
        out.append(doc)
    return out


# --------------------------------------------------------------------------- first divergence

def first_divergence(expected: Trace, actual: Trace, profiles: set[str]) -> Divergence | None:
    """The first place where ``actual`` breaks ``expected`` under ``profiles``, or None."""
    exact = "reference" in profiles
    exp_obs, act_obs = observations_by_call(expected), observations_by_call(actual)
    for call in list(exp_obs) + [c for c in act_obs if c not in exp_obs]:
        es, acts = exp_obs.get(call, []), act_obs.get(call, [])
        for i in range(max(len(es), len(acts))):
            e = es[i] if i < len(es) else None
            a = acts[i] if i < len(acts) else None
            if e is None or a is None or not agree(e[0], a[0], exact):
                return Divergence(f"observations[{call}][{i}]", e[0] if e else None,
                                  a[0] if a else None, _observation_rules(e, a))
    ee, ae = events_for(expected, profiles), events_for(actual, profiles)
    for i in range(max(len(ee), len(ae))):
        e = ee[i] if i < len(ee) else None
        a = ae[i] if i < len(ae) else None
        if e is None or a is None or not agree(e, a, exact):
            kind = (e or a or {}).get("type", "")
            return Divergence(f"events[{i}]", e, a, EVENT_RULES.get(kind, []))
    exp_res = {r.callId: r.model_dump(mode="json") for r in expected.results}
    act_res = {r.callId: r.model_dump(mode="json") for r in actual.results}
    for call in list(exp_res) + [c for c in act_res if c not in exp_res]:
        e, a = exp_res.get(call), act_res.get(call)
        if e is None or a is None or not agree(e, a, exact):
            rules = ["P98"] if e is None or a is None else _result_rules(e, a)
            return Divergence(f"results[{call}]", e, a, rules)
    if exact and not agree(expected.warnings, actual.warnings, True):
        return Divergence("warnings", expected.warnings, actual.warnings, ["P101"])
    return None


def _observation_rules(e: tuple[dict[str, Any], list[str]] | None, a: Any) -> list[str]:
    """The rules a divergence in an observation is put down to. The outcome handed to
    ``tools/result`` sums up everything before it, so a difference there is put down to the
    rules the case cites (an empty list tells the runner so)."""
    if e is None:
        return ["P1", "P2"] + (STAGE_RULES.get(a[0]["stage"], []) if a else [])
    item, rules = e
    if a is not None and (item["stage"], item["what"], item["who"]) != (a[0]["stage"], a[0]["what"], a[0]["who"]):
        # Not the same step at all: the walk itself left the path (stage order, transitions),
        # and the stage that ran instead ran when it must not.
        return list(dict.fromkeys([*rules, "P1", "P2", *STAGE_RULES.get(a[0]["stage"], [])]))
    if item["who"] is None and item["stage"] == "result":
        return []
    return list(rules)


# The rule that says when each stage runs at all.
STAGE_RULES = {"pre-execute": ["P30"], "approval": ["P36"], "guards": ["P44"], "execute": ["P54"],
               "body": ["P54", "P58"], "post-execute": ["P76"], "finalize": ["P93"], "result": ["P98"]}


def _result_rules(e: dict[str, Any], a: dict[str, Any]) -> list[str]:
    if e.get("frozen") != a.get("frozen"):
        return ["P11", "P99"]
    if e.get("observed") != a.get("observed"):
        return ["P98"]
    return []  # the outcome itself differs: see _observation_rules
