"""Hypothesis strategies for Code Mode (section 5.15): programs, run_code calls and the
participants only Code Mode has.

``scenario_docs`` (``strategies.scenarios``) draws a whole scenario; when its focus is
``code`` it hands the drawn document to ``code_mode``, which turns it into a Code Mode
scenario: a presentation mode (the deployment's or an agent's), run_code calls (direct or
loop blocks) whose programs call the scenario's tools, unknown names and ``run_code``
itself with lossless or hostile arguments, awaited at once or started together and
awaited later, caught or not, log, return any completion value or none, throw or fail; ``tools/code-dispatch-log`` listeners; an overlap cap;
classifiers on sub-called tools; sometimes no code runtime.

What the spec leaves to JavaScript's microtask order must not decide a generated run: when
a program keeps calls in flight together, no participant changes the registry, aborts a
signal or injects a message (they would race the overlapping sub-calls' stages), and a
dispatch-log listener never does either.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st

from dsh_conformance.oracle import Scenario, Trace
from dsh_conformance.kit.scenario import DirectRun, LoopRun

from dsh_conformance.strategies.basics import PARTICIPANTS, UNDEF, S, edit_steps, err, reused, text, weighted

# Lossless JSON a program hands a binding or completes with (the value strategies of
# strategies.values cover the wider domain at every other boundary).
_leaves = st.one_of(st.integers(-3, 3), st.none(), st.booleans(), st.sampled_from(["", "a", "Ünïcödé", "x\ny"]),
                    st.sampled_from([1.5, -2.25, 1e21, 1e-7]))
lossless_values: S = st.recursive(_leaves, lambda inner: st.one_of(
    st.dictionaries(st.sampled_from(["a", "b", "10", "2", "__proto__"]), inner, max_size=3),
    st.lists(inner, max_size=3)), max_leaves=6)

FOCUS = "code"
PROFILE = "code-mode"

# What a program hands a binding (P118): mostly lossless; the rest rejects before a number.
BAD_BINDING_ARGUMENTS: list[Any] = [
    UNDEF, {"x": {"$js": "NaN"}}, {"f": {"$js": "function", "name": "f"}}, {"a": {"$js": "cycle", "up": 1}},
    {"x": {"$js": "getter-throws", "message": "argument getter"}}, {"x": {"$js": "getter-throws", "thrown": "plain"}},
    {"n": {"$js": "bigint", "value": "9"}}, [1, {"$js": "hole"}], {"$js": "instance", "class": "Map"},
]
binding_arguments: S = weighted((5, st.just({"x": 1})), (2, st.just({})), (1, lossless_values),
                                (2, st.sampled_from(BAD_BINDING_ARGUMENTS)))

# past depth 5 compact; every escape JSON.stringify writes (a quote, a backslash, a short
# escape, a control character, U+2028 as is); empty containers (P128)
DEEP = {"a": {"b": {"c": {"d": {"e": {"f": [1, {"g": "h"}]}}}}}, "s": "x\"y\\z\n\u0001\u2028", "e": [], "o": {}}
completion_values: S = weighted(
    (3, st.just(UNDEF)), (3, lossless_values), (2, st.just(DEEP)),
    (1, st.sampled_from(["", "plain text", "line one\nline two"])),
    (1, st.just({"n": {"$js": "NaN"}})),  # not lossless: the run fails (invalid-output)
)
FAIL_KINDS = ("timeout", "abort", "worker-exit", "invalid-output", "output-limit")
log_texts: S = st.sampled_from(["started", "", "Ünïcödé", "two\nlines"])
descriptions: S = weighted((8, st.just("run the program")), (1, st.sampled_from(["", " \t\u00a0"])))


@reused
def _tool_choices(names: tuple[str, ...]) -> S:
    return weighted((3, st.just(names[0])), (2, st.sampled_from(names)))


STEP_COUNTS: S = weighted((1, st.just(0)), (4, st.integers(1, 3)))
EXTRA_NAMES: S = weighted((5, st.just([])), (1, st.just(["run_code"])))  # drawn lists are only read
LOG_LISTENER_COUNTS: S = weighted((1, st.just(0)), (2, st.just(1)), (1, st.just(2)))


@st.composite
def _call(draw: Any, names: list[str], handle: str | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"do": "call", "tool": draw(_tool_choices(tuple(names)))}
    args = draw(binding_arguments)
    if args != {}:
        step["arguments"] = args
    if handle is not None:
        step["as"] = handle
    elif draw(weighted((1, False), (2, True))):
        step["catch"] = True
    return step


@st.composite
def programs(draw: Any, pid: str, names: list[str], concurrent: bool) -> dict[str, Any]:
    """A program calling ``names`` (P117-P128). A concurrent one starts calls together and
    awaits them all before it goes on; then come steps one at a time (calls awaited at once,
    logs, sleeps) and the end. Where a run ends while a sub-call is still in its start is
    microtask order (the abort may land before or after its checkpoints): a generated
    program awaits every call it starts before it ends, and leaves no continuation behind.
    The corpus orders such cases with sleeps."""
    steps: list[dict[str, Any]] = []
    handles: list[str] = []
    if concurrent:
        for i in range(draw(st.integers(2, 3))):
            steps.append(draw(_call(names, f"h{i}")))
            handles.append(f"h{i}")
            if draw(weighted((4, False), (1, True))):
                steps.append({"do": "log", "text": draw(log_texts)})
        order = draw(st.permutations(handles))
        for k, h in enumerate(order):  # only the last may fail the program: nothing is left in flight then
            steps.append({"do": "await", "handle": h, "catch": k < len(order) - 1 or draw(weighted((1, False), (2, True)))})
    for _ in range(draw(STEP_COUNTS)):
        kind = draw(weighted((6, "call"), (2, "log"), (1, "sleep")))
        if kind == "log":
            steps.append({"do": "log", "text": draw(log_texts)})
        elif kind == "sleep":
            steps.append({"do": "sleep", "ms": draw(st.sampled_from([0, 5]))})
        else:
            steps.append(draw(_call(names)))
    end = draw(weighted((4, "return"), (2, "none"), (1, "throw"), (1, "fail")))
    if end == "return":
        steps.append({"do": "return", "value": draw(completion_values)})
    elif end == "throw":
        steps.append({"do": "throw", "message": draw(st.sampled_from(["boom", "ReferenceError: x is not defined"]))})
    elif end == "fail":
        steps.append({"do": "fail", "kind": draw(st.sampled_from(FAIL_KINDS)), "message": "the runtime gave up"})
    # No continuation (afterSettle): its calls start as the run settles, unawaited, and where
    # they land among run_code's own stages is microtask order (the corpus and the side run
    # `abort` of strategies.code_side order them with virtual time).
    return {"id": pid, "steps": steps}


LOG_SCRIPTS: list[Any] = [
    None,  # delegates: the unchanged content
    [{"do": "next"}, {"do": "return", "value": text("[logged]")}],
    [{"do": "throw", "value": err("log listener failed")}],
    [{"do": "sleep", "ms": 3}, {"do": "next"}, {"do": "return-next"}],
    [{"do": "observe", "what": "result"}, {"do": "next"}, {"do": "return-next"}],
    [{"do": "observe", "what": "record"}, {"do": "return", "value": []}],
]
LOG_SCRIPT_CHOICES: S = weighted((3, st.sampled_from(LOG_SCRIPTS)), (1, st.just(LOG_SCRIPTS[2])))  # copied where used
CLASSIFIERS: list[Any] = [
    [{"do": "return", "value": True}], [{"do": "return", "value": True}], [{"do": "return", "value": 1}],
    [{"do": "throw", "value": err("classifier failed")}], [{"do": "observe", "what": "args"}, {"do": "return", "value": True}],
]
# A cancel of the loop's turn aborts run_code's caller, and with it the run: it races
# overlapping sub-calls as an abort does (where the program is when it lands is microtask
# order: rc.8's binding returns at the sub-call's first await, the oracle's runs on).
# A body's session write (append) lands by microtask order against the lane's dispatch logs
# of the other sub-calls: after an awaited fs intent, rc.8's lane has started the next
# sub-call (its tool/code-dispatch-start first), the oracle's body has written (seed 262
# prop-77c11d772aed).
RACING_STEPS = frozenset({"register", "unregister", "abort", "cancel", "inject", "steer", "append"})


def code_mode(draw: Any, doc: dict[str, Any], loop: bool) -> None:
    """Turn a drawn scenario document into a Code Mode one (in place)."""
    agents = [a["id"] for a in doc.get("agents", [])]
    mode = draw(weighted((4, "code"), (2, "both"), (1, "agent"), (1, "native")))
    if mode == "agent" and agents:
        doc["mode"] = "native"
        doc["agents"][0]["mode"] = draw(st.sampled_from(["code", "both"]))  # P28: the nearest declaration
    else:
        # native: run_code is not there for anyone (P114), and its calls fail as unknown
        doc["mode"] = "code" if mode == "agent" else mode
    names = sorted({t["name"] for t in doc["tools"]}) + ["ghost"]
    names += draw(EXTRA_NAMES)  # no binding of its own (P114)
    concurrent = draw(weighted((1, False), (1, True)))
    run = doc["run"]
    items = run["blocks"] if loop else run["calls"]
    chosen = [i for i in range(len(items)) if i == 0 or draw(weighted((1, False), (2, True)))]
    programs_ = []
    for n, i in enumerate(chosen):
        pid = f"p{n + 1}"
        programs_.append(draw(programs(pid, names, concurrent)))
        args: dict[str, Any] = {"code": pid, "description": draw(descriptions)}
        if draw(weighted((12, False), (1, True))):  # not {code: string, description: string} (P115)
            args = draw(st.sampled_from([{"code": 1, "description": "d"}, {"code": pid}]))
        item = items[i]
        item["name"] = "run_code"
        getters = item.get("getters")
        if isinstance(getters, dict):  # a run_code call reads its own name and arguments
            for field in ("name", "arguments"):
                getters.pop(field, None)
            if not getters:
                item.pop("getters")
        if loop:
            item["arguments"] = json.dumps(args, separators=(",", ":"))
        else:
            item["arguments"] = args
            if agents and "agent" not in item and draw(weighted((1, False), (3, True))):
                item["agent"] = agents[0]  # dispatch logging needs an agent (P122)
    doc["programs"] = programs_
    ids = [items[i]["callId" if not loop else "id"] for i in chosen]
    if len(chosen) == len(items) and draw(weighted((1, False), (1, True))):
        # a model-direct call beside the runs: it collapses in code mode (P28)
        if loop:
            items.append({"id": f"A{len(items) + 1}", "name": "t1", "arguments": '{"x":1}'})
        else:
            items.append({"callId": f"c{len(items) + 1}", "name": "t1", "arguments": {"x": 1},
                          **({"agent": agents[0]} if agents and draw(st.booleans()) else {})})
    if draw(weighted((1, False), (3, True))):
        # run_code itself passes its policy untouched, so that its program runs: the
        # participants' drawn behaviors then meet the sub-calls
        quieted = list(ids)
        if draw(st.booleans()):  # and so do the first run's sub-calls, so that they commit
            quieted += [f"{ids[0]}:code:{n}" for n in range(1, 5)]
        _quiet(doc, quieted)
    _enrich(draw, doc["tools"][0], concurrent, loop)
    if draw(weighted((1, False), (2 if concurrent else 1, True))):  # the overlap cap bites where calls overlap (P121)
        doc["maxParallelSubCalls"] = draw(st.sampled_from([1, 2]))
    if not loop and draw(weighted((9, False), (1, True))):
        doc["codeRuntime"] = False
    for t in doc["tools"]:
        if "scope" not in t and draw(weighted((1, False), (1, True))):
            t["concurrencySafe"] = copy.deepcopy(draw(st.sampled_from(CLASSIFIERS)))
    listeners = doc.setdefault("listeners", [])
    for k in range(draw(LOG_LISTENER_COUNTS)):
        listener: dict[str, Any] = {"id": f"D{k + 1}", "event": "tools/code-dispatch-log"}
        script = draw(LOG_SCRIPT_CHOICES)
        if script is not None:
            listener["script"] = copy.deepcopy(script)
        if agents and draw(weighted((3, False), (1, True))):
            listener["scope"] = agents[0]
        listeners.append(listener)
    if loop:
        run.pop("present", None)  # how a client presents run_code is outside the pipeline (P14)
        run.pop("finish", None)
    if concurrent:
        _calm(doc)
    _no_identity_writes(doc)


QUIET = {"tools/pre-execute": [{"do": "next"}, {"do": "return-next"}], "tools/execute": [{"do": "next"}, {"do": "return-next"}],
         "tools/post-execute": [{"do": "next"}, {"do": "return-next"}], "tools/result": []}


def _quiet(doc: dict[str, Any], calls: list[str]) -> None:
    """The listeners and guards let ``calls`` through unchanged (by call id)."""
    for l in doc.get("listeners", []):
        quiet = QUIET.get(l["event"])
        if quiet is not None:
            l["script"] = _by_call(l.get("script"), calls, quiet, [{"do": "next"}, {"do": "return-next"}]
                                   if l["event"] != "tools/result" else [])
    for g in doc.get("guards", []):
        g["script"] = _by_call(g.get("script"), calls, [{"do": "return", "value": UNDEF}], [{"do": "return", "value": UNDEF}])


def _by_call(script: Any, calls: list[str], steps: list[Any], default: list[Any]) -> dict[str, Any]:
    behavior = {"steps": script} if isinstance(script, list) else dict(script or {"steps": default})
    behavior["byCall"] = {**behavior.get("byCall", {}), **{c: copy.deepcopy(steps) for c in calls}}
    return behavior


CONTEXT_IDS = ("m3", "m4")


def _enrich(draw: Any, tool: dict[str, Any], concurrent: bool, loop: bool) -> None:
    """The first tool's body carries what rides on run_code (P126, P127), and, when nothing
    runs alongside, may abort run_code's caller mid-run (P116)."""
    extra: list[Any] = []
    plain = False
    if draw(weighted((1, False), (1, True))):
        mid = draw(st.sampled_from(CONTEXT_IDS))
        extra.append({"do": "defer-context", "message": {"id": mid, "role": "user", "content": [text("from a sub-call")],
                                                         "source": {"kind": "plugin", "plugin": "gen"}}})
    if draw(weighted((1, False), (1, True))):
        extra.append({"do": "conclude-turn"})
        plain = draw(weighted((1, False), (2, True)))  # and nothing else that could fail it: a plain success marks run_code (P127)
    if not concurrent and draw(weighted((7, False), (1, True))):
        extra.append({"do": "abort", "signal": "caller"})
    if plain:
        for key in ("define", "parameters", "output", "timeoutMs"):
            tool.pop(key, None)
        tool["body"] = extra + [{"do": "return", "value": {"x": 1}}]
    elif extra:
        body = tool.get("body", [])
        tool["body"] = extra + body if isinstance(body, list) else {**body, "steps": extra + body.get("steps", [])}
    if draw(weighted((2, False), (1, True))):
        output = tool.setdefault("output", {})
        output["render"] = [{"do": "return", "value": [{"type": "image", "attachment": {"id": "chart"}}]}]


