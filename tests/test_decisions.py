"""Decisions and outcomes as participants return them, well formed or not (P31, P34, P35,
P40, P41, P78, P79, P63)."""

from __future__ import annotations

import pytest

from dsh_conformance.oracle import parse_scenario, run_scenario

U = {"$js": "undefined"}
GETTER = {"$js": "getter-throws", "message": "kind getter"}


def _run(listeners=(), **extra):
    doc = {"tools": [{"name": "t", "body": [{"do": "return", "value": "v"}]}], "listeners": list(listeners),
           "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t", "agent": extra.pop("agent", None)}]}}
    doc["run"]["calls"][0] = {k: v for k, v in doc["run"]["calls"][0].items() if v is not None}
    doc.update(extra)
    trace = run_scenario(parse_scenario(doc))
    ran = {o.stage for o in trace.observations if o.what in ("start", "call")}
    return trace.results[0].result, ran


def _pre(decision):
    return {"id": "pre", "event": "tools/pre-execute", "script": [{"do": "return", "value": decision}]}


def _post(decision):
    return {"id": "post", "event": "tools/post-execute", "script": [{"do": "return", "value": decision}]}


INVALID_PRE = {"isError": True, "error": {"message": "invalid tools/pre-execute decision"},
               "content": [{"type": "text", "text": "Error: invalid tools/pre-execute decision"}]}


@pytest.mark.rules("P31", "P34", "P35")
@pytest.mark.parametrize("decision", [
    U, None, 0, "allow", True, [], {}, {"kind": "allowed"}, {"kind": "deny"}, {"kind": "deny", "reason": 1},
    {"kind": "deny", "reason": None}, {"kind": "ask", "reason": 5}, {"kind": "ask", "reason": None},
    {"kind": "ALLOW"}, {"$js": "function"}, {"$js": "promise", "resolves": None},
], ids=repr)
def test_malformed_pre_decision_is_final(decision):
    r, ran = _run([_pre(decision)])
    assert r == INVALID_PRE
    assert ran.isdisjoint({"approval", "guards", "execute", "body", "post-execute"})


@pytest.mark.rules("P31")
@pytest.mark.parametrize("decision", [
    {"kind": "allow", "reason": 5, "arguments": {"x": 1}, "callId": "other", "name": "other"},
    {"$js": "object", "entries": {"kind": "allow"}}, {"$js": "null-proto", "entries": {"kind": "allow"}},
    {"$js": "promise", "resolves": {"kind": "allow"}},  # a listener's promise is awaited (P5)
], ids=repr)
def test_allow_ignores_other_properties(decision):
    r, ran = _run([_pre(decision)])
    assert r["isError"] is False and r["value"] == "v" and "body" in ran


@pytest.mark.rules("P35")
def test_kind_getter_throws():
    r, _ = _run([_pre({"$js": "object", "entries": {"kind": GETTER}})])
    assert r == {"isError": True, "error": {"message": "kind getter"}, "content": [{"type": "text", "text": "Error: kind getter"}]}


@pytest.mark.rules("P35")
def test_reason_getter_throws():
    r, _ = _run([_pre({"$js": "object", "entries": {"kind": "deny", "reason": GETTER}})])
    assert r["error"] == {"message": "kind getter"}


@pytest.mark.rules("P40", "P41")
@pytest.mark.parametrize("outcome,rendered", [
    (1, "1"), (None, "null"), ({"a": 1}, '{"a":1}'), (U, "undefined"), ("Allowed-Once", '"Allowed-Once"'),
    ({"$js": "NaN"}, "null"), (["x"], '["x"]'),
])
def test_outcome_outside_the_vocabulary(outcome, rendered):
    r, ran = _run([_pre({"kind": "ask"})], agent="a", agents=[{"id": "a"}],
                  approval={"service": "custom", "script": [{"do": "return", "value": outcome}]})
    assert r["error"] == {"message": f"unreachable variant in ApprovalOutcome: {rendered}"}
    assert ran.isdisjoint({"guards", "execute", "body", "post-execute"})


INVALID_POST = {"isError": True, "error": {"message": "invalid tools/post-execute decision"},
                "content": [{"type": "text", "text": "Error: invalid tools/post-execute decision"}]}


@pytest.mark.rules("P78", "P79", "P86")
@pytest.mark.parametrize("decision", [
    U, None, 1, "accept", [], {}, {"kind": "allow"}, {"kind": "deny", "reason": "x"}, {"kind": "Accept"},
], ids=repr)
def test_malformed_post_decision(decision):
    r, ran = _run([_post(decision)])
    assert r == INVALID_POST and "finalize" not in ran


@pytest.mark.rules("P79")
def test_post_kind_getter_throws():
    r, _ = _run([_post({"$js": "object", "entries": {"kind": GETTER}})])
    assert r["error"] == {"message": "kind getter"}


@pytest.mark.rules("P63")
@pytest.mark.parametrize("returned,expected", [
    ({"isError": 1, "error": {"message": "m"}, "content": []}, {"isError": True, "error": {"message": "m"}, "content": []}),
    ({"isError": "yes", "error": {"message": "m"}, "content": [], "meta": U, "additionalContexts": []},
     {"isError": True, "error": {"message": "m"}, "content": [], "additionalContexts": []}),
    ({"isError": 0, "value": "w", "content": "ignored", "meta": "ignored"},
     {"isError": False, "value": "w", "content": [{"type": "text", "text": '"w"'}]}),
    ("a string", {"isError": False, "value": None}),
    (7, {"isError": False, "value": None}),
])
def test_wrapper_result_normalization(returned, expected):
    wrapper = {"id": "w", "event": "tools/execute", "script": [{"do": "return", "value": returned}]}
    r, ran = _run([wrapper], tools=[{"name": "t", "output": {"schema": {}}}])
    if expected.get("value", 0) is None:
        # A non-null primitive is an authored success without a value: undefined is not
        # lossless JSON, so the output contract rejects it (final, P64).
        assert r["error"]["info"] == {"name": "ToolOutputError", "code": "INVALID_TOOL_OUTPUT"}
        assert "post-execute" not in ran
    else:
        assert r == expected and "body" not in ran


@pytest.mark.rules("P63")
@pytest.mark.parametrize("returned", [None, U])
def test_nullish_wrapper_result_is_a_throw(returned):
    wrapper = {"id": "w", "event": "tools/execute", "script": [{"do": "return", "value": returned}]}
    r, ran = _run([wrapper])
    assert r["isError"] is True and "info" not in r["error"] and "post-execute" not in ran
