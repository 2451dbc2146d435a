"""Side calls: focused recipes appended to a drawn scenario, after every other draw.

The wide strategy's ``values`` focus takes over every call of its draw (each call goes to
``t1``, which throws a different value per call): in the default run's 100 draws it
reached more oracle branches but cost fault-catalogue catches, because the calls it
rewrote were the ones that met the faults. A side call leaves the drawn calls alone. It is
one more direct call, after the drawn ones, of a tool of its own (``tv``) that no drawn
step names; every drawn participant steps aside for it (delegates, abstains), so that only
the recipe's own participants decide its fate:

- ``tv``'s body throws a value the spec turns into text (P9: String of it) or succeeds;
- a post-execute listener of its own decides that call alone (P80, P81, P82: an accept
  with a value on a failure or a success, P83, P84: a block whose feedback holds null or
  primitive blocks, P85: contexts beside a value);
- the last side call may be asked about (P37, P38: with a reason and no service), answered
  by a custom service outside the vocabulary (P41: rendered as JSON text) or granted, and
  then denied by a guard of its own (P44);
- a pre-execute listener of its own tries writes the spec refuses or allows, each caught:
  an input field that is a getter and below it (P23), through a primitive or a nullish
  value, into the record's own and identity properties and its arguments (P24, P25);
- a ``tools/result`` observer deletes from the frozen record (P99);
- with the reference profile, guards registered by that listener for this call alone, the
  first unregistering one the pass has not reached and registering one it then reaches
  (P45: the tables are read live).
- before them, the value probes (``conformance.strategies.value_probes``): calls of a tool
  of their own (``tp``), each handing the pipeline one rarer value shape, and one asked
  about with an outcome whose JSON text meets a cycle, a shared object or a throwing getter.

Because the recipe draws last, each of the default run's draws keeps every choice it made
before (the draws are independent, each from its own seed), and the drawn calls run as
they did: the recipe's participants step aside for them (delegate, abstain, observe), so
they add observations to those calls and change no decision.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import DELEGATE

from dsh_conformance.strategies.basics import UNDEF, err, weighted
from dsh_conformance.strategies.recipes import TO_JSON_TEXT, TO_MESSAGE, value_post_decisions
from dsh_conformance.strategies.value_probes import (
    ASKED_CALL,
    PROBE_CALLS,
    PROBE_TOOL,
    asked_probe,
    outcome_probes,
    probe_listeners,
    probes,
)

SIDE_TOOL = "tv"
SIDE_AGENT = "av"


def mentions_ask(v: Any) -> bool:
    """Whether any step or value inside ``v`` is an ask decision (a call that asks meets
    whatever approval service the scenario has: the recipe adds one only where none asks)."""
    if isinstance(v, list):
        return any(mentions_ask(x) for x in v)
    if isinstance(v, dict):
        return v.get("kind") == "ask" or any(mentions_ask(x) for x in v.values())
    return False


def step_aside(holder: dict[str, Any], key: str, calls: list[str], steps: list[dict[str, Any]]) -> None:
    """``holder[key]``'s script with ``steps`` for the side ``calls`` only."""
    b = holder.get(key)
    if b is None:
        return
    b = {"steps": b} if isinstance(b, list) else dict(b)
    b["byCall"] = {**b.get("byCall", {}), **{cid: copy.deepcopy(steps) for cid in calls}}
    holder[key] = b


# What a side call's body does, besides throwing a drawn value: succeed with a value that
# reaches one object twice, inside a null-prototype object's entries (P13: copied per
# reach), or sleep until the very moment its caller aborts (virtual time: the abort's
# timer was set first, so it fires first, P52).
SHARED_RESULT = {"$js": "null-proto", "entries": {
    "a": {"$js": "shared", "id": "sv1", "value": {"k": [1]}}, "b": {"$js": "shared", "id": "sv1"}}}
TIMED = 3
# One thrown array whose String joins the String of every kind of element (P9: numbers in
# each notation, booleans, nullish and holes, wrappers and instances, errors with and
# without a name), and one approval outcome whose JSON text holds every kind JSON.stringify
# writes or drops (P41: true, false, -0, toJSON, instances, promises, errors, an object
# reached twice), beside the drawn single values.
EVERY_ELEMENT = [1e21, 123456789012, 0.000123, -0.5, 1.5e-7, 2.5e25, True, False, None, UNDEF, {"$js": "hole"},
                 {"$js": "-0"}, {"$js": "NaN"}, {"$js": "Infinity"}, {"$js": "instance", "class": "URL"},
                 {"$js": "instance", "class": "Map"}, {"$js": "instance", "class": "Point"},
                 {"$js": "instance", "class": "RegExp"}, {"$js": "promise", "resolves": 1},
                 err("", "TypeError"), {"$js": "error", "class": "Error", "message": "nameless", "name": ""},
                 "s", [2, [3]]]
