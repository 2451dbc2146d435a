"""Code Mode side runs: run_code calls of their own appended to a drawn direct Code Mode
scenario, after every other draw (as ``side_calls`` does for the other foci).

A drawn Code Mode program rarely gets far: its sub-calls meet the drawn participants, an
uncaught failure ends it, and so its later steps (a sleep, a value to render, a queue that
fills up) are seldom reached. A side run is a direct ``run_code`` call whose program calls
tools of the recipe's own (``cs``, concurrency-safe, with a scoped variant for the side
agent; ``cx``, exclusive), and every drawn listener and guard steps aside (delegates,
abstains) for it and for its sub-calls, so that only the recipe decides what happens. Each
draw turns on a random subset of the side runs (swarm-style), so that several meet in one
scenario:

- ``cap``: ``maxParallelSubCalls + 1`` overlapping sub-calls whose bodies sleep (P121: the
  last one starts only when one has landed), then a sleep and a value whose text holds every
  kind ``JSON.stringify`` writes: strings with escapes, numbers, empty and non-empty lists,
  an empty object and a nesting deep enough to be compacted (P128);
- ``abort``: the caller aborts (``abortAt``) while one exclusive sub-call is in flight and two
  wait in the queue and the program sleeps: the queued ones are never started, the program
  stops, and a continuation left behind awaits the in-flight one and calls again (P116,
  P118, P125);
- ``guard-abort``: a guard of the run's first sub-call aborts the caller while the program
  sleeps (P116: where a program that does not wait stands then is microtask order, so it
  sleeps); a pre-execute listener of a later sub-call writes into the bridge's input (P23,
  P119) and tries to register a tool named ``run_code`` (P114: refused);
- ``ends``: a run without an agent (no dispatch log, P122) whose program ends by a throw, a
  runtime failure, a value or a value that is not lossless JSON, runs that call nothing and end by nothing (undefined: the
  logs alone), a throw or a failure, and one naming no program at all (P128);
- ``aborted``: a run_code call and a model-direct call (collapsed, P28) whose caller is
  aborted before entry (P29);
- ``crash``: the code runtime's ``run()`` itself rejects (a crashed runtime, with an Error
  or a plain value) while one exclusive sub-call runs its body and another waits in the
  queue: the queued one is abandoned, the started one commits, and only then does the
  rejection reach the caller as run_code's throw (P125, P9);
- ``no-runtime``: the deployment has no code runtime, and one run has a blank description,
  which is checked first (P115); only beside a draw without run_code calls of its own.

Now and then the side agent restricts its tools (``allow`` the recipe's own, or ``deny`` a
drawn global one): its runs bind no hidden name (P56, P117).

Where the draw has run_code calls of its own, the side runs leave the deployment as drawn
(``cap`` only where the draw set a cap).

Now and then the safe tool renders an image (P126: deferred on run_code's result) or
concludes the turn (P127: run_code's result concludes it), and a
dispatch-log listener scoped to the side agent sleeps before it delegates (P122: the log
work still pending at the next commit and at the end).

Every side run is sequential with the drawn calls (a direct run's calls follow one another),
and inside a run nothing the spec leaves to microtask order decides an observation: aborts
land in virtual time while nothing is in its start, and no participant changes the registry
while sub-calls overlap.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import DELEGATE

from dsh_conformance.strategies.basics import UNDEF, S, weighted
from dsh_conformance.strategies.code_mode import DEEP, FAIL_KINDS
from dsh_conformance.strategies.side_calls import step_aside

CALL_PREFIX = "cv"  # the side runs' call ids: cv1, cv2, ...
SIDE_AGENT = "ac"
SAFE_TOOL = "cs"  # concurrency-safe; a scoped variant for SIDE_AGENT (P56: resolved through its chain)
EXCLUSIVE_TOOL = "cx"
BODY_MS = 2
ABORT_AT = 2
RUNS = ("cap", "abort", "guard-abort", "ends", "aborted", "crash")
# what a crashed runtime's run() rejects with (P125: the body's throw, as it is, P9)
CRASHES: list[Any] = [{"$js": "error", "class": "Error", "message": "the code runtime crashed"},
                      {"$js": "error", "class": "TypeError", "message": "worker gone"}, "crashed", 7]
# every kind render_json writes (P128): keys in insertion order, none integer-like
RICH = {"s": "q\"b\\s\n\u0001", "n": -1.5e-7, "i": 10, "t": True, "z": None, "e": [], "l": [1, "two", [], {}],
        "o": {}, "deep": DEEP}
MAX_SUB_CALLS = 8  # more than any side program makes: the ids participants step aside for

run_sets: S = st.sets(st.sampled_from(RUNS), min_size=1, max_size=2)
# Beside a direct draw of another focus (the code-mode profile checked): its deployment stays
# native, the side agent presents code (P28), and the drawn calls run as they did.
BESIDE: S = weighted((2, False), (1, True))  # of those without script calls (script_calls)
NO_RUNTIME: S = weighted((2, False), (1, True))
NOT_LOSSLESS = {"n": {"$js": "NaN"}}  # P128: the run fails (invalid-output)


def code_side(draw: Any, doc: dict[str, Any]) -> None:
    """Append the side runs of a drawn subset (see the module's doc) to a direct Code Mode
    scenario, in place."""
    run = doc["run"]
    # Where the draw has run_code calls of its own, the side runs leave the deployment as
    # drawn: no runtime would stop every drawn program, and a cap set here would change how
    # the drawn sub-calls overlap.
    bare = not doc.get("programs")
    chosen = draw(run_sets)
    if not bare and "maxParallelSubCalls" not in doc:
        chosen.discard("cap")
    if bare and draw(NO_RUNTIME):
        chosen.add("no-runtime")
    native = doc.get("mode", "native") == "native"
    side_agent: dict[str, Any] = {"id": SIDE_AGENT, "mode": "code"}  # run_code is there for it (P28)
    doc.setdefault("agents", []).append(side_agent)
    restriction = draw(weighted((3, None), (1, "allow"), (1, "deny")))
    drawn = sorted({t["name"] for t in doc["tools"] if "scope" not in t and t.get("registered", True)})
    if restriction == "allow" and drawn:  # P56: every drawn global name is hidden from its runs
        side_agent["restrict"] = {"allow": [SAFE_TOOL, EXCLUSIVE_TOOL]}
    elif restriction == "deny" and drawn:  # a restriction names only tools registered at the start
        side_agent["restrict"] = {"deny": [draw(st.sampled_from(drawn))]}
    doc["tools"] += [
        {"name": SAFE_TOOL, "id": SAFE_TOOL, "body": [{"do": "sleep", "ms": BODY_MS}, {"do": "return", "value": {"v": 1}}],
         "concurrencySafe": [{"do": "return", "value": True}]},
        {"name": SAFE_TOOL, "id": f"{SAFE_TOOL}@{SIDE_AGENT}", "scope": SIDE_AGENT,
         "body": [{"do": "sleep", "ms": BODY_MS}, {"do": "return", "value": "scoped"}],
         "concurrencySafe": [{"do": "return", "value": True}]},
        {"name": EXCLUSIVE_TOOL, "id": EXCLUSIVE_TOOL, "body": [{"do": "sleep", "ms": 2 * BODY_MS}, {"do": "return", "value": 2}]},
    ]
    safe = doc["tools"][-3:-1]
    if draw(st.booleans()):  # P126: an image in a sub-call's content rides on run_code's result
        for t in safe:
            t["output"] = {"render": [{"do": "return", "value": [{"type": "image", "attachment": {"id": "side"}}]}]}
    if draw(st.booleans()):  # P127: a sub-call's plain success that concludes the turn marks run_code's result
        for t in safe:
            t["body"] = [{"do": "conclude-turn"}, *t["body"]]
    calls: list[dict[str, Any]] = []
    programs = doc.setdefault("programs", [])
    listeners: list[dict[str, Any]] = []
    guards: list[dict[str, Any]] = []

    def add(code: str, description: str = "run the program", agent: bool = True, **extra: Any) -> str:
        cid = f"{CALL_PREFIX}{len(calls) + 1}"
        call: dict[str, Any] = {"callId": cid, "name": "run_code", "arguments": {"code": code, "description": description}}
        if agent or native:  # without an agent run_code is there only where the deployment presents it
            call["agent"] = SIDE_AGENT
        calls.append({**call, **extra})
        return cid

    if "cap" in chosen:
        cap = doc.setdefault("maxParallelSubCalls", draw(st.sampled_from([1, 2])))
        n = cap + 1  # P121: one more than may overlap
        steps: list[dict[str, Any]] = [{"do": "call", "tool": SAFE_TOOL, "arguments": {"i": k}, "as": f"h{k}"} for k in range(n)]
        # caught but the last: a rejection ends the program only when nothing else is in its start
        steps += [{"do": "await", "handle": f"h{k}", **({"catch": True} if k < n - 1 else {})} for k in range(n)]
        steps += [{"do": "sleep", "ms": 1}, {"do": "return", "value": copy.deepcopy(RICH)}]
        programs.append({"id": "pv-cap", "steps": steps})
        add("pv-cap", agent=draw(st.booleans()))
    if "abort" in chosen:
        programs.append({"id": "pv-abort", "steps": [
            *({"do": "call", "tool": EXCLUSIVE_TOOL, "as": h} for h in ("a", "b", "c")),
            {"do": "sleep", "ms": 5 * BODY_MS}, {"do": "return", "value": "unreached"}],
            "afterSettle": [{"do": "await", "handle": "a"}, {"do": "call", "tool": EXCLUSIVE_TOOL}]})
        add("pv-abort", agent=draw(st.booleans()), abortAt=ABORT_AT)
    if "guard-abort" in chosen:
        programs.append({"id": "pv-guard", "steps": [
            {"do": "call", "tool": SAFE_TOOL, "as": "h0"}, {"do": "sleep", "ms": 5 * BODY_MS},
            {"do": "call", "tool": SAFE_TOOL, "as": "h1"}, {"do": "await", "handle": "h0", "catch": True},
            # awaited too: a return with h1 in its start would settle the run where microtask
            # order puts h1 (before or after its dispatch), which the spec leaves open
            {"do": "await", "handle": "h1", "catch": True}, {"do": "return", "value": "x"}]})
        cid = add("pv-guard")
        guards.append({"id": "Gv-code", "script": {"steps": [{"do": "return", "value": UNDEF}], "byCall": {
            f"{cid}:code:1": [{"do": "abort", "signal": "caller"}, {"do": "return", "value": UNDEF}]}}})
    if "ends" in chosen:
        end = draw(weighted((2, "throw"), (2, "fail"), (1, "return"), (1, "not-lossless")))
        steps = [{"do": "call", "tool": SAFE_TOOL, "arguments": {"x": 1}, "catch": True},
                 {"do": "call", "tool": SAFE_TOOL, "catch": True}, {"do": "log", "text": "side"}]
        if end == "throw":
            steps.append({"do": "throw", "message": "side boom"})
        elif end == "fail":
            steps.append({"do": "fail", "kind": draw(st.sampled_from(FAIL_KINDS)), "message": "the runtime gave up"})
        elif end == "return":
            steps.append({"do": "return", "value": copy.deepcopy(RICH)})
        else:
            steps.append({"do": "return", "value": copy.deepcopy(NOT_LOSSLESS)})
        programs.append({"id": "pv-end", "steps": steps})
        cid = add("pv-end", agent=False)
        add("pv-none", agent=False)  # P128: a code argument naming no program fails the run
        # P128: runs that call nothing: ending without a return completes with undefined (the
        # logs alone); a throw and a runtime failure keep the logs before them
        programs += [{"id": "pv-log", "steps": [{"do": "log", "text": "only a log"}]},
                     {"id": "pv-throw", "steps": [{"do": "log", "text": "before"}, {"do": "throw", "message": "thrown"}]},
                     {"id": "pv-fail", "steps": [{"do": "log", "text": "before"},
                                                 {"do": "fail", "kind": draw(st.sampled_from(FAIL_KINDS)), "message": "gave up"}]}]
        for code in ("pv-log", "pv-throw", "pv-fail"):
            add(code, agent=False)
        # P23, P119: a write into the sub-call's input meets the bridge's own object (what
        # registering the reserved name run_code does is out of scope, section 1.3)
        listeners.append({"id": "Lv-code", "event": "tools/pre-execute", "prepend": True, "script": {
            "steps": list(DELEGATE), "byCall": {f"{cid}:code:2": [
                {"do": "mutate", "target": "input.name", "value": "other", "catch": True}, *DELEGATE]}}})
    if "crash" in chosen:
        # P125: a sleep shorter than the exclusive body, so that the first sub-call runs its
        # body and the second waits in the queue when run() rejects
        programs.append({"id": "pv-crash", "steps": [
            {"do": "call", "tool": EXCLUSIVE_TOOL, "as": "a"}, {"do": "call", "tool": EXCLUSIVE_TOOL, "as": "b"},
            {"do": "sleep", "ms": 1}, {"do": "reject", "thrown": copy.deepcopy(draw(st.sampled_from(CRASHES)))}]})
        add("pv-crash", agent=draw(st.booleans()))
    if "aborted" in chosen:
        add("pv-end" if "ends" in chosen else "pv-none", aborted=True)
        calls.append({"callId": f"{CALL_PREFIX}{len(calls) + 1}", "name": SAFE_TOOL, "agent": SIDE_AGENT, "aborted": True})
    if "no-runtime" in chosen:
        doc["codeRuntime"] = False
        add("pv-none", description=draw(st.sampled_from(["", " \t ", "\u00a0"])))
    if any(c.get("agent") == SIDE_AGENT for c in calls) and draw(st.booleans()):
        # P122: a log still being shaped when its run commits the next sub-call, or ends
        listeners.append({"id": "Dv-log", "event": "tools/code-dispatch-log", "scope": SIDE_AGENT,
                          "script": [{"do": "sleep", "ms": 1}, {"do": "next"}, {"do": "return-next"}]})
    ids = [c["callId"] for c in calls]
    aside = ids + [f"{c}:code:{k}" for c in ids for k in range(1, MAX_SUB_CALLS + 1)]
    for l in doc.get("listeners", []):
        if l["event"] != "tools/code-dispatch-log":  # the drawn log listeners log the side runs too (P122, P123)
            step_aside(l, "script", aside, [] if l["event"] == "tools/result" else list(DELEGATE))
    for g in doc.get("guards", []):
        step_aside(g, "script", aside, [{"do": "return", "value": UNDEF}])
    run["calls"] += calls
    if listeners:
        doc.setdefault("listeners", []).extend(listeners)
    if guards:
        doc.setdefault("guards", []).extend(guards)