IDENTITY = ("callId", "rootCallId", "name", "agent", "parent", "arguments", "token")


def _no_identity_writes(doc: dict[str, Any]) -> None:
    """No participant writes a record's identity (P24): the spec says every such write
    fails, and where an implementation lets it through, run_code's bridge goes on with the
    forged identity and the run can end anywhere (rc.8's bridge throws inside its lane on a
    forged agent and the run never settles: case code-forged-agent-stalls-the-bridge). The
    other profiles' scenarios check P24 itself."""
    def identity(step: Any) -> bool:
        if not (isinstance(step, dict) and step.get("do") == "mutate"):
            return False
        parts = str(step.get("target", "")).split(".")
        return parts[0] == "record" and (len(parts) == 1 or parts[1] in IDENTITY)

    edit_steps(doc, lambda x: [] if identity(x) else [x], (*PARTICIPANTS, "getters"))


def _calm(doc: dict[str, Any]) -> None:
    """No participant races overlapping sub-calls: registry changes, aborts and injections
    go, as scripted steps of every participant; and a wait for a signal, which only an
    abort ended, becomes a short sleep."""
    def calm(x: Any) -> list[Any]:
        if not isinstance(x, dict):
            return [x]
        if x.get("do") in RACING_STEPS:
            return []
        return [{"do": "sleep", "ms": 1}] if x.get("do") == "await-signal" else [x]

    # getters too: an accessor read while a sub-call's value is snapshotted runs its steps
    # in the middle of that sub-call (a getter's unregister raced the lane's queue: seed 202)
    edit_steps(doc, calm, (*PARTICIPANTS, "getters"))
    # A classifier is re-read just before each start, and how often the lane looks at a queued
    # sub-call before that is the implementation's (P121): one that answers differently on
    # each read answers by timing (seed 237: rc.8 reads a queued sub-call's classifier twice).
    for t in doc.get("tools", []):
        cs = t.get("concurrencySafe")
        if isinstance(cs, dict) and len(cs.get("perInvocation") or []) > 1:
            cs["perInvocation"] = cs["perInvocation"][:1]  # the last entry repeats