EVERY_JSON_KIND = {"t": True, "f": False, "z": -0.0, "l": [UNDEF, 1.5, -0.0], "u": {"$js": "instance", "class": "URL"},
                   "m": {"$js": "instance", "class": "Map"}, "p": {"$js": "promise", "resolves": 1},
                   "e": err("in data"), "a": {"$js": "shared", "id": "sv2", "value": {"k": 1}},
                   "b": {"$js": "shared", "id": "sv2"}}
BIGINT_IN_JSON = {"n": {"$js": "bigint", "value": "1"}}


def side_calls(draw: Any, doc: dict[str, Any], live_tables: bool) -> None:
    """Append one to three side calls to a direct run (see the module's doc), in place;
    ``live_tables``: whether a guard may unregister and register others during the pass
    (P45, a reference rule: drawn only where the reference profile is checked)."""
    run = doc["run"]
    taken = {c["callId"] for c in run["calls"]}
    n = draw(st.integers(1, 3))
    calls = [f"v{i + 1}" for i in range(n)]
    assert not taken & set(calls)
    bodies = draw(st.lists(weighted(
        (4, st.builds(lambda v: [{"do": "throw", "value": v}], st.sampled_from(TO_MESSAGE))),
        (2, st.just([{"do": "throw", "value": EVERY_ELEMENT}])),
        (1, st.just([{"do": "return", "value": SHARED_RESULT}])),
        (1, st.just([{"do": "sleep", "ms": TIMED}, {"do": "return", "value": 1}])),
    ), min_size=n, max_size=n))
    doc["tools"].append({"name": SIDE_TOOL, "id": SIDE_TOOL, "body": {"perInvocation": bodies}})
    drawn_probes = draw(probes)  # before the side calls, which keep their places at the end
    assert not taken & set(PROBE_CALLS)
    doc["tools"].append({"name": PROBE_TOOL, "id": PROBE_TOOL, "body": {
        "steps": [{"do": "return", "value": 1}], "byCall": {p: body for p, (body, _, _) in zip(PROBE_CALLS, drawn_probes)}}})
    run["calls"].extend({"callId": p, "name": PROBE_TOOL, "arguments": {"x": 1}} for p in PROBE_CALLS)
    for l in doc.get("listeners", []):
        step_aside(l, "script", [*PROBE_CALLS, *calls], [] if l["event"] == "tools/result" else list(DELEGATE))
    for g in doc.get("guards", []):
        step_aside(g, "script", [*PROBE_CALLS, *calls], [{"do": "return", "value": UNDEF}])
    doc.setdefault("listeners", []).extend(probe_listeners(drawn_probes))
    for c, body in zip(calls, bodies):
        call: dict[str, Any] = {"callId": c, "name": SIDE_TOOL, "arguments": {"x": 1}}
        if body[0]["do"] == "sleep":
            call["abortAt"] = TIMED
        run["calls"].append(call)
    listeners = doc.setdefault("listeners", [])
    decision = draw(value_post_decisions)
    if decision is not None:
        listeners.append({"id": "Lv-post", "event": "tools/post-execute", "script": {
            "steps": list(DELEGATE), "byCall": {c: [{"do": "return", "value": decision}] for c in calls}}})
    # the record is frozen before tools/result: deleting a property it lacks is no error,
    # one it has (its own, added by a write below, or an identity field) is (P99, P24)
    deletes = [{"do": "mutate", "target": f"record.{k}", "op": "delete", "catch": True}
               for k in ("absent", "custom", "callId")]
    listeners.append({"id": "Lv-result", "event": "tools/result",
                      "script": {"steps": [], "byCall": {c: list(deletes) for c in calls}}})
    _asked(draw, doc, listeners, run["calls"][-1])
    if draw(weighted((1, False), (1, True))):
        _writes(doc, listeners, run["calls"][-n], live_tables)
    _asked_probe(draw, doc)


def _asked_probe(draw: Any, doc: dict[str, Any]) -> None:
    """The asked value probe (``value_probes.asked_probe``), last: every participant there
    is by now steps aside for it, the ones this recipe added included (their own steps
    for other calls delegate or abstain already)."""
    assert ASKED_CALL not in {c["callId"] for c in doc["run"]["calls"]}
    outcome = draw(outcome_probes)
    others = list(doc.get("listeners", []))
    asked = asked_probe(doc, outcome, mentions_ask(doc))
    if asked is None:
        return
    for l in others:
        step_aside(l, "script", [ASKED_CALL], [] if l["event"] == "tools/result" else list(DELEGATE))
    for g in doc.get("guards", []):
        step_aside(g, "script", [ASKED_CALL], [{"do": "return", "value": UNDEF}])
    calls = doc["run"]["calls"]
    calls.insert(next(i for i, c in enumerate(calls) if c["name"] == SIDE_TOOL), asked)  # before the tv calls


