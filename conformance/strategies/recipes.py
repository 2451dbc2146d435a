"""Edits of a drawn document that a focus calls for: quieting the participants outside the
focus, aiming the first call, aborting at a chosen checkpoint (``abort_recipe``), layered
guards, observed raw arguments, a restriction that hides an ancestor's scoped tool (P56), and the
"values" focus's conversions (``value_rounds``)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import DELEGATE

from dsh_conformance.strategies.basics import S, UNDEF, err, message, text, weighted
from dsh_conformance.strategies.runs import RAW_BOUNDARIES, RAW_PARSES, hot_raw_arguments
from dsh_conformance.strategies.terminals import ABORT_REPLACED, FRESH_SIGNAL
from dsh_conformance.strategies.values import ABORT_CALLER


# Values the spec turns into text (P9's String of a thrown value, JSON text of an approval
# outcome, the message a block derives from its feedback), one per kind of conversion:
# numbers in every notation, wrappers and instances, errors without a name or message. Not
# a function or a Date: String of one is its source text or local time, which the spec
# leaves to the engine and the adapter (rc.8: "function () {}", "Wed Jan 01 2020 ...").
TO_MESSAGE: list[Any] = [
    {"$js": "-0"}, 0, 1e21, 123456789012, 0.000123, -0.5, 1.5e-7, True, False, None, UNDEF, {},
    {"$js": "promise", "resolves": 1}, {"$js": "instance", "class": "Promise"}, {"$js": "instance", "class": "Map"},
    {"$js": "instance", "class": "URL"}, {"$js": "instance", "class": "Point"}, {"$js": "instance", "class": "RegExp"},
    {"$js": "instance", "class": "String"}, {"$js": "symbol", "description": "v"}, [1, None, [2, UNDEF], "z"],
    [{"$js": "promise", "resolves": 1}, 0.25], ["a"], err("", "TypeError"),
    {"$js": "error", "class": "Error", "message": "m", "name": "Custom", "code": "C1"},
    {"$js": "error", "class": "Error", "message": "nameless", "name": ""}, {"message": 5}, "a",
]
TO_JSON_TEXT: list[Any] = [
    {"zero": 0.0, "negative-zero": -0.0, "list": [-0.0, 1.5]}, {"a": {"$js": "cycle", "up": 1}},
    {"u": {"$js": "instance", "class": "URL"}, "m": {"$js": "instance", "class": "Map"}},
    {"f": {"$js": "function", "name": "f"}, "s": {"$js": "symbol", "description": "s"}, "n": 1},
    {"p": {"$js": "promise", "resolves": 1}, "e": err("in data")}, True, [UNDEF, 1], {"o": 1}, "allowed-once",
]
FEEDBACK_BLOCKS: list[Any] = [["s", 3, True], [text("why"), None], [UNDEF], [text("a")], [text("")]]
value_post_decisions: S = weighted(
    (4, st.none()),
    (2, st.builds(lambda v: {"kind": "accept", "value": v}, st.sampled_from([1, {"n": 2}, "a", [0]]))),
    (2, st.builds(lambda f: {"kind": "block", "feedback": f}, st.sampled_from(FEEDBACK_BLOCKS))),
    (1, st.just({"kind": "accept", "value": {"n": 1}, "additionalContexts": [message("m7", "from the decision")]})),
)


def value_rounds(draw: Any, doc: dict[str, Any], loop: bool, calls: list[str], foci: set[str],
                 hot_ids: set[str], listeners: list[dict[str, Any]],
                 guards: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The "values" focus: every call goes to ``t1`` with valid arguments, the participants
    outside the focus quieted for them, and ``t1``'s body throws a drawn value per
    invocation (P9: the failure's message is String of it); every other participant,
    focused or not, delegates for these calls. Now and then the last call is
    asked about instead (an approval whose outcome is outside the vocabulary is rendered as
    JSON text, P41), and a post-execute listener decides each call's failure (P81: accept
    with a value on a failure; P83: a block's feedback of null or primitive blocks).
    Returns the approval service it asks, if it does."""
    run = doc["run"]
    if not loop:  # more conversions a draw: up to five calls, each its own value
        wanted = draw(st.integers(len(calls), 5))
        while len(calls) < wanted:
            calls.append(f"c{len(calls) + 1}")
            run["calls"].append({**run["calls"][0], "callId": calls[-1]})
    for item in run["blocks"] if loop else run["calls"]:
        item["name"] = "t1"
        item["arguments"] = '{"x":1}' if loop else {"x": 1}
        for k in ("aborted", "parent", "abortAt"):
            item.pop(k, None)
    for k in ("aborted", "cancelAt"):
        run.pop(k, None)
    # the conversions are the focus: every other participant delegates for these calls
    quiet_calls(doc, calls, {"values"}, set(), listeners, guards)
    thrown = draw(st.lists(st.sampled_from(TO_MESSAGE), min_size=len(calls), max_size=len(calls)))
    t1 = doc["tools"][0]
    t1.pop("registered", None)
    t1["body"] = {"perInvocation": [[{"do": "throw", "value": v}] for v in thrown]}
    if draw(weighted((2, False), (1, True))) and "approval/request" not in {l["event"] for l in listeners}:
        outcomes = draw(st.lists(st.sampled_from(TO_JSON_TEXT), min_size=1, max_size=2))
        approval = {"service": "custom", "script": {"perInvocation": [[ret_step(v)] for v in outcomes]}}
        if not loop:  # only a call with an agent is asked (P37)
            doc.setdefault("agents", [{"id": "a1"}])
            run["calls"][-1]["agent"] = doc["agents"][0]["id"]
        listeners.append({"id": f"L{len(listeners) + 1}", "event": "tools/pre-execute", "prepend": True,
                          "script": {"steps": list(DELEGATE), "byCall": {calls[-1]: [ret_step({"kind": "ask"})]}}})
        hot_ids.add(listeners[-1]["id"])
    else:
        approval = None
    decision = draw(value_post_decisions)
    if decision is not None:
        listeners.append({"id": f"L{len(listeners) + 1}", "event": "tools/post-execute", "prepend": True,
                          "script": [ret_step(decision)]})
        hot_ids.add(listeners[-1]["id"])
    return approval


