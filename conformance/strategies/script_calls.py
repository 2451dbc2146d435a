"""Script calls: direct calls of a tool of their own (``ts``), appended after every other
draw, whose own participants run the kit's interpreter through situations a drawn
scenario seldom assembles, because each needs two or three scripted steps to meet on one
call.

Each situation is drawn on or off (swarm-style: a random non-empty subset of them), and
each is one call, or two where one hands the other something:

- ``restore``: a ``tools/execute`` wrapper replaces the record's signal, calls ``next()``,
  restores the signal and observes the record (P60: the record's own signal again), keeps
  ``next()``'s result, and tries a write below a null-prototype object inside that frozen
  result (P11); the call's ``rootCallId`` is a getter (P23: read once, at entry) and the
  pre-execute listener writes into the caller's input of a call without an agent (P23);
  the call after it has a wrapper that hands back the kept result (P63: the very object);
- ``asked``: the call asks, with a reason; the approval that answers (a custom service, or
  the shipped service's ``approval/request`` answerer) writes the record, rewrites and
  deletes fields of the request it was handed and observes it (P39: a request made for
  this ask alone), then grants (P43: the shipped service's audit pair carries the reason);
- ``define``: the body defines a property on a number inside its arguments, uncaught
  (P25: the engine's TypeError is the body's throw, P9), and a post-execute listener
  blocks with feedback that is not an array (P80, P84: the stage throws);
- ``promises``: bodies that return a rejecting promise and a hostile value (P58: the
  awaited settlement is the throw);
- ``early``: a call whose caller is aborted before it enters (P29), and one whose
  pre-execute decision's ``kind`` is a getter that throws (P35), with an ``abortAt`` timer
  its early end leaves pending; the call after it sleeps past that timer, which the
  scheduler then drops as cancelled;
- ``fused``: a ``tools/execute`` wrapper looks at a kept signal before anything is kept
  under the name (P60: no signal), replaces the record's signal, aborts the caller and
  calls ``next()``: the fusion of a caller already aborted is aborted at launch (P61); and
  a call whose body keeps the fused signal, which its wrapper looks at after the body,
  before and after it aborts its replacement (P60: detached when the body settled);
- ``writes``: a pre-execute listener writes into the caller's input: an object with an
  own enumerable and a non-enumerable property (written, rewritten and added to), and an
  array of the arguments written past its end (holes between) and deleted from (P23).

The tool's render returns one block reached twice (P13, P73). And a loop run whose
bodies wait at the gate is given a release order when it has three blocks or more (``release_in_order``).

Every drawn participant steps aside for these calls (delegates, abstains, observes
nothing), as for ``side_calls``: the drawn calls run as they did, and every choice drawn
before is kept (the recipe draws last)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import DELEGATE

from dsh_conformance.strategies.basics import UNDEF, err, text
from dsh_conformance.strategies.side_calls import mentions_ask, step_aside

SCRIPT_TOOL = "ts"
SCRIPT_AGENT = "as"
SITUATIONS = ("restore", "asked", "define", "promises", "early", "fused", "writes")
ROOT_GETTER = "gs-root"
KEPT = "ks"
EARLY_TIMER = 40  # the early call's abortAt; the sleeping call after it sleeps past it

# A result whose value is a null-prototype object (lossless: snapshotted to a plain one, P13),
# and an array with an own extra property (the wire form's ``array`` token) that a write
# into the caller's input stores where nothing reads it again (P23).
WIRE_RESULT = {"$js": "null-proto", "entries": {"k": {"tag": "t"}}}
EXTRA_ARRAY = {"$js": "array", "items": [1, 2], "extra": {"tag": "t"}}
KEPT_SIGNAL = "ks-signal"
# An object the wire form writes as a token (an own non-enumerable property), and the writes
# into the caller's input that meet it and a plain array of the arguments (P23)
HIDDEN_OBJECT = {"$js": "object", "entries": {"k": 1}, "hidden": {"h": 2}}
THROWN_ERROR = {"$js": "error", "class": "TypeError", "message": "m"}
INPUT_WRITES = [
    {"do": "mutate", "target": "input.extra", "value": HIDDEN_OBJECT, "catch": True},
    *({"do": "mutate", "target": f"input.extra.{k}", "value": "w", "catch": True} for k in ("k", "h", "n")),
    {"do": "mutate", "target": "input.arguments.l.3", "value": "past the end", "catch": True},
    {"do": "mutate", "target": "input.arguments.l.0", "op": "delete", "catch": True},
    {"do": "mutate", "target": "input.arguments.l.9", "op": "delete", "catch": True},
    # Paths the way JavaScript walks them: an Error's inherited name (a string), an array
    # with own extra keys read past its end, a cycle back to its object, an element just
    # replaced; and the record's signal, whose aborted has no setter (P24).
    {"do": "mutate", "target": "input.err", "value": THROWN_ERROR, "catch": True},
    *({"do": "mutate", "target": f"input.err.{k}.x", "op": "delete", "catch": True} for k in ("name", "message")),
    {"do": "mutate", "target": "input.arr", "value": EXTRA_ARRAY, "catch": True},
    {"do": "mutate", "target": "input.arr.2.x", "op": "delete", "catch": True},
    {"do": "mutate", "target": "input.loop", "value": {"me": {"$js": "cycle", "up": 1}}, "catch": True},
    {"do": "mutate", "target": "input.loop.me.me.x", "op": "delete", "catch": True},
    {"do": "mutate", "target": "input.arguments.l.0", "value": {}, "catch": True},
    {"do": "mutate", "target": "input.arguments.l.0.x", "value": 1, "catch": True},
    {"do": "mutate", "target": "record.signal.aborted", "value": True, "catch": True},
]
# The tool's render returns one content block reached twice (P13: copied per reach, P73).
SHARED_RENDER = [{"do": "return", "value": [{"$js": "shared", "id": "ss-block", "value": text("rendered twice")},
                                            {"$js": "shared", "id": "ss-block"}]}]
REQUEST_WRITES = [
    {"do": "mutate", "target": "record.custom", "value": "from the approval", "catch": True},
    {"do": "mutate", "target": "request.reason", "value": "rewritten by the approval", "catch": True},
    {"do": "mutate", "target": "request.toolName", "op": "delete", "catch": True},
    {"do": "observe", "what": "request"},
]


def script_calls(draw: Any, doc: dict[str, Any]) -> None:
    """Append the calls of a drawn subset of ``SITUATIONS`` to a direct run, in place."""
    chosen = draw(st.lists(st.sampled_from(SITUATIONS), min_size=1, max_size=4, unique=True))
    plan = _Plan(doc)
    for situation in SITUATIONS:  # in a fixed order: the calls' order does not depend on the draw's
        if situation in chosen:
            _BUILDERS[situation](plan)
    plan.finish()


class _Plan:
    """The calls, bodies and participants of the recipe, gathered before they are written."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.calls: list[dict[str, Any]] = []
        self.bodies: dict[str, list[dict[str, Any]]] = {}  # by call: a call that ends early runs no body
        self.pre: dict[str, list[dict[str, Any]]] = {}
        self.execute: dict[str, list[dict[str, Any]]] = {}
        self.post: dict[str, list[dict[str, Any]]] = {}

    def call(self, body: list[dict[str, Any]], **fields: Any) -> str:
        cid = f"s{len(self.calls) + 1}"
        self.calls.append({"callId": cid, "name": SCRIPT_TOOL, "arguments": {"x": 1}} | fields)
        self.bodies[cid] = body
        return cid

    def finish(self) -> None:
        doc, cids = self.doc, [c["callId"] for c in self.calls]
        assert not {c["callId"] for c in doc["run"]["calls"]} & set(cids)
        doc["tools"].append({"name": SCRIPT_TOOL, "id": SCRIPT_TOOL, "output": {"render": copy.deepcopy(SHARED_RENDER)},
                             "body": {"steps": [{"do": "return", "value": 1}], "byCall": self.bodies}})
        for l in doc.get("listeners", []):
            step_aside(l, "script", cids, [] if l["event"] == "tools/result" else list(DELEGATE))
        for g in doc.get("guards", []):
            step_aside(g, "script", cids, [{"do": "return", "value": UNDEF}])
        doc["run"]["calls"].extend(self.calls)
        listeners = doc.setdefault("listeners", [])
        for lid, event, by_call in (("Ls-pre", "tools/pre-execute", self.pre), ("Ls-exec", "tools/execute", self.execute),
                                    ("Ls-post", "tools/post-execute", self.post)):
            if by_call:
                listeners.append({"id": lid, "event": event, "prepend": True,
                                  "script": {"steps": list(DELEGATE), "byCall": by_call}})


