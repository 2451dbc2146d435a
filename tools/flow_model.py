"""The flow model: the pipeline graph of the doc page as data (catalogs/*.flow.yaml).

The model is curated (like upstream's curated Mermaid flow), so these types validate it
rather than generate it: node labels as segments, edges in the page's order with style and
label, extension nodes and edges the page does not draw, how trace observations map onto
nodes, which evidence selects each edge, which nodes are side branches, and the
table of names the page uses with their kinds. ``flow_model_json_schema`` is the model's
own JSON Schema (catalogs/flow-model.schema.json).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from dsh_conformance.kit.schema_doc import schema_document
from dsh_conformance.resources import CATALOGS

FLOW_FILE = CATALOGS / "tool-execution-pipeline.flow.yaml"

NameKind = Literal["session-event", "live-event", "service", "tool", "type-member", "package", "event-scope"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Code(_Model):
    """A name set in code type inside a label: rendered ``<code>name</code>``."""
    code: str


Segment = str | Code
"""A piece of one label line: plain text, or a name in code type."""


class ObservedAs(_Model):
    """Which trace observations put a call on this node (tools/flow_walk.py)."""
    stages: list[str] = Field(default_factory=list, description="observation stages of the node")
    routes: list[str] = Field(default_factory=list, description="values of a route observation that lead here")
    events: list[str] = Field(default_factory=list, description="session events that mark the node")
    loopEnd: list[str] = Field(default_factory=list, description="loop-end values that reach the node")


class Node(_Model):
    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9]*$")
    label: list[list[Segment]] = Field(min_length=1, description="label lines, joined by <br/>")
    drawn: bool = True
    seed: str | None = Field(default=None, description="the seed item (spec Appendix A) a drawn node is")
    observedAs: ObservedAs = Field(default_factory=ObservedAs)
    silent: str | None = Field(default=None, description="when a walk passes the node without an observation, and why")
    branch: str | None = Field(default=None, description=(
        "a side branch: a walk records the edge into the node and stays where it was; why"))
    why: str | None = Field(default=None, description="why an extension node exists")


class Edge(_Model):
    id: str = Field(pattern=r"^(S|X)[0-9]+$", description="seed item (S..) of a drawn edge, X.. for an extension")
    source: str = Field(alias="from")
    target: str = Field(alias="to")
    style: Literal["solid", "dotted"] = "solid"
    label: str | None = None
    drawn: bool = True
    when: list[str] = Field(min_length=1, description="the walk evidence that selects this edge")
    rules: list[str] = Field(default_factory=list)
    why: str | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Name(_Model):
    name: str
    kind: NameKind
    of: str | None = Field(default=None, description="the type a type member belongs to")


class Acknowledged(_Model):
    """A finding reported as a warning instead of an error, with the reason."""
    check: Literal["session-event-group", "tool-owned-group"]
    node: str
    name: str
    why: str


class FlowModel(_Model):
    format: Literal["dsh-conformance/flow/v1"]
    page: str
    direction: Literal["TD", "TB", "LR", "RL", "BT"]
    nodes: list[Node]
    edges: list[Edge]
    names: list[Name] = Field(default_factory=list, description=(
        "deprecated: the docs check's name table is generated from the catalog index (tools/name_table.py)"))
    notNames: list[str] = Field(default_factory=list)
    acknowledged: list[Acknowledged] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> "FlowModel":
        problems = model_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    # -------------------------------------------------------------- views

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.id == node_id)

    @property
    def drawn_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.drawn]

    @property
    def drawn_edges(self) -> list[Edge]:
        return [e for e in self.edges if e.drawn]

    def edge_for(self, source: str, target: str, evidence: str) -> Edge | None:
        return next((e for e in self.edges
                     if e.source == source and e.target == target and evidence in e.when), None)

    def kind_of(self, name: str) -> Name | None:
        return next((n for n in self.names if n.name == name), None)


def model_problems(m: FlowModel) -> list[str]:
    """What makes a model inconsistent (beyond its schema)."""
    out: list[str] = []
    ids = [n.id for n in m.nodes]
    out += [f"duplicate node id {i!r}" for i in sorted({i for i in ids if ids.count(i) > 1})]
    known = set(ids)
    drawn_ids = {n.id for n in m.nodes if n.drawn}
    edge_ids = [e.id for e in m.edges]
    out += [f"duplicate edge id {i!r}" for i in sorted({i for i in edge_ids if edge_ids.count(i) > 1})]
    for e in m.edges:
        for end in (e.source, e.target):
            if end not in known:
                out.append(f"edge {e.id}: unknown node {end!r}")
        if e.drawn and not {e.source, e.target} <= drawn_ids:
            out.append(f"edge {e.id}: a drawn edge joins drawn nodes only")
        if e.drawn != e.id.startswith("S"):
            out.append(f"edge {e.id}: drawn edges have seed ids (S..), extension edges X..")
        if not e.drawn and not e.why:
            out.append(f"edge {e.id}: an extension edge says why it exists")
        if e.label is not None and ('"' in e.label or "|" in e.label):
            out.append(f"edge {e.id}: a label holds no '\"' or '|'")
    for n in m.nodes:
        if not n.drawn and not n.why:
            out.append(f"node {n.id}: an extension node says why it exists")
        for line in n.label:
            for seg in line:
                text = seg.code if isinstance(seg, Code) else seg
                if '"' in text:
                    out.append(f"node {n.id}: a label holds no '\"'")
    # Two edges with the same ends must be told apart by their evidence.
    seen: dict[tuple[str, str, str], str] = {}
    for e in m.edges:
        for w in e.when:
            key = (e.source, e.target, w)
            if key in seen:
                out.append(f"edges {seen[key]} and {e.id}: both selected by {w!r}")
            seen[key] = e.id
    names = [n.name for n in m.names]
    out += [f"duplicate name {n!r}" for n in sorted({n for n in names if names.count(n) > 1})]
    for n in m.names:
        if (n.kind == "type-member") != (n.of is not None):
            out.append(f"name {n.name!r}: `of` is given exactly for type members")
    for a in m.acknowledged:
        if a.node not in known:
            out.append(f"acknowledged finding: unknown node {a.node!r}")
    return out


class FlowModelError(ValueError):
    """A flow model file that does not load: names the file and what is wrong."""


_ADAPTER: TypeAdapter[FlowModel] = TypeAdapter(FlowModel)


def parse_flow_model(data: Any, source: str = "<flow model>") -> FlowModel:
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "$"
        raise FlowModelError(f"{source}: {where}: {err['msg']}") from None


def load_flow_model(path: Path = FLOW_FILE) -> FlowModel:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise FlowModelError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise FlowModelError(f"{path}: not YAML: {e}") from None
    return parse_flow_model(data, str(path))


def flow_model_json_schema() -> dict[str, Any]:
    return schema_document(_ADAPTER, "flow-model.schema.json")
