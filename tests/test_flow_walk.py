"""Every trace of the corpus is a walk on the flow model, and every drawn edge is walked by
some case (`dsh-conformance docs coverage`)."""

from __future__ import annotations

import pytest

from dsh_conformance.cli import main
from dsh_conformance.kit.trace import Event, Observation, Trace
from dsh_conformance.tools.flow_model import load_flow_model
from dsh_conformance.tools.flow_walk import corpus_traces, coverage, walks

MODEL = load_flow_model()


@pytest.fixture(scope="module")
def corpus_traces_by_id():
    return corpus_traces()


@pytest.fixture(scope="module")
def corpus_coverage(corpus_traces_by_id):
    return coverage(MODEL, corpus_traces_by_id)


def test_every_corpus_trace_walks_the_graph(corpus_coverage):
    assert [f"{c}: {w.call}: {s}" for c, w, s in corpus_coverage.off_graph] == []
    assert [f"{c}: {w.call} stops at {w.nodes[-1]}" for c, w in corpus_coverage.unfinished] == []


def test_every_drawn_edge_is_walked_by_a_corpus_case(corpus_coverage):
    assert [e.id for e in corpus_coverage.uncovered(MODEL)] == []
    assert corpus_coverage.problems(MODEL) == []


def test_every_extension_edge_is_walked(corpus_coverage):
    # An extension edge no trace needs would be dead weight in the model.
    assert [e.id for e in MODEL.edges if not e.drawn and not corpus_coverage.by_edge[e.id]] == []


def _obs(call, stage, what, value=None, who=None):
    return Observation(call=call, stage=stage, what=what, who=who, value=value, rules=["P1"])


def test_a_direct_call_walk():
    t = Trace(observations=[
        _obs("c", "entry", "start"), _obs("c", "pre-execute", "start"), _obs("c", "pre-execute", "end", {"kind": "deny", "reason": "no"}),
        _obs("c", "pre-execute", "deny", "no"), _obs("c", "route", "to", "denied"),
        _obs("c", "post-execute", "start"), _obs("c", "post-execute", "end", {"kind": "accept"}),
        _obs("c", "result", "start"), _obs("c", "result", "end")])
    [w] = walks(MODEL, t)
    assert w.nodes == ["caller", "pre", "denied", "post", "finalize", "final"]
    assert [e.id for e in w.edges] == ["X1", "S31", "S36", "S45", "S47"]
    assert w.complete and not w.off_graph


def test_a_transition_off_the_graph_is_reported():
    # The body cannot run straight after pre-execute: no such edge.
    t = Trace(observations=[_obs("c", "pre-execute", "start"), _obs("c", "pre-execute", "end", {"kind": "allow"}),
                            _obs("c", "body", "call", who="t"), _obs("c", "result", "start")])
    cov = coverage(MODEL, {"fixture": t})
    case, walk, step = cov.off_graph[0]
    assert (case, step.source, step.target) == ("fixture", "pre", "toolBody")
    assert "fixture: call c: pre -> toolBody (evidence 'allow') is no edge of the flow model" in cov.problems(MODEL)


def test_a_loop_call_walks_to_the_next_steps_contexts():
    ev = lambda seq, type_, data: Event(agent="a", seq=seq, type=type_, data=data)
    t = Trace(observations=[
        _obs("L", "entry", "start"), _obs("L", "route", "to", "final"), _obs("L", "result", "start"),
        _obs("L", "loop", "commit"), _obs(None, "loop", "end", "next-step")],
        events=[ev(1, "assistant/message", {}), ev(2, "tool/call", {"callId": "L"}),
                ev(3, "tool/result", {"message": {"source": {"callId": "L"}}})])
    [w] = walks(MODEL, t)
    assert w.nodes == ["model", "toolCall", "normalized", "finalize", "final", "toolResult", "allResults", "context"]
    assert [e.id for e in w.edges] == ["S23", "X3", "S46", "S47", "S48", "S50", "S51"]


def test_a_body_passes_the_fs_gate_and_branches_to_its_own_events(corpus_traces_by_id):
    [w] = walks(MODEL, corpus_traces_by_id["body-fs-intent-waterfall"])
    assert w.nodes[w.nodes.index("toolBody"):][:4] == ["toolBody", "fsGate", "toolBody", "around"]
    [todo, later] = walks(MODEL, corpus_traces_by_id["body-appends-todo-write"])
    # A side branch leaves the path as it is: the walk still ends at the next step's contexts.
    assert "owned" not in todo.nodes and todo.nodes[-1] == "context" and todo.complete
    assert ("toolBody", "owned", "S40") in [(s.source, s.target, s.edge.id) for s in todo.steps]
    assert "S40" not in [e.id for e in later.edges]


def test_projections_branch_from_their_events(corpus_traces_by_id):
    shown, broken, raw = walks(MODEL, corpus_traces_by_id["ui-viewer-projects-calls-and-results"])
    for w in (shown, broken):
        assert {("toolCall", "presentCall"), ("toolResult", "presentResult")} <= {(s.source, s.target) for s in w.steps}
        assert w.nodes[-1] == "context" and not w.off_graph
    assert not {"S24", "S49"} & {e.id for e in raw.edges}  # its arguments are not JSON: no view


def test_a_projection_without_its_event_leaves_the_graph(corpus_traces_by_id):
    # A direct call has no tool/result to project: a presentResult there is off the graph.
    t = corpus_traces_by_id["body-fs-intent-throw"].model_copy(deep=True)
    t.observations.append(Observation(call="c1", stage="presentResult", what="call", who="strict.presentResult"))
    w = walks(MODEL, t)[0]
    assert [(s.target, s.edge) for s in w.off_graph] == [("presentResult", None)]


def test_coverage_command_lists_edges_with_cases(capsys):
    assert main(["docs", "coverage"]) == 0
    out = capsys.readouterr().out
    assert "S26  pre -->|allow| guards  [drawn]" in out
    assert "S38  toolBody --> fsGate  [drawn] 2 case(s): body-fs-intent-throw, body-fs-intent-waterfall" in out
    assert "S49  toolResult --> presentResult  [drawn] 1 case(s): ui-viewer-projects-calls-and-results" in out
    assert "X2   caller -.-> normalized  [extension (not drawn)]" in out
    assert "29 of 29 drawn edges walked by corpus cases; 0 uncovered; 0 step(s) off the graph" in out


def test_generated_traces_walk_the_graph_too():
    # The corpus is curated; the strategies reach corners nobody wrote a case for. Every
    # oracle trace of a generated scenario must stay on the graph and end where it should.
    from dsh_conformance.strategies.draws import draw_examples

    cov = coverage(MODEL, {f"example {i}": ex.trace for i, ex in enumerate(draw_examples(150, 0))})
    assert [f"{c}: {w.call}: {s}" for c, w, s in cov.off_graph] == []
    assert [f"{c}: {w.call} stops at {w.nodes[-1]}" for c, w in cov.unfinished] == []
    assert len([e for e in MODEL.drawn_edges if cov.by_edge[e.id]]) > 20  # they do reach most of it
