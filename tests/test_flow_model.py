"""The flow model: it loads, is consistent, holds the page's graph, and renders (through
mermaid-py's flowchart classes, never its network renderer) to the page's Mermaid text."""

from __future__ import annotations

import copy
import json
import re

import jsonschema
import pytest
import yaml

from dsh_conformance.tools import mermaid_flow
from dsh_conformance.tools.flow_model import FLOW_FILE, FlowModelError, load_flow_model, parse_flow_model
from dsh_conformance.tools.mermaid_flow import render_mermaid

MODEL = load_flow_model()
RAW = yaml.safe_load(FLOW_FILE.read_text(encoding="utf-8"))


def _edges(**match):
    return [e for e in MODEL.drawn_edges if all(getattr(e, k) == v for k, v in match.items())]


def test_model_validates_against_its_generated_schema():
    schema = json.loads((FLOW_FILE.parent / "flow-model.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(RAW)


def test_drawn_graph_is_the_pages_graph():
    # 19 nodes, 29 edges of which 5 dotted; ids are the spec's seed items S4..S22, S23..S51.
    assert len(MODEL.drawn_nodes) == 19
    assert [n.seed for n in MODEL.drawn_nodes] == [f"S{i}" for i in range(4, 23)]
    assert [e.id for e in MODEL.drawn_edges] == [f"S{i}" for i in range(23, 52)]
    assert len(_edges(style="dotted")) == 5


def test_semantic_invariants_of_the_drawn_graph():
    # Every dotted (throw) edge ends at the outer normalization and says what throws.
    for e in _edges(style="dotted"):
        assert e.target == "normalized" and e.label in ("throw", "wrapper throws"), e
    # Only deny-like edges enter `denied`; only an ask enters approval.
    assert {e.label for e in _edges(target="denied")} == {"deny", "rejected, cancelled, unavailable"}
    assert [(e.source, e.label) for e in _edges(target="approval")] == [("pre", "ask")]
    # The backbone.
    for a, b in [("pre", "guards"), ("guards", "around"), ("around", "toolBody"), ("around", "post"),
                 ("post", "finalize"), ("finalize", "final"), ("final", "toolResult")]:
        assert _edges(source=a, target=b), (a, b)
    # From the model's message, the UI card and the injected contexts are reachable.
    reach, todo = set(), ["model"]
    while todo:
        n = todo.pop()
        if n not in reach:
            reach.add(n)
            todo += [e.target for e in _edges(source=n)]
    assert {"presentResult", "context"} <= reach


def test_extension_edges_are_marked_and_explained():
    ext = [e for e in MODEL.edges if not e.drawn]
    assert ext and all(e.id.startswith("X") and e.why for e in ext)
    assert {e.id for e in ext if "entry-failure" in e.when} == {"X2", "X3"}  # entry failures
    assert any("caller-aborted" in e.when for e in ext)  # cancellation checkpoints


def test_side_branches_are_the_projections_and_the_bodys_events():
    # The page draws these as leaves off the main path: a walk visits them and goes on.
    assert {n.id for n in MODEL.nodes if n.branch} == {"presentCall", "presentResult", "owned"}
    for n in MODEL.nodes:
        if n.branch:
            assert not [e for e in MODEL.edges if e.source == n.id], n.id


def test_the_model_writes_no_name_table_by_hand():
    # The docs check's names come from the catalog index (tools/name_table.py, tests/test_docs_claims.py).
    assert MODEL.names == []


@pytest.mark.parametrize("corrupt, message", [
    (lambda d: d["nodes"].append(dict(d["nodes"][0])), "duplicate node id 'model'"),
    (lambda d: d["edges"][0].update({"to": "nowhere"}), "unknown node 'nowhere'"),
    (lambda d: d["edges"].append({**d["edges"][3], "id": "X99", "drawn": False, "why": "w"}), "both selected by 'allow'"),
    (lambda d: d["edges"][-1].pop("why"), "an extension edge says why it exists"),
    (lambda d: d["edges"][0].update({"id": "X50"}), "drawn edges have seed ids"),
    (lambda d: d.update(names=[{"name": "tool/call", "kind": "tool"}] * 2), "duplicate name 'tool/call'"),
    (lambda d: d["edges"][3].update({"style": "wavy"}), "style"),
])
def test_inconsistent_models_are_rejected(corrupt, message):
    data = copy.deepcopy(RAW)
    corrupt(data)
    with pytest.raises(FlowModelError, match=re.escape(message)):
        parse_flow_model(data, "fixture.flow.yaml")


def test_load_names_the_file(tmp_path):
    bad = tmp_path / "x.flow.yaml"
    bad.write_text("nodes: [", encoding="utf-8")
    with pytest.raises(FlowModelError, match="x.flow.yaml: not YAML"):
        load_flow_model(bad)


SMALL = {
    "format": "dsh-conformance/flow/v1", "page": "p", "direction": "TD",
    "nodes": [
        {"id": "startNode", "label": [["Start ", {"code": "a/b<c>"}], ["second line"]], "observedAs": {}},
        {"id": "end", "label": [["End"]]},
    ],
    "edges": [
        {"id": "S1", "from": "startNode", "to": "end", "when": ["next"]},
        {"id": "S2", "from": "startNode", "to": "end", "style": "dotted", "label": "fails, badly", "when": ["throw"]},
    ],
    "names": [],
}


def test_rendering_of_a_small_model():
    # camelCase ids survive (mermaid-py would snake-case them), labels stay unquoted, <code>
    # content is HTML-escaped, lines are joined by <br/>, two-space indents, no front matter.
    assert render_mermaid(parse_flow_model(SMALL)) == "\n".join([
        "flowchart TD",
        '  startNode["Start <code>a/b&lt;c&gt;</code><br/>second line"]',
        '  end["End"]',
        "  startNode --> end",
        "  startNode -.->|fails, badly| end",
    ])


def test_rendering_uses_mermaid_py_classes_and_never_its_renderer(monkeypatch):
    import mermaid

    def forbidden(*a, **k):
        raise AssertionError("the network renderer must not be called")

    monkeypatch.setattr(mermaid, "Mermaid", forbidden)
    chart = mermaid_flow.flowchart(MODEL)
    assert type(chart).__module__.startswith("mermaid.flowchart")
    assert len(chart.nodes) == 19 and len(chart.links) == 29
    assert render_mermaid(MODEL).startswith("flowchart TD\n  model[")


def test_rendering_equals_upstreams_mermaid_block(shared):
    page = (shared / "upstream/b150a551b8/docs/tool-execution-pipeline.md").read_text(encoding="utf-8")
    block = re.search(r"```mermaid\n(.*?)\n```", page, re.S).group(1)
    assert render_mermaid(MODEL) == block
