"""The Mermaid text of the pipeline page, built from the flow model with mermaid-py.

mermaid-py's ``Node`` and ``Link`` classes build every node line and every unlabelled edge
line. Four things of upstream's exact format are beyond them, and only those are done by
hand here:

1. ``Node`` rewrites ids through ``text_to_snake_case`` (``toolCall`` becomes ``toolcall``);
   the page keeps camelCase ids, so the id is set back after construction.
2. ``Link`` quotes a label (``-->|"allow"|``); the page writes ``-->|allow|``, so a
   labelled edge is written from the link's own parts (origin, shape, heads, end).
3. ``FlowChart.script`` starts with a ``---title---`` front matter block and indents with
   tabs; the page has no front matter and indents with two spaces, so the lines are joined
   here (the ``FlowChart`` still holds the nodes and links, in order).
4. Importing mermaid-py prints a notice about IPython on stdout; it is swallowed so that the
   CLI's output stays ours.

Nothing here calls mermaid-py's network renderer (``Mermaid``): the text is all we need.
"""

from __future__ import annotations

import contextlib
import html
import io

from .flow_model import Code, Edge, FlowModel, Node

with contextlib.redirect_stdout(io.StringIO()):  # (4)
    from mermaid.flowchart import FlowChart, Link, LinkShape
    from mermaid.flowchart import Node as MermaidNode

INDENT = "  "


def label_text(node: Node) -> str:
    """A node's label as the page writes it: lines joined by ``<br/>``, names in ``<code>``
    with ``&``, ``<`` and ``>`` escaped (as upstream's ``mermaidCode`` does)."""
    return "<br/>".join(
        "".join(f"<code>{html.escape(s.code, quote=False)}</code>" if isinstance(s, Code) else s for s in line)
        for line in node.label)


def _node(node: Node) -> MermaidNode:
    n = MermaidNode(node.id, label_text(node))
    n.id_ = node.id  # (1)
    return n


def _edge_line(link: Link, edge: Edge) -> str:
    if edge.label is None:
        return str(link)
    # (2): the link's own parts, with the label unquoted
    return f"{link.origin.id_} {link.head_left}{link.shape}{link.head_right}|{edge.label}| {link.end.id_}"


def flowchart(model: FlowModel) -> FlowChart:
    """The drawn part of the model as a mermaid-py flowchart (nodes and links in order)."""
    nodes = {n.id: _node(n) for n in model.drawn_nodes}
    links = [Link(nodes[e.source], nodes[e.target],
                  shape=LinkShape.DOTTED if e.style == "dotted" else LinkShape.NORMAL)
             for e in model.drawn_edges]
    return FlowChart(model.page, list(nodes.values()), links, orientation=model.direction)


def render_mermaid(model: FlowModel) -> str:
    """The body of the page's ``mermaid`` fence, without the fence lines and without a final
    newline: ``flowchart TD``, then every drawn node and every drawn edge, indented by two."""
    chart = flowchart(model)
    lines = [f"flowchart {chart.orientation}"]  # (3)
    lines += [INDENT + str(n) for n in chart.nodes]
    lines += [INDENT + _edge_line(link, e) for link, e in zip(chart.links, model.drawn_edges, strict=True)]
    return "\n".join(lines)