def ret_step(value: Any) -> dict[str, Any]:
    return {"do": "return", "value": value}


def spared_by_restriction(doc: dict[str, Any]) -> None:
    """An agent that restricts ``t1`` registers its own ``t1``, and its child calls it: the
    restriction hides every inherited definition of the name, the ancestor's scoped one as
    well as the global one, so the child's call is an unknown tool (P56, revision 3). An
    implementation that hides inherited global tools only (upstream's bug before
    43f3324a7b) runs the ancestor's definition, blamed on P56 (``blame.misresolved``);
    ``spared_finalizer`` may give the definition a finalizeContent, drawn last, which such an
    implementation captures at entry (P26)."""
    child = next((a for a in doc.get("agents", []) if "parent" in a), None)
    if child is None:
        return
    parent = next(a for a in doc["agents"] if a["id"] == child["parent"])
    parent["restrict"] = {"deny": ["t1"]}
    doc["tools"].append({"name": "t1", "id": SPARED, "scope": parent["id"],
                         "body": [{"do": "return", "value": "scoped"}]})
    first = doc["run"]["calls"][0]
    first.update(name="t1", agent=child["id"])
    first.pop("aborted", None)


SPARED = "t1@spared"
SPARED_FINALIZER = [{"do": "return", "value": [text("from the spared definition's finalizer")]}]


def spared_finalizer(draw: Any, doc: dict[str, Any]) -> None:
    """Now and then a finalizeContent of the hidden definition (``spared_by_restriction``),
    which a call that resolves it captures at entry (P26): where an implementation spares
    the definition, the difference may show only at a later stage (a wrapper's result, a
    post-execute decision, the finalizer), and blame puts it down to the resolution (P56,
    ``blame.misresolved``). Drawn after every other choice of the draw, so the draw keeps them."""
    spared = next((t for t in doc["tools"] if t.get("id") == SPARED), None)
    if spared is not None and draw(weighted((1, False), (1, True))):
        spared["finalizeContent"] = copy.deepcopy(SPARED_FINALIZER)


def observed_raw_arguments(draw: Any, doc: dict[str, Any], listeners: list[dict[str, Any]],
                           guards: list[dict[str, Any]]) -> None:
    """A later block carries a raw argument text at P16's boundaries (the focus aims the
    first block at valid arguments), and every tool a block with unusual arguments calls
    observes them first: a parse that differs shows only where something reads it. Or an
    extra block calls a tool of its own that every participant lets through, so that its
    body reads what the loop parsed."""
    blocks = doc["run"]["blocks"]
    if len(blocks) > 1 and draw(weighted((1, False), (1, True))):
        k = draw(st.integers(1, len(blocks) - 1))
        blocks[k]["arguments"] = draw(hot_raw_arguments)
    elif doc["run"].get("finish") != "max-tokens" and draw(weighted((1, False), (2, True))):
        bid = f"A{len(blocks) + 1}"
        blocks.append({"id": bid, "name": "parse", "arguments": draw(weighted((2, st.sampled_from(RAW_PARSES)),
                                                                              (1, st.sampled_from(RAW_BOUNDARIES))))})
        doc["tools"].append({"name": "parse", "body": [{"do": "observe", "what": "args"}, {"do": "return", "value": 1}]})
        for holder, plain in [*((l, [] if l["event"] == "tools/result" else list(DELEGATE)) for l in listeners),
                              *((g, [{"do": "return", "value": UNDEF}]) for g in guards)]:
            script = holder.get("script")
            if script is None:
                continue
            b = {"steps": script} if isinstance(script, list) else dict(script)
            b["byCall"] = {**b.get("byCall", {}), bid: copy.deepcopy(plain)}
            holder["script"] = b
    unusual = {b["name"] for b in blocks if b["arguments"] != '{"x":1}'}
    for tool in doc["tools"]:
        if tool["name"] in unusual and not has_step(tool["body"], "observe"):
            tool["body"] = prepend_steps(tool["body"], [{"do": "observe", "what": "args"}])