def _restore(plan: _Plan) -> None:
    cid = plan.call([{"do": "return", "value": copy.deepcopy(WIRE_RESULT)}], getters={"rootCallId": ROOT_GETTER},
                    arguments={"x": 1, "np": {"$js": "null-proto", "entries": {"k": 1}}})
    plan.doc.setdefault("getters", []).append(
        {"id": ROOT_GETTER, "script": [{"do": "return", "value": "root-from-a-getter"}]})
    plan.pre[cid] = [{"do": "mutate", "target": "input.extra", "value": copy.deepcopy(EXTRA_ARRAY), "catch": True},
                     {"do": "mutate", "target": "input.arguments.np.k", "value": 2, "catch": True}, *DELEGATE]
    plan.execute[cid] = [
        {"do": "set-signal", "signal": "ss"}, {"do": "next"}, {"do": "set-signal", "signal": "restore"},
        {"do": "observe", "what": "record"}, {"do": "keep", "what": "next", "name": KEPT},
        {"do": "mutate", "target": "result.value.k.tag", "value": "w", "catch": True}, {"do": "return-next"}]
    later = plan.call([{"do": "return", "value": 2}])
    plan.execute[later] = [{"do": "next"}, {"do": "return-kept", "name": KEPT}]


def _asked(plan: _Plan) -> None:
    """Only a call with an agent is asked (P37); the approval is the scenario's own where it
    has one (a custom service steps aside for the other calls), or one of the recipe's where
    nothing drawn asks (a drawn ask would meet it); otherwise the ask is denied for want of a
    service, with the reason (P38)."""
    doc = plan.doc
    cid = plan.call([{"do": "return", "value": "granted"}], agent=SCRIPT_AGENT)
    doc.setdefault("agents", []).append({"id": SCRIPT_AGENT})
    plan.pre[cid] = [{"do": "return", "value": {"kind": "ask", "reason": "asked by a script call"}}]
    answer = [*copy.deepcopy(REQUEST_WRITES), {"do": "return", "value": "allowed-once"}]
    approval = doc.get("approval")
    if approval is None and not mentions_ask(doc):
        doc["approval"] = {"service": "custom", "script": {"steps": [{"do": "return", "value": "rejected"}],
                                                           "byCall": {cid: answer}}}
    elif approval is not None and approval.get("service") == "custom":
        step_aside(approval, "script", [cid], answer)
    elif approval is not None:  # the shipped service: its answerers are approval/request listeners
        doc.setdefault("listeners", []).append({"id": "Ls-answer", "event": "approval/request", "prepend": True,
                                                "script": {"steps": list(DELEGATE), "byCall": {cid: answer}}})


