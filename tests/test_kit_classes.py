"""Issue 38: the scenario language means one thing in both kits. The three classes of
disagreement found by a JavaScript port are fixed as classes, here on the Python kit (the
oracle's interpreter): a deleted or redefined accessor of the caller's input is not read
again, a write into a value token does what the decoded JavaScript value does (the
``hostile`` token throws on every operation, writes included: spec revision 3, 3.11), and a
generated Code Mode program awaits every call it starts (no verdict on microtask order).
``tests/test_kit_agreement.py`` runs both kits side by side."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_conformance.kit.scenario import parse_scenario
from dsh_conformance.oracle.run import run_scenario
from dsh_conformance.strategies.citation import ALL_PROFILES
from dsh_conformance.strategies.code_mode import programs
from dsh_conformance.strategies.draws import draw_examples

TOOL = {"name": "t1", "body": [{"do": "return", "value": 1}]}


def _mutates(doc: dict[str, Any]) -> tuple[list[tuple[str, str, str]], Any]:
    trace = run_scenario(parse_scenario(doc))
    out = [(o.value["op"], o.value["target"], o.value["outcome"]) for o in trace.observations if o.what == "mutate"]
    return out, trace


def _observer(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "R1", "event": "tools/result", "script": steps}


def test_a_deleted_input_getter_is_not_read_again() -> None:
    """P23: the caller's input is a plain object; deleting its `name` accessor removes it, so
    a later write below `input.name` meets undefined (and runs no getter), as in JavaScript."""
    steps = [{"do": "mutate", "target": "input.name", "op": "delete", "catch": True},
             {"do": "mutate", "target": "input.name.x", "value": 1, "catch": True}]
    doc = {"tools": [TOOL], "getters": [{"id": "g1", "script": [{"do": "return", "value": "t1"}]}],
           "listeners": [_observer(steps)],
           "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t1", "arguments": {}, "getters": {"name": "g1"}}]}}
    mutates, trace = _mutates(doc)
    assert mutates == [("delete", "input.name", "applied"), ("set", "input.name.x", "failed")]
    reads = [i for i, o in enumerate(trace.observations) if o.stage == "getter" and o.what == "call"]
    first_mutate = next(i for i, o in enumerate(trace.observations) if o.what == "mutate")
    assert all(i < first_mutate for i in reads), "the deleted getter ran again"


def test_a_redefined_input_getter_holds_its_new_value() -> None:
    """`define input.name` replaces the accessor by a data property: a write below it lands
    in the new object; a write to `input.arguments` is seen by a later write below it."""
    steps = [{"do": "mutate", "target": "input.name", "op": "define", "value": {}, "catch": True},
             {"do": "mutate", "target": "input.name.x", "value": 1, "catch": True},
             {"do": "mutate", "target": "input.name", "value": 2, "catch": True},
             {"do": "mutate", "target": "input.arguments", "value": 5, "catch": True},
             {"do": "mutate", "target": "input.arguments.x", "value": 1, "catch": True}]
    doc = {"tools": [TOOL], "getters": [{"id": "g1", "script": [{"do": "return", "value": "t1"}]}],
           "listeners": [_observer(steps)],
           "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t1", "arguments": {"a": {}}, "getters": {"name": "g1"}}]}}
    mutates, _ = _mutates(doc)
    assert [m[2] for m in mutates] == ["applied", "applied", "applied", "applied", "failed"]


# Each write below a value token of spec 3.11, and what the decoded JavaScript value does.
TOKEN_WRITES = [
    ("input.arguments.h.x", "set", "failed"),  # hostile: every operation throws
    ("input.arguments.h.x", "delete", "failed"),
    ("input.arguments.h.x", "define", "failed"),
    ("input.arguments.f.name", "set", "failed"),  # a function's name is read-only
    ("input.arguments.f.name", "delete", "applied"),  # ... and configurable
    ("input.arguments.f.prototype", "delete", "failed"),  # not configurable
    ("input.arguments.f.x", "set", "applied"),  # a function is an extensible object
    ("input.arguments.arr.1.x", "set", "failed"),  # a hole reads undefined
    ("input.arguments.arr.length", "delete", "failed"),
    ("input.arguments.g.x", "set", "failed"),  # a getter-throws property throws on the read
    ("input.arguments.g", "set", "failed"),  # an accessor without a setter
    ("input.arguments.g", "delete", "applied"),
    ("input.arguments.c.self.self.x", "set", "applied"),  # a cycle is its container
    ("input.arguments.e.message.x", "set", "failed"),  # an Error's own message is a string
    ("input.arguments.re.lastIndex", "delete", "failed"),
    ("input.arguments.m.x", "set", "applied"),  # an instance takes new properties
    ("input.arguments.n.x", "set", "failed"),  # NaN is a number
    ("input.arguments.u.x", "set", "failed"),  # undefined
    ("input.arguments.h", "set", "applied"),  # the property holding a token is the arguments' own
    ("input.signal.aborted", "set", "failed"),  # an AbortSignal's aborted has no setter
    ("input.signal.x", "set", "applied"),
    ("record.signal.reason", "set", "failed"),
]
TOKENS = {"h": {"$js": "hostile"}, "f": {"$js": "function", "name": "f"}, "arr": [1, {"$js": "hole"}],
          "g": {"$js": "getter-throws", "message": "no"}, "c": {"self": {"$js": "cycle", "up": 1}},
          "e": {"$js": "error", "class": "Error", "message": "m"}, "re": {"$js": "instance", "class": "RegExp"},
          "m": {"$js": "instance", "class": "Map"}, "n": {"$js": "NaN"}, "u": {"$js": "undefined"}}


def test_writes_into_value_tokens_do_what_javascript_does() -> None:
    steps = [{"do": "mutate", "target": t, "op": op, "value": 1, "catch": True} for t, op, _ in TOKEN_WRITES]
    doc = {"tools": [TOOL], "listeners": [_observer(steps)],
           "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t1", "arguments": TOKENS}]}}
    mutates, _ = _mutates(doc)
    assert mutates == [(op, t, outcome) for t, op, outcome in TOKEN_WRITES]


def test_a_write_into_a_hostile_value_throws_its_error() -> None:
    """Spec revision 3, 3.11: the write throws Error("hostile value"), not a TypeError."""
    doc = {"tools": [TOOL], "listeners": [_observer([{"do": "mutate", "target": "input.arguments.h.x", "value": 1,
                                                      "catch": False}])],
           "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t1", "arguments": {"h": {"$js": "hostile"}}}]}}
    _, trace = _mutates(doc)
    thrown = [o.value for o in trace.observations if o.who == "R1" and o.what == "throw"]
    assert thrown == [{"$js": "error", "class": "Error", "message": "hostile value"}]


@settings(max_examples=150, deadline=None, database=None)
@given(st.booleans().flatmap(lambda concurrent: programs("p1", ["t1", "ghost"], concurrent)))
def test_a_generated_program_awaits_every_call(program: dict[str, Any]) -> None:
    """Program timing: a generated program leaves no call in flight when it ends and no
    continuation, so that no verdict depends on how many microtask turns a port takes."""
    assert "afterSettle" not in program
    started = [s["as"] for s in program["steps"] if s["do"] == "call" and "as" in s]
    awaited = [s["handle"] for s in program["steps"] if s["do"] == "await"]
    assert sorted(started) == sorted(awaited)


def _in_start_at_an_end(program: dict[str, Any]) -> list[str]:
    """The handles a program has started and not awaited where it may end (a return, throw,
    fail or reject step, an uncaught await, the end of its steps) with no sleep since they
    started: there the run settles while they are in their start, and whether they were
    dispatched is microtask order, which the spec leaves open."""
    pending: list[str] = []
    for step in program["steps"]:
        do = step["do"]
        if do == "sleep":  # the end lands in virtual time, once every start is done
            pending = []
        elif do == "call" and "as" in step:
            pending.append(step["as"])
        elif do in ("await", "call"):
            if step.get("handle") in pending:
                pending.remove(step["handle"])
            if not step.get("catch") and pending:  # an uncaught rejection ends the program here
                return pending
        elif do in ("return", "throw", "fail", "reject"):
            return pending
    return pending


@pytest.mark.parametrize("profiles", [frozenset({"code-mode"}), ALL_PROFILES], ids=["code-mode", "all"])
def test_no_generated_program_ends_with_a_call_in_its_start(profiles: frozenset[str]) -> None:
    """Program timing, over whole generated scenarios (the side runs' recipes included): a
    program that ends while a call it started is still starting would be judged on microtask
    order (a port that takes another turn dispatches it, or not)."""
    found = []
    for seed in (1, 2, 3):
        for i, example in enumerate(draw_examples(40, seed, profiles)):
            for program in example.doc.get("programs", []):
                if pending := _in_start_at_an_end(program):
                    found.append(f"seed {seed} draw {i + 1}: {program['id']} ends with {pending} in their start")
    assert not found, "\n".join(found[:10])