def layered_guards(draw: Any, doc: dict[str, Any], guards: list[dict[str, Any]], loop: bool) -> None:
    """The guards focus, where the agents form a chain: the first call's agent is the
    innermost, with a denying guard in an ancestor's layer and another in its own (P45:
    the farthest ancestor's layer first); or a guard that registers a later, unregistered
    one during the pass, which then denies, and maybe unregisters one not reached yet (P45:
    tables are read live)."""
    chain = [a["id"] for a in doc.get("agents", []) if "parent" in a]
    run = doc["run"]
    if chain and draw(weighted((1, False), (2, True))):
        inner = chain[-1]
        outer = next(a["parent"] for a in doc["agents"] if a["id"] == inner)
        n = len(guards)
        guards += [{"id": f"G{n + 1}", "scope": inner, "script": [{"do": "return", "value": "inner layer says no"}]},
                   {"id": f"G{n + 2}", "scope": outer, "script": [{"do": "return", "value": "outer layer says no"}]}]
        if loop:
            run["agent"] = inner
        else:
            run["calls"][0]["agent"] = inner
    elif draw(weighted((1, False), (1, True))):
        n = len(guards)
        late = {"id": f"G{n + 2}", "registered": False, "script": [{"do": "return", "value": "registered late"}]}
        first = [{"do": "register", "ref": late["id"]}, {"do": "return", "value": UNDEF}]
        guards += [{"id": f"G{n + 1}", "script": first}, late]
        if draw(weighted((1, False), (1, True))):
            # and unregisters a guard the pass has not reached yet, which is then never asked (P45)
            doomed = {"id": f"G{n + 3}", "script": [{"do": "return", "value": "should never be asked"}]}
            if doc.get("agents"):
                doomed["scope"] = doc["agents"][0]["id"]
            first.insert(1, {"do": "unregister", "ref": doomed["id"]})
            guards.append(doomed)


def has_step(v: Any, do: str) -> bool:
    """Whether any script inside ``v`` (a part of a scenario document) has a ``do`` step."""
    if isinstance(v, list):
        return any(has_step(x, do) for x in v)
    if isinstance(v, dict):
        return v.get("do") == do or any(has_step(x, do) for x in v.values())
    return False


def prepend_steps(behavior: Any, steps: list[dict[str, Any]]) -> Any:
    """``behavior`` with ``steps`` in front of each of its scripts."""
    if isinstance(behavior, list):
        return [*steps, *behavior]
    out = dict(behavior)
    if "steps" in out:
        out["steps"] = [*steps, *out["steps"]]
    if "byCall" in out:
        out["byCall"] = {k: [*steps, *v] for k, v in out["byCall"].items()}
    if "perInvocation" in out:
        out["perInvocation"] = [[*steps, *v] for v in out["perInvocation"]]
    return out


def aim_first_call(doc: dict[str, Any], loop: bool, keep_arguments: bool = False) -> None:
    """Point the first call at a registered ``t1`` with valid arguments and a live caller,
    so that a focused scenario's participants actually get to act on it."""
    doc["tools"][0].pop("registered", None)
    run = doc["run"]
    if loop:
        run["blocks"][0]["name"] = "t1"
        if not keep_arguments:
            run["blocks"][0]["arguments"] = '{"x":1}'
        run.pop("aborted", None)
    else:
        first = run["calls"][0]
        first["name"] = "t1"
        if not keep_arguments:
            first["arguments"] = {"x": 1}
        first.pop("aborted", None)
        first.pop("parent", None)