def _define(plan: _Plan) -> None:
    cid = plan.call([{"do": "mutate", "target": "args.x.y", "op": "define", "value": 1, "catch": False}])
    plan.post[cid] = [{"do": "return", "value": {"kind": "block", "feedback": "not an array"}}]


def _promises(plan: _Plan) -> None:
    plan.call([{"do": "return", "value": {"$js": "promise", "rejects": err("rejected by the body")}}])
    plan.call([{"do": "return", "value": {"$js": "hostile"}}])


def _early(plan: _Plan) -> None:
    plan.call([{"do": "return", "value": 1}], aborted=True)
    cid = plan.call([{"do": "return", "value": 1}], abortAt=EARLY_TIMER)
    plan.pre[cid] = [{"do": "return", "value": {"kind": {"$js": "getter-throws", "message": "kind read"}}}]
    plan.call([{"do": "sleep", "ms": EARLY_TIMER + 20}, {"do": "return", "value": [text("slept")]}])


def _fused(plan: _Plan) -> None:
    cid = plan.call([{"do": "return", "value": "never run"}])
    plan.execute[cid] = [
        {"do": "observe", "what": "kept", "name": KEPT_SIGNAL},  # P60: nothing kept under the name
        {"do": "set-signal", "signal": "sf"}, {"do": "abort", "signal": "caller", "reason": "caller aborted before the body"},
        {"do": "next"}, {"do": "return-next"}]  # P60, P61: fused with a caller already aborted: aborted at launch
    cid = plan.call([{"do": "keep", "what": "signal", "name": KEPT_SIGNAL}, {"do": "return", "value": "kept"}])
    plan.execute[cid] = [  # P60: the fusion the body kept is detached when the body settles
        {"do": "set-signal", "signal": "sk"}, {"do": "next"}, {"do": "observe", "what": "kept", "name": KEPT_SIGNAL},
        {"do": "abort", "signal": "sk", "reason": "after the body"}, {"do": "observe", "what": "kept", "name": KEPT_SIGNAL},
        {"do": "return-next"}]


def _writes(plan: _Plan) -> None:
    cid = plan.call([{"do": "observe", "what": "args"}, {"do": "return", "value": 1}], arguments={"x": 1, "l": [1]})
    plan.pre[cid] = [*copy.deepcopy(INPUT_WRITES), *DELEGATE]


def release_in_order(doc: dict[str, Any]) -> None:
    """A loop run of three blocks or more whose bodies wait at the gate: release the blocks
    in their own order (no draw, so the draws before keep their choices), so that each gate
    waits for the calls before it (which, one dispatch at a time, have finished already:
    ``settle`` drops the order where one never does)."""
    blocks = [b["id"] for b in doc["run"]["blocks"]]
    if len(blocks) >= 3:  # a run of two keeps no order: its gates pass at once
        doc["run"]["release"] = blocks


_BUILDERS = {"restore": _restore, "asked": _asked, "define": _define, "promises": _promises, "early": _early,
             "fused": _fused, "writes": _writes}
