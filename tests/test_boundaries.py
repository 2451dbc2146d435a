"""Every ``$js`` token at every snapshot boundary (P12) gets the outcome the spec gives it.

The expected outcome is written here from the spec's rules, per boundary, independently of
the oracle's code: a non-lossless value, a value whose read throws, and a lossless exotic
value (null prototype, an escaped ``$js`` key) each have one required result.
"""

from __future__ import annotations

import pytest

from dsh_conformance.oracle import parse_scenario, run_scenario

LOSSLESS_EXOTIC = {
    "null-proto": {"$js": "null-proto", "entries": {"k": 1}},
    "escaped-object": {"$js": "object", "entries": {"$js": "literal"}},
}
NOT_LOSSLESS = {
    "undefined": {"$js": "undefined"},
    "NaN": {"$js": "NaN"},
    "Infinity": {"$js": "Infinity"},
    "-Infinity": {"$js": "-Infinity"},
    "-0": {"$js": "-0"},
    "bigint": {"$js": "bigint", "value": "10"},
    "function": {"$js": "function", "name": "f"},
    "symbol": {"$js": "symbol", "description": "s"},
    "date": {"$js": "date", "value": "2026-11-30T00:00:00.000Z"},
    "map": {"$js": "instance", "class": "Map"},
    "cycle": {"$js": "cycle", "up": 1},
    "sparse": [1, {"$js": "hole"}],
    "array-extra": {"$js": "array", "items": [1], "extra": {"x": 1}},
    "symbol-keys": {"$js": "object", "entries": {}, "symbolKeys": 1},
    "hidden-keys": {"$js": "object", "entries": {}, "hidden": {"h": 1}},
    "error": {"$js": "error", "class": "Error", "message": "e"},
    "promise": {"$js": "promise", "resolves": 1},
}
THROWS = {"getter-throws": {"$js": "getter-throws", "message": "getter boom"}}
ALL = {**LOSSLESS_EXOTIC, **NOT_LOSSLESS, **THROWS}


def _wrap(token):
    """Place the token one level down, as a property value (where getters live)."""
    return {"k": token}


def _run(doc):
    doc.setdefault("run", {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]})
    trace = run_scenario(parse_scenario(doc))
    return trace, trace.results[0].result


def _stages(trace):
    return {o.stage for o in trace.observations if o.what in ("start", "call")}


@pytest.mark.rules("P12", "P25", "P27")
@pytest.mark.parametrize("kind", ALL)
def test_arguments_at_entry(kind):
    trace, r = _run({"tools": [{"name": "t", "body": [{"do": "observe", "what": "args"}, {"do": "return", "value": 1}]}],
                     "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t", "arguments": _wrap(ALL[kind])}]}})
    if kind in LOSSLESS_EXOTIC:
        assert r["isError"] is False
        seen = next(o.value for o in trace.observations if o.what == "observe")
        assert seen["isRecordArguments"] and seen["frozen"]
    elif kind in THROWS:
        assert r["error"] == {"message": "getter boom"} and "pre-execute" not in _stages(trace)
    else:
        assert r["error"] == {"message": "tool execution arguments must be losslessly JSON-serializable"}
        assert "pre-execute" not in _stages(trace) and "post-execute" not in _stages(trace)


def _invalid_output(violation):
    return {"message": 'tool "t" returned invalid output: ' + violation,
            "info": {"name": "ToolOutputError", "code": "INVALID_TOOL_OUTPUT"}}


@pytest.mark.rules("P12", "P72", "P73")
@pytest.mark.parametrize("kind", ALL)
def test_body_value(kind):
    trace, r = _run({"tools": [{"name": "t", "body": [{"do": "return", "value": _wrap(ALL[kind])}]}]})
    if kind in LOSSLESS_EXOTIC:
        assert r["isError"] is False and r["value"] == {"k": {"k": 1} if kind == "null-proto" else ALL[kind]}
    elif kind in THROWS:
        assert r["error"] == _invalid_output("value snapshot failed: getter boom")
    else:
        assert r["error"] == _invalid_output("value is not lossless JSON")
    assert "post-execute" in _stages(trace)  # body-side output failures are post-bound (P72)