def quiet_calls(doc: dict[str, Any], quieted: list[str], foci: set[str], hot_ids: set[str],
                listeners: list[dict[str, Any]], guards: list[dict[str, Any]], loud_output: bool = False) -> None:
    """Give every participant outside the focus plain behavior for the ``quieted`` calls
    only (delegate, abstain, succeed), so that the focused participants decide their fate.
    The other calls keep the drawn behaviors; with ``loud_output`` so do the output
    projections of the quieted body's success (a render that throws meets the focus)."""
    def quiet(holder: dict[str, Any], key: str, steps: list[dict[str, Any]]) -> None:
        b = holder.get(key)
        if b is None:
            return
        b = {"steps": b} if isinstance(b, list) else dict(b)
        b["byCall"] = {**b.get("byCall", {}), **{cid: copy.deepcopy(steps) for cid in quieted}}
        holder[key] = b

    for l in listeners:
        if l["id"] not in hot_ids:
            quiet(l, "script", [] if l["event"] == "tools/result" else list(DELEGATE))
    if "guards" not in foci:
        for g in guards:
            quiet(g, "script", [{"do": "return", "value": UNDEF}])
    t1 = doc["tools"][0]
    if "body" not in foci:
        quiet(t1, "body", [{"do": "return", "value": 1}])
        t1.pop("define", None)
        t1.get("output", {}).pop("schema", None)
    if "body" not in foci and not loud_output:
        quiet(t1.get("output", {}), "render", [{"do": "return", "value": [text("ok")]}])
        quiet(t1.get("output", {}), "presentationMeta", [{"do": "return", "value": {"summary": 1}}])
    if "finalize" not in foci:
        quiet(t1, "finalizeContent", [{"do": "return", "value": UNDEF}])


def abort_recipe(doc: dict[str, Any], at: str, listeners: list[dict[str, Any]], guards: list[dict[str, Any]],
                 loop: bool) -> bool:
    """Abort the first call's caller at checkpoint ``at``: prepend the participant that
    does it (so it runs first), and give ``t1`` a body that succeeds. Returns whether the
    timeout policy is needed."""
    t1 = doc["tools"][0]
    run = doc["run"]

    def listener(event: str, steps: list[dict[str, Any]]) -> None:
        listeners.append({"id": f"L{len(listeners) + 1}", "event": event, "prepend": True, "script": steps})

    if at not in ("entry", "failure-kept"):
        t1["body"] = [{"do": "return", "value": 1}]
        t1.pop("define", None)
        t1.get("output", {}).pop("schema", None)
    match at:
        case "entry":
            if loop:
                run["aborted"] = True
            else:
                run["calls"][0]["aborted"] = True
        case "approval-cancelled":
            listener("tools/pre-execute", [{"do": "return", "value": {"kind": "ask"}}])
            first = run["blocks"][0] if loop else run["calls"][0]
            if not loop and doc.get("agents"):
                first["agent"] = doc["agents"][0]["id"]
        case "guard-denial":
            listener("tools/pre-execute", [FRESH_SIGNAL, ABORT_CALLER, {"do": "return", "value": {"kind": "allow"}}])
            guards.insert(0, {"id": f"G{len(guards) + 1}", "script": [{"do": "return", "value": "guard says no"}]})
        case "after-guards":  # with the record's signal replaced: the checkpoint reads the caller's (P52)
            listener("tools/pre-execute", [FRESH_SIGNAL, ABORT_CALLER, *DELEGATE])
        case "replaced":  # the record's signal replaced and aborted, the caller's not (P52)
            listener("tools/pre-execute", [*ABORT_REPLACED, *DELEGATE])
        case "at-launch":
            listener("tools/execute", [{"do": "set-signal", "signal": "w1"}, {"do": "abort", "signal": "w1"},
                                       *DELEGATE])
        case "in-body":
            t1["body"] = [ABORT_CALLER, {"do": "return", "value": 1}]
        case "after-execute":
            listener("tools/execute", [{"do": "next"}, ABORT_CALLER, {"do": "return-next"}])
        case "after-post":
            listener("tools/post-execute", [ABORT_CALLER, *DELEGATE])
        case "timeout":
            t1["timeoutMs"] = 10
            t1["body"] = [{"do": "sleep", "ms": 30}, {"do": "return", "value": 1}]
            return True
        case "failure-kept":
            t1["body"] = [{"do": "throw", "value": err("body failed")}]
            listener("tools/execute", [{"do": "next"}, ABORT_CALLER, {"do": "return-next"}])
        case "timed":  # from outside every participant, while the body runs (P58, P61, P112)
            t1["body"] = [{"do": "sleep", "ms": 30}, {"do": "return", "value": 1}]
            if loop:
                run["cancelAt"] = {"ms": 5, "keepInbox": True}
            else:
                run["calls"][0]["abortAt"] = 5
    return False
