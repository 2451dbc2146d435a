"""Reading the Mermaid flowchart subset the pipeline page uses, back from a page.

The subset is what tools/mermaid_flow.py writes: a ``flowchart <dir>`` line, node lines
``id["label"]`` and edge lines ``a --> b``, ``a -->|label| b``, ``a -.->|label| b``. Every
other line is reported, so a block that strays from the subset fails with its line rather
than being half-read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HEADER = re.compile(r"^flowchart (TD|TB|LR|RL|BT)$")
NODE = re.compile(r'^\s+([A-Za-z][A-Za-z0-9_]*)\["([^"]*)"\]\s*$')
EDGE = re.compile(r"^\s+([A-Za-z][A-Za-z0-9_]*) (-->|-\.->)(?:\|([^|]*)\|)? ([A-Za-z][A-Za-z0-9_]*)\s*$")


@dataclass(frozen=True)
class PageNode:
    id: str
    label: str
    line: int  # 0-based offset of the line within the block


@dataclass(frozen=True)
class PageEdge:
    source: str
    target: str
    style: str  # solid or dotted
    label: str | None
    line: int

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        return (self.source, self.target, self.style, self.label)

    def text(self) -> str:
        arrow = "-.->" if self.style == "dotted" else "-->"
        return f"{self.source} {arrow}{f'|{self.label}|' if self.label is not None else ''} {self.target}"


@dataclass
class Flowchart:
    direction: str | None = None
    nodes: list[PageNode] = field(default_factory=list)
    edges: list[PageEdge] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (offset, message)


def parse_flowchart(block: str) -> Flowchart:
    fc = Flowchart()
    lines = block.split("\n")
    if not lines or not (m := HEADER.match(lines[0])):
        fc.problems.append((0, f"the block's first line is {lines[0]!r}, expected `flowchart TD` (or LR, RL, BT, TB)"))
    else:
        fc.direction = m.group(1)
    seen: dict[str, int] = {}
    for i, line in enumerate(lines[1:], start=1):
        if not line.strip():
            continue
        if m := NODE.match(line):
            if m.group(1) in seen:
                fc.problems.append((i, f"node {m.group(1)!r} is declared twice (first at block line {seen[m.group(1)] + 1})"))
            seen[m.group(1)] = i
            fc.nodes.append(PageNode(m.group(1), m.group(2), i))
        elif m := EDGE.match(line):
            fc.edges.append(PageEdge(m.group(1), m.group(4), "dotted" if m.group(2) == "-.->" else "solid",
                                     m.group(3), i))
        else:
            fc.problems.append((i, f"not a node or edge line of the flowchart subset: {line.strip()!r}"))
    declared = {n.id for n in fc.nodes}
    used: set[str] = set()
    for e in fc.edges:
        for end in (e.source, e.target):
            used.add(end)
            if end not in declared:
                fc.problems.append((e.line, f"edge `{e.text()}` uses node {end!r}, which is not declared"))
    for n in fc.nodes:
        if n.id not in used:
            fc.problems.append((n.line, f"node {n.id!r} has no edge"))
    keys = [e.key for e in fc.edges]
    for e in fc.edges:
        if keys.count(e.key) > 1 and keys.index(e.key) != fc.edges.index(e):
            fc.problems.append((e.line, f"edge `{e.text()}` is drawn twice"))
    return fc
