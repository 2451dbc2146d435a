"""A drawn document confined to what a run can score: no situation that only another
profile's rules fix, and no optional feature the implementation did not declare
(spec section 2; ``conformance.situations`` names the situations).

A draw for a core-only implementation must not abort its caller (the cancellation
checkpoints are P29 and on), install the timeout policy (P70), register a tool that is
registered already (registration is out of scope, section 1.3; rc.8 throws its own error),
change the guard table during a pass (P45: tables are read live) or register several guards
(P45: their order), call next() twice in one listener (P6), block with feedback that throws
(P84), replace the record's
signal (P60), defer a context (P67), or scope listeners (P7), guards (P45) or tools (P56):
a core implementation may differ there and still satisfy every core rule. Such parts are
taken out of the drawn document (the draw is not skipped): a step is dropped, a scope or
a flag removed. With every profile and feature (the default run against the oracle) the
document is returned as drawn, so the seeded draws stay the same, except that a registration
of a name registered already is taken out of every draw (section 1.3: out of scope).
"""

from __future__ import annotations

from typing import Any

from dsh_conformance.spec.situations import (
    OPTIONAL_FEATURES,
    SITUATIONS,
    repeats_next,
    situations,
    step_lists,
    throwing_feedback,
)

# Situations no run compares (spec section 1.3: tests register a name at most once per layer):
# taken out of every draw, whatever the profiles.
OUT_OF_SCOPE = frozenset({"tool-reregistration"})

# The steps whose situation needs each dropped (await-signal waits on an abort: a short sleep).
_STEPS = {"caller-abort": {"abort", "cancel", "await-signal"}, "signal-replacement": {"set-signal"},
          "deferred-context": {"defer-context"}, "turn-conclusion": {"conclude-turn"}}


def allowed(profiles: frozenset[str], features: frozenset[str] | None) -> set[str]:
    """The situations a run with ``profiles`` and declared ``features`` (None: all) can score."""
    return {name for name, s in SITUATIONS.items() if s.profile in profiles and not s.out_of_scope
            and (features is None or name not in OPTIONAL_FEATURES or OPTIONAL_FEATURES[name] in features)}


def confine(doc: dict[str, Any], profiles: frozenset[str], features: frozenset[str] | None) -> dict[str, Any]:
    """``doc`` without the situations outside ``allowed(profiles, features)`` (in place)."""
    ok = allowed(profiles, features) - OUT_OF_SCOPE
    drop = {s.name for s in situations(doc)} - ok
    if not drop:
        return doc
    steps = set().union(*(_STEPS.get(name, set()) for name in drop))
    if "several-guards" in drop:
        doc["guards"] = (doc.get("guards") or [])[:1]  # P45: which one first is the order's
    guard_ids = {g.get("id") for g in doc.get("guards") or []}
    if "repeated-next" in drop:  # P6: a second next() reaches what the shared cursor says
        for script in step_lists(doc.get("listeners") or []):
            if repeats_next(script):
                first = next(i for i, x in enumerate(script) if x.get("do") == "next")
                script[:] = [x for i, x in enumerate(script) if x.get("do") != "next" or i == first]
    tool_refs = {t.get("id") or t.get("name") for t in doc.get("tools") or []}
    if "caller-abort" in drop:
        for call in _calls(doc):
            call.pop("aborted", None)
            call.pop("abortAt", None)
        for key in ("aborted", "cancelAt"):
            (doc.get("run") or {}).pop(key, None)
    if "input-getters" in drop:
        for call in _calls(doc):
            call.pop("getters", None)
            if "arguments" in call:
                call["arguments"] = _no_getters(call["arguments"])
    if "timeout-policy" in drop:
        doc.pop("timeoutPolicy", None)
    if "shipped-approval" in drop:
        doc.pop("approval", None)  # an ask is then a denial (P37)
        doc["listeners"] = [l for l in doc.get("listeners") or [] if l.get("event") != "approval/request"]
    if "scoped-listener" in drop:
        for l in doc.get("listeners") or []:
            l.pop("scope", None)
            l.pop("global", None)
    if "scoped-guard" in drop:
        for g in doc.get("guards") or []:
            g.pop("scope", None)
    if "scoped-tool" in drop:
        scoped = {t.get("id") or t.get("name") for t in doc.get("tools") or [] if t.get("scope") is not None}
        doc["tools"] = [t for t in doc.get("tools") or [] if t.get("scope") is None]
        tool_refs -= scoped
        for a in doc.get("agents") or []:
            a.pop("restrict", None)
    if "define-tool" in drop:
        for t in doc.get("tools") or []:
            t.pop("define", None)

    def keep(step: dict[str, Any]) -> list[dict[str, Any]]:
        do, ref = step.get("do"), step.get("ref")
        if "feedback-throws" in drop and do == "return" and throwing_feedback(step.get("value")):
            return [{**step, "value": {"kind": "block", "feedback": [{"type": "text", "text": "blocked"}]}}]
        if do in steps:
            return [{"do": "sleep", "ms": 1}] if do == "await-signal" else []
        if do in ("register", "unregister"):
            if "guard-table-change" in drop and ref in guard_ids:
                return []
            if ref not in tool_refs and ref not in guard_ids and not _listener(doc, ref):
                return []  # a scoped tool taken out above
            if "tool-reregistration" in drop and do == "register" and ref in tool_refs:
                return []
        return [step]

    for holder in (*(doc.get("tools") or []), *(doc.get("listeners") or []), *(doc.get("guards") or []),
                   doc.get("approval") or {}, *(doc.get("getters") or [])):
        _edit(holder, keep)
    return doc


def _no_getters(v: Any) -> Any:
    """``v`` with every accessor token replaced by null (a plain value)."""
    if isinstance(v, dict):
        return None if v.get("$js") == "getter" else {k: _no_getters(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_no_getters(x) for x in v]
    return v


def _listener(doc: dict[str, Any], ref: Any) -> bool:
    return any(l.get("id") == ref for l in doc.get("listeners") or [])


def _calls(doc: dict[str, Any]) -> list[dict[str, Any]]:
    run = doc.get("run") or {}
    return list(run.get("calls") or []) if run.get("kind", "direct") == "direct" else list(run.get("blocks") or [])


def _edit(v: Any, keep: Any) -> Any:
    """``v`` with each step of every step list under it replaced by ``keep(step)`` (in place)."""
    if isinstance(v, list):
        if v and all(isinstance(s, dict) and isinstance(s.get("do"), str) for s in v):
            v[:] = [out for s in v for out in keep(s)]
        for x in v:
            _edit(x, keep)
    elif isinstance(v, dict):
        for x in v.values():
            _edit(x, keep)
    return v


__all__ = ["allowed", "confine"]
