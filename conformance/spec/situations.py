"""Which profiles a scenario's situation needs, whatever rules it cites (spec section 2).

"A situation a test sets up through another profile's rule makes the test need that
profile": a case that cites only core rules but aborts its caller (the cancellation
checkpoints are `reference`'s, P29 and on), installs the shipped timeout policy (P70),
replaces the record's signal (P60), defers a context (P67), or changes the guard table
during a pass (P45) cannot be passed by every implementation that satisfies `core`. The
table below names each such situation, the rules that fix it and their profile; the
runner scores a case only for an implementation with the profiles of its rules and of
its situations, the corpus test holds every case to cite one rule of each situation it
uses, and the generator does not draw a situation outside the run's profiles.

The scenario is read as its JSON document (a case file, or a generated draw before it is
parsed), so that this module stands below the oracle's models and the strategies alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dsh_conformance.spec.rules import rules


@dataclass(frozen=True)
class Situation:
    """A way a scenario sets something up that only some rules fix."""
    name: str
    rules: tuple[str, ...]  # the rules that fix what it sets up (a case using it cites one)
    what: str
    # Outside the spec's scope (section 1.3): no profile fixes what it does, so no generated
    # scenario sets it up and no verdict depends on it.
    out_of_scope: bool = False

    @property
    def profile(self) -> str:
        return rules()[self.rules[0]].profile


_CANCEL = ("P29", "P42", "P51", "P52", "P53", "P61", "P68", "P88", "P89")
SITUATIONS: dict[str, Situation] = {s.name: s for s in (
    Situation("loop-run", ("P15", "P16", "P17", "P18", "P19", "P20", "P21", "P103", "P104", "P105", "P106", "P107",
                           "P108", "P109", "P110", "P111", "P112", "P113"), "an agent-loop run"),
    Situation("code-mode", ("P28", "P114", "P115", "P116", "P117", "P118", "P119", "P120", "P121", "P122", "P123",
                            "P124", "P125", "P126", "P127", "P128"), "Code Mode (run_code, programs, a non-native mode)"),
    Situation("caller-abort", _CANCEL + ("P107", "P112", "P116", "P125"),
              "a caller aborted at entry or during the call (cancellation checkpoints)"),
    Situation("timeout-policy", ("P70",), "the shipped timeout policy"),
    Situation("shipped-approval", ("P43", "P38", "P42"), "the shipped approval service"),
    # P99 (core) says a write to the frozen record's signal fails; what a replaced signal is
    # and where it is seen is P60's.
    Situation("signal-replacement", ("P60", "P52", "P99"), "a participant replacing the record's signal"),
    # What deferContext does is P67's: a test that defers contexts needs reference (P85, spec
    # revision 3), so P85 (core), which only places deferred contexts first, does not cite it.
    Situation("deferred-context", ("P67", "P104", "P105", "P106", "P108", "P109", "P110", "P111", "P112", "P113",
                                   "P126"), "deferContext on the record"),
    # P4 (core) says a failure never carries concludesTurn; a success's mark is P67's.
    Situation("turn-conclusion", ("P67", "P4", "P106", "P127"), "concludeTurn on the record"),
    Situation("guard-table-change", ("P45",), "a guard registered or unregistered while guards may run"),
    # Registration is out of scope (section 1.3, revision 3): what registering a name that is
    # registered already does (rc.8 throws its own error) no rule says, so it is never drawn.
    Situation("tool-reregistration", ("P56", "P114"), "a tool registered again while it is registered",
              out_of_scope=True),
    Situation("scoped-listener", ("P7",), "a listener scoped to an agent, or global"),
    Situation("scoped-guard", ("P45",), "a guard in an agent's scope layer"),
    Situation("scoped-tool", ("P56", "P114"), "a per-agent tool variant or an agent's tool restriction"),
    Situation("define-tool", ("P75",), "a defineTool tool (argument validation)"),
    Situation("input-getters", ("P23", "P13"), "accessors on the call input or its arguments"),
    # P5 (core) says what a listener's first next() runs; what a further next() reaches (the
    # one consuming cursor every listener shares) only P6 says.
    Situation("repeated-next", ("P6",), "a listener that calls next() more than once"),
    # P46 (core) says any value but undefined denies; the order guards are called in, and that
    # the pass stops at the first that does not abstain, only P45 says.
    Situation("several-guards", ("P45",), "more than one guard a call's pass may call"),
    # P83 (core) blocks with the feedback as content; a feedback that is not an array (outside
    # the caller contract, section 1.4) or holds a null or undefined block makes the stage
    # throw only by P84.
    Situation("feedback-throws", ("P84",), "a block whose feedback is not an array or holds a null or undefined block"),
)}


# Situations that need an optional feature the handshake declares (``features``), by name.
OPTIONAL_FEATURES = {"timeout-policy": "timeout-policy", "shipped-approval": "shipped-approval"}


def _steps(v: Any) -> Iterator[dict[str, Any]]:
    """Every scripted step in a part of a scenario document."""
    if isinstance(v, list):
        for x in v:
            yield from _steps(x)
    elif isinstance(v, dict):
        if isinstance(v.get("do"), str):
            yield v
        for x in v.values():
            yield from _steps(x)


def has_getter(v: Any) -> bool:
    """Whether a value in wire form holds an accessor token (``{"$js": "getter"}``)."""
    if isinstance(v, dict):
        return v.get("$js") == "getter" or any(has_getter(x) for x in v.values())
    if isinstance(v, list):
        return any(has_getter(x) for x in v)
    return False


def _calls(doc: dict[str, Any]) -> list[dict[str, Any]]:
    run = doc.get("run") or {}
    return list(run.get("calls") or []) if run.get("kind", "direct") == "direct" else list(run.get("blocks") or [])


def _uses_code_mode(doc: dict[str, Any]) -> bool:
    if doc.get("mode", "native") != "native" or doc.get("programs"):
        return True
    if any(a.get("mode", "native") not in ("native", None) for a in doc.get("agents") or []):
        return True
    return any(c.get("name") == "run_code" for c in _calls(doc))


def _reregisters(ref: str, tools: list[dict[str, Any]], slot: dict[str, tuple[Any, Any]],
                 held: set[tuple[Any, Any]], steps: list[dict[str, Any]]) -> bool:
    """Whether registering ``ref`` may meet its name registered already: the very tool
    starts registered, ``run_code`` (reserved), or another tool holds its (scope, name) and no
    step unregisters one of that slot."""
    scope_name = slot[ref]
    if scope_name[1] == "run_code" or any((t.get("id") or t.get("name")) == ref and t.get("registered", True) is not False
                                          for t in tools):
        return True
    freed = any(x["do"] == "unregister" and slot.get(x.get("ref")) == scope_name for x in steps)
    # a slot that two register steps may fill (section 1.3: a name at most once per layer)
    twice = sum(1 for x in steps if x["do"] == "register" and slot.get(x.get("ref")) == scope_name) > 1
    return (scope_name in held or twice) and not freed


def step_lists(v: Any) -> Iterator[list[dict[str, Any]]]:
    """Every list of scripted steps (a script) in a part of a scenario document."""
    if isinstance(v, list):
        if v and all(isinstance(s, dict) and isinstance(s.get("do"), str) for s in v):
            yield v
        for x in v:
            yield from step_lists(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from step_lists(x)


def repeats_next(script: list[dict[str, Any]]) -> bool:
    """Whether a script calls ``next()`` more than once (P6's situation)."""
    return sum(1 for s in script if s.get("do") == "next") > 1


def throwing_feedback(decision: Any) -> bool:
    """Whether a returned value is a block decision whose feedback makes P84 throw."""
    if isinstance(decision, dict) and decision.get("$js") in ("object", "null-proto"):
        decision = decision.get("entries")
    if not isinstance(decision, dict) or decision.get("kind") != "block" or "feedback" not in decision:
        return False
    fb = decision["feedback"]
    if not isinstance(fb, list):
        return True
    return any(b is None or (isinstance(b, dict) and b.get("$js") in ("undefined", "hole")) for b in fb)


def situations(doc: dict[str, Any]) -> list[Situation]:
    """The situations ``doc`` sets up, in the table's order."""
    found: set[str] = set()
    participants = [*(doc.get("tools") or []), *(doc.get("listeners") or []), *(doc.get("guards") or []),
                    doc.get("approval") or {}, *(doc.get("getters") or [])]
    steps = list(_steps(participants))
    dos = {s["do"] for s in steps}
    guard_ids = {g.get("id") for g in doc.get("guards") or []}
    # tools registered from the start, by ref, and the (scope, name) they hold
    tools = doc.get("tools") or []
    held = {(t.get("scope"), t.get("name")) for t in tools if t.get("registered", True) is not False}
    slot = {t.get("id") or t.get("name"): (t.get("scope"), t.get("name")) for t in tools}
    run = doc.get("run") or {}
    if run.get("kind") == "loop":
        found.add("loop-run")
    if _uses_code_mode(doc):
        found.add("code-mode")
    if dos & {"abort", "await-signal", "cancel"} or any(c.get("aborted") or "abortAt" in c for c in _calls(doc)) \
            or run.get("aborted") or "cancelAt" in run:
        found.add("caller-abort")
    if doc.get("timeoutPolicy"):
        found.add("timeout-policy")
    if (doc.get("approval") or {}).get("service") == "shipped":
        found.add("shipped-approval")
    if "set-signal" in dos:
        found.add("signal-replacement")
    if "defer-context" in dos:
        found.add("deferred-context")
    if "conclude-turn" in dos:
        found.add("turn-conclusion")
    for s in steps:
        if s["do"] in ("register", "unregister") and s.get("ref") in guard_ids:
            found.add("guard-table-change")
        if s["do"] == "register" and s.get("ref") in slot and _reregisters(s["ref"], tools, slot, held, steps):
            found.add("tool-reregistration")
    if any(repeats_next(script) for script in step_lists(doc.get("listeners") or [])):
        found.add("repeated-next")
    if len(doc.get("guards") or []) > 1:
        found.add("several-guards")
    if any(s["do"] == "return" and throwing_feedback(s.get("value")) for s in steps):
        found.add("feedback-throws")
    if any(l.get("scope") is not None or l.get("global") for l in doc.get("listeners") or []):
        found.add("scoped-listener")
    if any(g.get("scope") is not None for g in doc.get("guards") or []):
        found.add("scoped-guard")
    if any(t.get("scope") is not None for t in doc.get("tools") or []) \
            or any("restrict" in a for a in doc.get("agents") or []):
        found.add("scoped-tool")
    if any(t.get("define") for t in doc.get("tools") or []):
        found.add("define-tool")
    if any("getters" in c or has_getter(c.get("arguments")) for c in _calls(doc)):
        found.add("input-getters")
    return [s for name, s in SITUATIONS.items() if name in found]


def situation_profiles(doc: dict[str, Any]) -> set[str]:
    """The profiles ``doc``'s situations need (core too, when any is needed)."""
    out = {s.profile for s in situations(doc)}
    return out | {"core"} if out else out


def uncited(doc: dict[str, Any], found: list[Situation] | None = None) -> list[Situation]:
    """The situations of ``doc`` of which it cites no rule, nor any rule of their profile:
    a case that uses one needs the profile, and says so by citing a rule of it.
    ``found``: ``situations(doc)``, when known already."""
    cited = set(doc.get("rules") or [])
    profiles = {rules()[r].profile for r in cited if r in rules()}
    return [s for s in (situations(doc) if found is None else found)
            if not cited & set(s.rules) and s.profile not in profiles]


def needed_profiles(doc: dict[str, Any], found: list[Situation] | None = None) -> set[str]:
    """The profiles a test of ``doc`` needs: those of the rules it cites (section 2: a
    profile needs core) and those of its situations it cites no rule of."""
    cited = [r for r in doc.get("rules") or [] if r in rules()]
    out = {rules()[r].profile for r in cited} | {s.profile for s in uncited(doc, found)}
    return out | {"core"}


def needed_features(doc: dict[str, Any], found: list[Situation] | None = None) -> set[str]:
    """The optional features ``doc`` uses (``OPTIONAL_FEATURES``)."""
    return {OPTIONAL_FEATURES[s.name] for s in (situations(doc) if found is None else found)
            if s.name in OPTIONAL_FEATURES}


def needs(doc: dict[str, Any]) -> tuple[set[str], set[str]]:
    """``needed_profiles`` and ``needed_features`` of ``doc`` at once, its situations found
    once (the runner asks both of every case)."""
    found = situations(doc)
    return needed_profiles(doc, found), needed_features(doc, found)


__all__ = ["Situation", "SITUATIONS", "OPTIONAL_FEATURES", "needed_features", "situations", "situation_profiles", "uncited", "needed_profiles", "needs"]