# ============================================================================ which rules a run exercises

def exercised(scenario: Scenario, trace: Trace) -> set[str]:
    """The code-mode rules a run exercises beyond those its observations name."""
    out: set[str] = set()
    obs = trace.observations
    run = scenario.run
    calls = run.calls if isinstance(run, DirectRun) else run.blocks if isinstance(run, LoopRun) else []
    run_code = {c.callId if isinstance(run, DirectRun) else c.id for c in calls if c.name == "run_code"}
    if scenario.mode != "native" or any(a.mode is not None for a in scenario.agents):
        if any(o.stage == "entry" and o.what == "start" for o in obs):
            out.add("P28")  # presentation decides every call's entry
    if run_code:
        out.add("P114")
        if any(o.call in run_code and o.stage == "dispatch" and o.what == "resolve" for o in obs):
            out.add("P115")
    aborted = isinstance(run, DirectRun) and any(c.aborted and c.name == "run_code" for c in run.calls)
    if aborted or any(o.stage == "program" and o.what == "end" and isinstance(o.value, dict)
                      and o.value.get("error", {}).get("kind") == "abort" for o in obs):
        out.add("P116")
    if any(o.call is not None and ":code:" in o.call and o.stage == "pre-execute" for o in obs):
        out.add("P120")
    if any(w.startswith("tools: code-dispatch-log listener failed for ") for w in trace.warnings):
        out.add("P123")
    return out