@pytest.mark.rules("P12", "P73", "P74")
@pytest.mark.parametrize("projector", ["render", "presentationMeta"])
@pytest.mark.parametrize("kind", ALL)
def test_projector_output(kind, projector):
    out = [{"type": "text", "text": "x", "extra": ALL[kind]}]
    tool = {"name": "t", "body": [{"do": "return", "value": 1}], "output": {projector: [{"do": "return", "value": out}]}}
    _, r = _run({"tools": [tool]})
    if kind in LOSSLESS_EXOTIC:
        assert r["isError"] is False
    elif kind in THROWS:
        assert r["error"] == _invalid_output(f"output.{projector} failed: getter boom")
    else:
        assert r["error"] == _invalid_output(f"output.{projector} returned non-lossless JSON")


@pytest.mark.rules("P12", "P81", "P82", "P86")
@pytest.mark.parametrize("kind", ALL)
def test_post_execute_value_replacement(kind):
    post = {"id": "p", "event": "tools/post-execute",
            "script": [{"do": "return", "value": {"kind": "accept", "value": _wrap(ALL[kind])}}]}
    trace, r = _run({"tools": [{"name": "t", "body": [{"do": "return", "value": 1}]}], "listeners": [post]})
    if kind in LOSSLESS_EXOTIC:
        assert r["isError"] is False and "k" in r["value"]
    elif kind in THROWS:
        assert r["error"] == _invalid_output("value snapshot failed: getter boom")
    else:
        assert r["error"] == _invalid_output("value is not lossless JSON")


@pytest.mark.rules("P12", "P90", "P91")
@pytest.mark.parametrize("field", ["content", "meta", "error"])
@pytest.mark.parametrize("kind", ALL)
def test_wrapper_authored_failure_materialization(kind, field):
    authored = {"isError": True, "error": {"message": "authored"}, "content": [{"type": "text", "text": "a"}]}
    authored[field] = _wrap(ALL[kind]) if field != "content" else [_wrap(ALL[kind])]
    wrapper = {"id": "w", "event": "tools/execute", "script": [{"do": "return", "value": authored}]}
    trace, r = _run({"tools": [{"name": "t"}], "listeners": [wrapper]})
    assert "body" not in _stages(trace)
    if kind in LOSSLESS_EXOTIC:
        assert r["isError"] is True
        assert r["error"] == ({"message": "authored"} if field != "error" else {"k": r["error"]["k"]})
    elif kind in THROWS:
        assert r == {"isError": True, "error": {"message": "getter boom"}, "content": [{"type": "text", "text": "Error: getter boom"}]}
    else:
        assert r == {"isError": True, "error": {"message": "tool result must be losslessly JSON-serializable"},
                     "content": [{"type": "text", "text": "Error: tool result must be losslessly JSON-serializable"}]}


@pytest.mark.rules("P12", "P94", "P95", "P96")
@pytest.mark.parametrize("kind", ALL)
def test_finalizer_content(kind):
    tool = {"name": "t", "body": [{"do": "return", "value": 1}],
            "finalizeContent": [{"do": "return", "value": [_wrap(ALL[kind])]}]}
    _, r = _run({"tools": [tool]})
    if kind in LOSSLESS_EXOTIC:
        assert r["isError"] is False and r["value"] == 1
    elif kind in THROWS:
        assert r == {"isError": True, "error": {"message": "getter boom"}, "content": [{"type": "text", "text": "Error: getter boom"}]}
    else:
        assert r["error"] == {"message": "tool result must be losslessly JSON-serializable"} and "value" not in r


@pytest.mark.rules("P46", "P47")
@pytest.mark.parametrize("kind", [k for k in ALL if k not in THROWS])
def test_guard_return_value(kind):
    trace, r = _run({"tools": [{"name": "t"}], "guards": [{"id": "g", "script": [{"do": "return", "value": ALL[kind]}]}]})
    stages = _stages(trace)
    if kind == "undefined":
        assert r["isError"] is False  # the only abstention (P46)
    elif kind == "symbol" or kind == "null-proto":
        # ToString(v) throws: the final canonical failure for that throw (P47)
        assert r["isError"] is True and "post-execute" not in stages
    elif kind in LOSSLESS_EXOTIC:
        assert r["isError"] is True and r["content"] == [{"type": "text", "text": "Error: [object Object]"}]
        assert "post-execute" in stages
    else:
        assert r["error"] == {"message": "tool result must be losslessly JSON-serializable"}
        assert "post-execute" not in stages and "body" not in stages
