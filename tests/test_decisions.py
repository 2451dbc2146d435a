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


# ---------------------------------------------------------------------------- the tables

# Where each stage of P2's table is drawn in the flow model, and the evidence of an edge
# that stands for an outcome the model names otherwise.
FLOW_NODE = {"pre-execute": "pre", "approval": "approval", "guards": "guards", "tools/execute": "around",
             "post-execute (denied)": "denied", "post-execute": "post", "final": "normalized",
             "materialization": "finalize"}
EVIDENCE = {"decision": "next"}


def _flow():
    from dsh_conformance.tools.flow_model import load_flow_model

    return load_flow_model()


def _leads(edges, node, outcome):
    """The nodes the model's edges from ``node`` on ``outcome`` lead to, following the
    connectors: a denial is post-execute (denied -> post), normalization precedes
    materialization (normalized -> finalize)."""
    out = set()
    for e in edges:
        if e.source == node and EVIDENCE.get(outcome, outcome) in e.when:
            out.add(e.target)
        if e.source == node == "denied" and e.target == "post":
            out |= _leads(edges, "post", outcome)
    if "normalized" in out:
        out |= {e.target for e in edges if e.source == "normalized"}
    return out


@pytest.mark.rules("P2")
def test_each_row_of_the_p2_table_is_a_drawn_edge():
    from dsh_conformance.oracle.transitions import TRANSITIONS

    drawn = [e for e in _flow().edges if e.drawn]
    for t in TRANSITIONS:
        for outcome in t.outcomes:
            assert FLOW_NODE[t.target] in _leads(drawn, FLOW_NODE[t.source], outcome), (t, outcome)


@pytest.mark.rules("P2")
def test_each_drawn_edge_between_table_stages_is_a_row():
    from dsh_conformance.oracle.transitions import TRANSITIONS

    stage_of = {node: stage for stage, node in FLOW_NODE.items()}
    drawn = [e for e in _flow().edges if e.drawn]
    for e in drawn:
        if e.source not in stage_of or e.target not in stage_of or (e.source, e.target) == ("denied", "post"):
            continue
        rows = [t for t in TRANSITIONS if t.source == stage_of[e.source]
                and any(EVIDENCE.get(o, o) in e.when for o in t.outcomes)]
        assert rows, f"edge {e.id} {e.source} -> {e.target} on {e.when} is no row of P2's table"
        assert {FLOW_NODE[t.target] for t in rows} & _leads(drawn, e.source, e.when[0]), e.id


@pytest.mark.rules("P2")
def test_transitions_beyond_the_table_are_the_rules_p2_names():
    """P2: beyond the table only entry checks, the cancellation checkpoints, guard denials that
    cannot be materialized and normalization failures add transitions, each to post-execute
    or to final. (Materialization failing, P90 and P91, is materialization's own throw.)"""
    from dsh_conformance.oracle.transitions import BEYOND

    stages = set(FLOW_NODE.values()) | {"caller", "toolCall"}
    for e in _flow().edges:
        if e.drawn or e.source not in stages or e.target not in stages or e.target == "pre":
            continue
        assert e.target in ("post", "normalized"), e.id
        assert set(e.rules) & (set(BEYOND) | {"P90", "P91"}), (e.id, e.rules)


def test_reachability_reads_the_table():
    from dsh_conformance.oracle import transitions as t

    assert t.after("pre-execute", "invalid-decision") == t.FINAL
    assert t.reachable(t.FINAL) == {t.FINAL, t.MATERIALIZATION}
    assert t.EXECUTE not in t.reachable(t.DENIED)  # P3: a denial never runs the body
    assert t.upstream(t.GUARDS) == {t.PRE_EXECUTE, t.APPROVAL, t.GUARDS}


@pytest.mark.rules("P31", "P40", "P78")
def test_the_vocabularies_are_the_decision_models():
    """The tables the pipeline reads are what the decision schema's models name."""
    import typing

    from dsh_conformance.kit import decisions as d

    kinds = lambda *models: tuple(typing.get_args(m.model_fields["kind"].annotation)[0] for m in models)  # noqa: E731
    assert kinds(d.Allow, d.Deny, d.Ask) == d.PRE_KINDS == tuple(d.PRE_REASONS)
    assert kinds(d.Accept, d.Block) == d.POST_KINDS
    assert typing.get_args(d.ApprovalOutcome) == d.OUTCOMES and d.GRANTED in d.OUTCOMES


@pytest.mark.rules("P40", "P41")
def test_every_outcome_but_the_grant_has_its_denial_reason():
    from dsh_conformance.oracle import approval
    from dsh_conformance.kit import decisions

    assert set(approval.ROUTES) == set(decisions.OUTCOMES)
    assert [o for o, (kind, reason) in approval.ROUTES.items() if kind == "allow" or reason is None] == [decisions.GRANTED]
