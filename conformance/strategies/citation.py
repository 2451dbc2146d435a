"""Rule citation: which rules a settled scenario exercises (``exercised_rules``: those its
oracle trace names and those whose situation it shows), and a drawn document with its
``rules`` set (``cited``, ``cite``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dsh_conformance.oracle import Scenario, Trace
from dsh_conformance.kit.scenario import DELEGATE, Behavior, CustomApproval, DirectRun, LoopRun
from dsh_conformance.spec.rules import rules_of

from dsh_conformance.strategies import code_mode
from dsh_conformance.strategies.settle import settle

ALL_PROFILES: frozenset[str] = frozenset({"core", "reference", "loop", "code-mode"})


@dataclass(frozen=True)
class Example:
    """A drawn scenario with its oracle trace (kept so that nothing runs twice)."""
    doc: dict[str, Any]
    scenario: Scenario
    trace: Trace


def cited(doc: dict[str, Any], profiles: frozenset[str] = ALL_PROFILES) -> Example:
    doc, scenario, trace = settle(doc)
    wanted = {r.id for r in rules_of(*profiles)} | {r.id for r in rules_of("core")}
    doc["rules"] = sort_rules(exercised_rules(scenario, trace) & wanted)
    # The document parsed already; only its rules are new (not parsed again).
    return Example(doc, scenario.model_copy(update={"rules": list(doc["rules"])}), trace)


def cite(doc: dict[str, Any], profiles: frozenset[str] = ALL_PROFILES) -> dict[str, Any]:
    """``doc`` (settled, see ``settle``) with ``rules`` set to the rules of ``profiles``
    its oracle trace exercises."""
    return cited(doc, frozenset(profiles)).doc


def sort_rules(ids: Iterable[str]) -> list[str]:
    return sorted(set(ids), key=lambda r: int(r[1:]))


# ---------------------------------------------------------------- which rules a run exercises

def invocations(scenario: Scenario, trace: Trace) -> list[tuple[Any, list[Any]]]:
    """Each scripted participant invocation of the trace (its ``call`` observation) with
    the steps its script had for that invocation."""
    scripts: dict[str, Behavior] = {}
    delegate = Behavior.model_validate(DELEGATE)
    for t in scenario.tools:
        scripts[t.ref] = t.body
        for name, b in (("render", t.output.render), ("presentationMeta", t.output.presentationMeta),
                        ("finalizeContent", t.finalizeContent), ("isConcurrencySafe", t.concurrencySafe),
                        ("presentCall", t.presentCall), ("presentResult", t.presentResult)):
            if b is not None:
                scripts[f"{t.ref}.{name}"] = b
    for l in scenario.listeners:
        scripts[l.id] = l.script or (delegate if l.event != "tools/result" else Behavior())
    for g in scenario.guards:
        scripts[g.id] = g.script
    if isinstance(scenario.approval, CustomApproval):
        scripts["approval"] = scenario.approval.script
    count: Counter[str] = Counter()
    out = []
    for o in trace.observations:
        if o.what == "call" and o.who in scripts:
            out.append((o, scripts[o.who].script_for(o.call, count[o.who])))
            count[o.who] += 1
    return out


def _decision_kind(d: Any) -> Any:
    if isinstance(d, dict) and d.get("$js") in ("object", "null-proto"):
        d = d.get("entries", {})
    return d.get("kind") if isinstance(d, dict) and "$js" not in d else None


def _has_tokens(v: Any) -> bool:
    if isinstance(v, dict):
        return "$js" in v or any(_has_tokens(x) for x in v.values()) or "__proto__" in v
    if isinstance(v, list):
        return any(_has_tokens(x) for x in v)
    return False


def exercised_rules(scenario: Scenario, trace: Trace) -> set[str]:
    """The rules a run exercises: those its observations name, plus those whose situation
    the trace shows although no single observation names them (derived here)."""
    out = set(trace.rules())
    obs = trace.observations
    kinds = {(o.stage, o.what) for o in obs}
    results = [r.result for r in trace.results]
    failures = [r for r in results if isinstance(r, dict) and r.get("isError")]
    run = scenario.run
    invoked = invocations(scenario, trace)

    def did(stage: str, pred: Any) -> bool:
        return any(o.stage == stage and pred(steps) for o, steps in invoked)

    def has_step(steps: list[Any], do: str) -> bool:
        return any(s.do == do for s in steps)

    if ("result", "start") in kinds:
        out |= {"P1", "P2", "P4"}  # stage order, transitions and outcome shape hold on every outcome
    if any(did(stage, lambda s: sum(x.do == "next" for x in s) >= 2)
           for stage in ("pre-execute", "execute", "post-execute", "fs-intent")):
        out.add("P6")
    if any(l.scope is not None or l.global_ for l in scenario.listeners) and ("pre-execute", "start") in kinds:
        out.add("P7")
    if any(o.what == "throw" and o.who is not None and o.stage != "classify" for o in obs):
        out |= {"P9", "P10"}
    if any("lossless" in str(r.get("error", {}).get("message", "")) for r in failures) \
            or ("materialize", "throw") in kinds:
        out.add("P12")
    if isinstance(run, DirectRun) and any(_has_tokens(c.arguments) for c in run.calls):
        out.add("P13")
    if any(t.presentCall is not None or t.presentResult is not None for t in scenario.tools) \
            and ("body", "call") in kinds:
        out.add("P14")
    if isinstance(run, LoopRun) and any(e.type == "tool/call" for e in trace.events):
        out |= {"P16", "P18"}
        if ("pre-execute", "start") in kinds:
            out.add("P17")
        started = {o.call for o in obs if o.stage == "entry"}
        if len(started) >= 2:
            out.add("P20")
            if any(o.stage == "classify" and o.what == "end" and o.value == "parallel" for o in obs):
                out.add("P21")
        if ("loop", "commit") in kinds:
            out.add("P103")
    pre_ends = [o for o in obs if o.stage == "pre-execute" and o.what == "end"]
    if pre_ends:
        out.add("P31")
    if any(o.stage == "route" and o.value == "denied" for o in obs):
        out.add("P33")
    if any(o.stage == "approval" and o.what == "outcome" and o.value != "allowed-once" for o in obs):
        out.add("P41")
    guard_denied = {o.call for o in obs if o.stage == "guards" and o.what == "end" and o.value != {"$js": "undefined"}}
    if guard_denied:
        out.add("P48")
        aborted_before = {o.call for o in obs if o.what == "abort" and o.value == "caller"
                          and o.stage in ("pre-execute", "approval")}
        if guard_denied & aborted_before:
            out.add("P51")
    unknown_at_entry = {o.call for o in obs if o.stage == "entry" and o.what == "start"
                        and isinstance(o.value, dict) and not o.value.get("visible")}
    if any(o.stage == "dispatch" and o.what == "resolve" and o.value is None for o in obs) or any(
            o.stage == "pre-execute" and o.what == "start" and o.call in unknown_at_entry for o in obs):
        out.add("P57")  # policy ran for a name that does not resolve
    if any(o.stage == "checkpoint" and o.value in ("after-execute", "after-post") for o in obs) or any(
            o.stage == "dispatch" and o.value == "at-return" for o in obs):
        out.add("P59")
    if did("execute", lambda s: has_step(s, "return")):
        out.add("P63")
    if did("execute", lambda s: not has_step(s, "next") and not has_step(s, "throw")):
        out.add("P66")
    resolves = Counter(o.call for o in obs if o.stage == "dispatch")
    if any(n >= 2 for n in resolves.values()):
        out.add("P69")
    if any(o.stage == "body" and o.what in ("inject", "register", "unregister", "defer", "abort", "conclude")
           for o in obs):
        out.add("P71")
    if any(o.stage == "body" and o.what == "return" for o in obs):
        out.add("P72")
    if ("presentationMeta", "call") in kinds or any(isinstance(r, dict) and "meta" in r for r in results):
        out.add("P74")
    post_starts = {o.call: o.value for o in obs if o.stage == "post-execute" and o.what == "start"}
    for o in obs:
        if o.stage != "post-execute" or o.what != "end":
            continue
        d = o.value
        kind = _decision_kind(d)
        entries = d.get("entries", d) if isinstance(d, dict) else {}
        if kind not in ("accept", "block"):
            out.add("P79")
        elif kind == "block":
            out |= {"P83", "P84"}
        else:
            if "value" in entries:
                out.add("P81")
                handed = post_starts.get(o.call)
                if "content" in entries or (isinstance(handed, dict) and handed.get("isError")):
                    out.add("P82")
            elif "content" in entries:
                out.add("P80")
            if "additionalContexts" in entries:
                out.add("P85")
        if isinstance(post_starts.get(o.call), dict) and post_starts[o.call].get("isError"):
            out.add("P87")
    aborted_calls = {o.call for o in obs if o.what == "abort" and o.value == "caller"}
    if isinstance(run, DirectRun):
        aborted_calls |= {c.callId for c in run.calls if c.aborted}
    for r in trace.results:
        res = r.result
        if r.callId in aborted_calls and isinstance(res, dict) and res.get("isError"):
            info = res.get("error", {}).get("info") or {}
            if info.get("code") not in ("ABORTED", "ABORTED_BEFORE_DISPATCH"):
                out.add("P89")
    if any(isinstance(r, dict) and ({"meta", "additionalContexts", "concludesTurn"} & set(r)) for r in results):
        out.add("P92")
    if any(o.stage == "entry" and o.what == "start" and isinstance(o.value, dict) and not o.value.get("visible")
           for o in obs) or ("loop", "synthetic") in kinds:
        out.add("P97")
    if trace.warnings:
        out.add("P101")
    if not isinstance(scenario.approval, CustomApproval) and scenario.approval is not None and any(
            o.stage == "approval" and o.what == "request" for o in obs):
        out.add("P43")  # the shipped service handled a request
    if isinstance(run, LoopRun) and any(isinstance(r, dict) and r.get("concludesTurn") for r in results):
        out.add("P106")
    if isinstance(run, DirectRun) and any(isinstance(r, dict) and r.get("additionalContexts") for r in results):
        out.add("P102")
    return out | code_mode.exercised(scenario, trace)


def observation_kinds(trace: Trace) -> set[str]:
    return {f"{o.stage}/{o.what}" for o in trace.observations}