def _asked(draw: Any, doc: dict[str, Any], listeners: list[dict[str, Any]], call: dict[str, Any]) -> None:
    """The last side call is asked about, in place: with a reason where the scenario has no
    approval service (P37, P38: denied with that reason); or answered by a custom service
    (the scenario's own, which then steps aside for it, or, where nothing drawn asks, one
    of the recipe's) with an outcome outside the vocabulary (P41: rendered as JSON text),
    or granted, and a guard then denies it (P36, P44: a grant does not skip the guards)."""
    how = draw(weighted((1, "none"), (2, "reason"), (2, "outcome"), (2, "granted")))
    approval = doc.get("approval")
    cid = call["callId"]
    if how == "none" or (how == "reason" and approval is not None):
        return
    if how in ("outcome", "granted"):
        outcome = "allowed-once" if how == "granted" else draw(weighted(
            (2, st.sampled_from(TO_JSON_TEXT)), (2, st.just(EVERY_JSON_KIND)), (1, st.just(BIGINT_IN_JSON))))
        answer = [{"do": "return", "value": outcome}]
        if approval is None and not mentions_ask(doc):
            doc["approval"] = {"service": "custom", "script": answer}
        elif approval is not None and approval.get("service") == "custom":
            step_aside(approval, "script", [cid], answer)
        else:
            return
    if how == "granted":
        doc.setdefault("guards", []).append({"id": "Gv-deny", "script": {
            "steps": [{"do": "return", "value": UNDEF}], "byCall": {cid: [
                {"do": "return", "value": "denied after the grant"}]}}})
    # only a call with an agent is asked (P37): an agent of its own, which no drawn
    # participant is scoped to and no restriction names
    doc.setdefault("agents", []).append({"id": SIDE_AGENT})
    call["agent"] = SIDE_AGENT
    listeners.append({"id": "Lv-ask", "event": "tools/pre-execute", "prepend": True, "script": {
        "steps": list(DELEGATE), "byCall": {cid: [{"do": "return", "value": {"kind": "ask", "reason": "side reason"}}]}}})


# Caught writes a pre-execute listener tries on the first side call (whose name and
# arguments are getters): (target, op). Where each lands is in oracle/script.py's _refusal.
WRITES: tuple[tuple[str, str], ...] = (
    ("input.name", "set"), ("input.name", "delete"), ("input.arguments.x", "set"), ("input.name.x", "define"),
    ("record.arguments.x", "set"), ("record.agent.x", "set"), ("record.callId", "set"), ("record.callId", "define"),
    ("record.name.x", "define"), ("record.name.x", "set"), ("record.custom", "delete"), ("record.custom", "set"),
    ("record.extra", "delete"), ("args.x", "set"), ("args.x.y", "set"), ("args.x.y", "define"),
)
GETTERS = {"name": "gv-name", "arguments": "gv-args"}


def _writes(doc: dict[str, Any], listeners: list[dict[str, Any]], call: dict[str, Any], live_tables: bool) -> None:
    """The writes and, with ``live_tables``, the live guard table (see the module's doc) on
    ``call``, in place."""
    cid = call["callId"]
    call["getters"] = dict(GETTERS)
    doc.setdefault("getters", []).extend([
        {"id": GETTERS["name"], "script": [{"do": "return", "value": SIDE_TOOL}]},
        {"id": GETTERS["arguments"], "script": [{"do": "return", "value": {"x": 1}}]},
    ])
    steps = [{"do": "mutate", "target": t, "op": op, "value": "forged", "catch": True} for t, op in WRITES]
    listeners.append({"id": "Lv-write", "event": "tools/pre-execute", "prepend": True,
                      "script": {"steps": list(DELEGATE), "byCall": {cid: [*steps, *_live_guards(doc, cid, live_tables),
                                                                            *DELEGATE]}}})


def _live_guards(doc: dict[str, Any], cid: str, live_tables: bool) -> list[dict[str, Any]]:
    """The guards of the live-table recipe, in place, and the steps that register them."""
    if not live_tables:
        return []
    guards = doc.setdefault("guards", [])
    # Gv-first unregisters Gv-doomed, which the pass has not reached, and registers Gv-late,
    # which it then reaches and which denies: for this call only (later side calls go on)
    abstain = [{"do": "return", "value": UNDEF}]
    guards += [{"id": "Gv-first", "registered": False, "script": {"steps": abstain, "byCall": {cid: [
                   {"do": "unregister", "ref": "Gv-doomed"}, {"do": "register", "ref": "Gv-late"}, *abstain]}}},
               {"id": "Gv-doomed", "registered": False, "script": [{"do": "return", "value": "never asked"}]},
               {"id": "Gv-late", "registered": False,
                "script": {"steps": abstain, "byCall": {cid: [{"do": "return", "value": "registered late"}]}}}]
    return [{"do": "register", "ref": "Gv-first"}, {"do": "register", "ref": "Gv-doomed"}]
