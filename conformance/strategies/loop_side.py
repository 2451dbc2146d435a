"""Loop side steps: focused recipes appended to a drawn loop step, after every other draw.

The loop's rare branches need two or three features in one step: contexts queued by more
than one source and then entered at a step start (P110, P111), a concluded step whose
queue a pre-step listener empties (P106), a commit-side failure while another dispatch is
in flight (P108), an ancestor's scoped tool under a restriction (P56), a post-execute
decision for a tool that went away (P81, P82), the timeout wrapper meeting a signal that is
aborted already (P70), a step aborted before its batch (P107). Uniform draws rarely put
them together; here each loop draw turns a random subset of them on (swarm style), each
one more tool-call block of a tool of its own (``tq``, ``tc``, ``ta``, ``tg``, ``tt``,
``tp``) that no drawn block names, after the drawn blocks. Every drawn participant steps
aside for these blocks (waterfalls delegate, guards abstain, observers do nothing), as for
the direct runs' side calls (``side_calls``), so the drawn blocks run as they did and the
recipe's own participants decide the side blocks' fate:

- ``fifo``: ``tq``'s first body injects (or steers) a message and defers two contexts, a
  second one defers then injects: the next step enters them in time order (P111: the
  injection made inside a body precedes that call's contexts);
- ``conclude``: ``tc``'s body concludes the turn and defers a context, so the turn
  continues for what is queued (P106); a pre-step listener of the recipe's may then enter
  no message at all, and the concluded turn ends there (P106, P110);
- ``spare``: ``ta`` is registered globally and in an ancestor's scope of the loop agent (a
  root ancestor added where the agent has none), and a restriction on the chain may deny
  it: the ancestor's definition runs, or the restriction hides it as well as the global one
  and the call is an unknown tool (P56, revision 3; an implementation that spares scoped
  definitions, upstream's bug before 43f3324a7b, runs it);
- ``gone``: ``tg``'s body unregisters ``tg``, and a post-execute listener of the recipe's
  accepts a value for it: the value's tool is unknown now (P81, P82);
- ``deadline``: ``tt`` has a timeout under the timeout policy, and a pre-execute listener of
  the recipe's replaces the record's signal with an aborted one: the deadline is aborted at
  once and the body never launched (P70, P61);
- ``pool``: last, after an exclusive side block, two or three parallel ``tp`` blocks with a
  pool of two: the first defers two contexts with one id and commits while the second still
  sleeps, the acceptance throws, and the loop starts no further call and waits for the
  second to settle before the turn fails (P108, P113). Drawn only where no two drawn blocks
  can form a pool (``maxParallelToolCalls`` is 1 for drawn steps: see ``runs.loop_runs``)
  and no cancel is timed; where drawn pre-step listeners would have met the next step, a
  next turn gives them its first step instead;
- ``pre-aborted``, now and then instead of all of these: the step is aborted before its
  batch, every block gets a synthetic pair (P107).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import DELEGATE

from dsh_conformance.strategies.basics import UNDEF, message, weighted
from dsh_conformance.strategies.runs import NEXT_TURN

FEATURES = ("fifo", "conclude", "spare", "gone", "deadline", "pool")
SIDE_TOOLS = ("tq", "tc", "ta", "tg", "tt", "tp")
SIDE_AGENT = "aq"
PRE_STEP = "agent/pre-step"
# Message and signal ids of their own: drawn ones use m1..m7, s1, s2, w1.
FIFO_FIRST = [{"do": "inject", "message": message("q1", "injected in the body")},
              {"do": "defer-context", "message": message("q2", "deferred first")},
              {"do": "defer-context", "message": message("q3", "deferred second")}]
FIFO_SECOND = [{"do": "defer-context", "message": message("q4", "deferred before the steer")},
               {"do": "steer", "message": message("q5", "steered after the context")}]
DUPLICATE = {"do": "defer-context", "message": message("qd", "one id twice")}
ENTER_NOTHING = [{"do": "next"}, {"do": "return", "value": {"kind": "enter", "messages": []}}]
PASS_THROUGH = [{"do": "observe", "what": "request"}, {"do": "next"}, {"do": "return-next"}]
ABORTED_SIGNAL = [{"do": "set-signal", "signal": "sq1"}, {"do": "abort", "signal": "sq1"}]
REJECT = [{"do": "return", "value": {"kind": "reject"}}]
ON: Any = weighted((1, False), (1, True))  # swarm: each feature on in half the draws


def loop_side(draw: Any, doc: dict[str, Any], aborting: bool) -> None:
    """Append the side blocks of a random subset of ``FEATURES`` to a loop run (see the
    module's doc), in place; or, where the drawn step aborts during its first call
    (``aborting``: the abort focus), now and then abort it before its batch instead."""
    run = doc["run"]
    if run.get("finish") == "max-tokens" or run.get("aborted"):
        return  # nothing of the step runs
    if aborting and draw(ON):
        # the drawn step aborts in its first call already (the abort focus): now and then
        # the step is aborted before its batch instead (P107: every block gets a synthetic pair)
        run["aborted"] = True
        return
    chosen = [f for f in FEATURES if draw(ON)]
    if "pool" in chosen and not _pool_allowed(doc):
        chosen.remove("pool")
    if "deadline" in chosen and not doc.get("timeoutPolicy") and any("timeoutMs" in t for t in doc["tools"]):
        chosen.remove("deadline")  # the policy would change what a drawn timeout does
    if not chosen:
        return
    if chosen == ["pool"]:
        chosen.insert(0, "fifo")  # the pool starts after an exclusive block (see _pool_allowed)
    ordered = draw(st.permutations([f for f in chosen if f != "pool"])) + (["pool"] if "pool" in chosen else [])
    blocks: list[str] = []
    own: dict[str, dict[str, list[dict[str, Any]]]] = {"tools/pre-execute": {}, "tools/post-execute": {}}
    for feature in ordered:
        low, high = _BLOCKS[feature]
        ids = [f"S{len(blocks) + i + 1}" for i in range(draw(st.integers(low, high)) if high > low else low)]
        blocks += ids
        run["blocks"] += [{"id": b, "name": _TOOL[feature], "arguments": '{"x":1}'} for b in ids]
        _RECIPES[feature](draw, doc, ids, own)
    step_aside(doc, blocks)
    for event, by_call in own.items():
        if by_call:
            doc.setdefault("listeners", []).append({"id": f"Lq-{event.split('/')[1]}", "event": event,
                                                    "script": {"steps": list(DELEGATE), "byCall": by_call}})


def step_aside(doc: dict[str, Any], blocks: list[str]) -> None:
    """Every drawn listener and guard does the plain thing for the side ``blocks`` only."""
    for holder in [*doc.get("listeners", []), *doc.get("guards", [])]:
        script = holder.get("script")
        if script is None or holder.get("event") == PRE_STEP:
            continue  # a default script is the plain thing already; pre-step runs for no call
        plain = ([] if holder.get("event") == "tools/result" else list(DELEGATE)) if "event" in holder \
            else [{"do": "return", "value": UNDEF}]
        b = {"steps": script} if isinstance(script, list) else dict(script)
        b["byCall"] = {**b.get("byCall", {}), **{cid: copy.deepcopy(plain) for cid in blocks}}
        holder["script"] = b


def _pool_allowed(doc: dict[str, Any]) -> bool:
    """Whether a pool of two leaves the drawn blocks as they ran: no two consecutive drawn
    blocks name concurrency-safe tools (so no drawn pool forms and no drawn bodies overlap),
    and no cancel is timed (it would land in the side pool at a drawn time)."""
    run = doc["run"]
    if run.get("cancelAt") is not None:
        return False
    safe = {t["name"] for t in doc["tools"] if "concurrencySafe" in t}
    names = [b["name"] for b in run["blocks"]]
    return not any(a in safe and b in safe for a, b in zip(names, names[1:]))


def _fifo(draw: Any, doc: dict[str, Any], ids: list[str], own: Any) -> None:
    first = copy.deepcopy(FIFO_FIRST)
    if draw(ON):
        first[0]["do"] = "steer"
    doc["tools"].append({"name": "tq", "body": {"perInvocation": [
        [*first, {"do": "return", "value": 1}], [*copy.deepcopy(FIFO_SECOND), {"do": "return", "value": 2}]]}})


def _conclude(draw: Any, doc: dict[str, Any], ids: list[str], own: Any) -> None:
    doc["tools"].append({"name": "tc", "output": {"presentationMeta": [{"do": "return", "value": {"summary": "concluded"}}]},
                         "body": [{"do": "conclude-turn"},
                                  {"do": "defer-context", "message": message("qc", "after concluding")},
                                  {"do": "return", "value": 1}]})
    first = draw(weighted((1, ENTER_NOTHING), (1, PASS_THROUGH)))
    later = draw(weighted((1, PASS_THROUGH), (1, REJECT)))  # a next turn's first step (P110)
    doc.setdefault("listeners", []).append({"id": "Lq-step", "event": PRE_STEP, "prepend": True,
                                            "script": {"perInvocation": copy.deepcopy([first, later])}})


def _spare(draw: Any, doc: dict[str, Any], ids: list[str], own: Any) -> None:
    agents = doc.setdefault("agents", [])
    by_id = {a["id"]: a for a in agents}
    chain = [doc["run"]["agent"]]
    while by_id[chain[-1]].get("parent") is not None:
        chain.append(by_id[chain[-1]]["parent"])
    if len(chain) == 1:  # a root ancestor of the recipe's own: its layer holds nothing else
        agents.insert(0, by_id.setdefault(SIDE_AGENT, {"id": SIDE_AGENT}))
        by_id[chain[0]]["parent"] = SIDE_AGENT
        chain.append(SIDE_AGENT)
    owner = chain[draw(st.integers(1, len(chain) - 1))]
    doc["tools"] += [{"name": "ta", "body": [{"do": "return", "value": "global"}]},
                     {"name": "ta", "id": "ta@ancestor", "scope": owner, "body": [{"do": "return", "value": "scoped"}]}]
    unrestricted = [a for a in chain if "restrict" not in by_id[a]]
    where = draw(weighted((1, None), (2, st.sampled_from(unrestricted)))) if unrestricted else None
    if where is not None:  # P56: the restriction hides the global and the ancestor's ta
        by_id[where]["restrict"] = {"deny": ["ta"]}


def _gone(draw: Any, doc: dict[str, Any], ids: list[str], own: Any) -> None:
    doc["tools"].append({"name": "tg", "body": [{"do": "unregister", "ref": "tg"}, {"do": "return", "value": 1}]})
    value = draw(st.sampled_from([2, {"n": 1}]))
    own["tools/post-execute"].update({b: [{"do": "return", "value": {"kind": "accept", "value": value}}] for b in ids})


def _deadline(draw: Any, doc: dict[str, Any], ids: list[str], own: Any) -> None:
    doc["timeoutPolicy"] = True
    doc["tools"].append({"name": "tt", "timeoutMs": 50, "body": [{"do": "observe"}, {"do": "return", "value": "ran"}]})
    own["tools/pre-execute"].update({b: [*copy.deepcopy(ABORTED_SIGNAL), {"do": "return", "value": {"kind": "allow"}}]
                                     for b in ids})


def _pool(draw: Any, doc: dict[str, Any], ids: list[str], own: Any) -> None:
    doc["run"]["maxParallelToolCalls"] = 2
    if any(l["event"] == PRE_STEP for l in doc.get("listeners", [])):
        # the failure ends the tool step's turn (P108): a next turn's first step is where
        # the drawn pre-step listeners and what was queued still meet (P112)
        doc["run"].setdefault("nextTurn", copy.deepcopy(NEXT_TURN))
    first, second, *rest = ids
    by_call = {first: [copy.deepcopy(DUPLICATE), copy.deepcopy(DUPLICATE), {"do": "sleep", "ms": 5},
                       {"do": "return", "value": 1}],
               second: [{"do": "sleep", "ms": 20}, {"do": "observe", "what": "record"}, {"do": "return", "value": 2}]}
    doc["tools"].append({"name": "tp", "concurrencySafe": [{"do": "return", "value": True}],
                         "body": {"steps": [{"do": "return", "value": 3}], "byCall": by_call}})


_TOOL = dict(zip(FEATURES, SIDE_TOOLS))
_BLOCKS = {"fifo": (1, 2), "conclude": (1, 1), "spare": (1, 1), "gone": (1, 1), "deadline": (1, 1), "pool": (2, 3)}
"""How many blocks each feature's tool gets (fewest, most)."""
_RECIPES = {"fifo": _fifo, "conclude": _conclude, "spare": _spare, "gone": _gone, "deadline": _deadline, "pool": _pool}
