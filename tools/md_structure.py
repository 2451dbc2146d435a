"""The structure of a Markdown page, as the EN/ZH pairing rules compare it.

Upstream's pairing gate compares, in order: heading depths, fenced blocks verbatim, table
dimensions, list shapes and link targets (HTML, paragraphs, emphasis and inline code are not
compared). This module reads a page with markdown-it (CommonMark plus GFM tables) and keeps
exactly those items, each with its 1-based line, plus what the other checks need: the
paragraphs (for the language switcher and the prose), the inline code spans and the plain
text runs of each paragraph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

_MD = MarkdownIt("commonmark").enable("table")


@dataclass(frozen=True)
class Item:
    """One compared item: ``text`` is what the pairing rules compare."""
    line: int
    text: str


@dataclass(frozen=True)
class Fence:
    line: int  # the line of the opening fence
    info: str
    body: str  # without the final newline (mdast's ``value``)

    @property
    def signature(self) -> str:
        return f"```{self.info}\n{self.body}"


@dataclass(frozen=True)
class Paragraph:
    line: int
    source: str  # the paragraph's raw inline source
    code: tuple[str, ...]  # inline code spans, in order
    text: tuple[str, ...]  # plain text runs (outside code and link targets)
    links: tuple[str, ...]  # link targets, as written after markdown-it's normalization


@dataclass(frozen=True)
class OrderedList:
    line: int
    items: tuple[str, ...]  # the inline source of each item's first block


@dataclass
class Structure:
    headings: list[Item] = field(default_factory=list)  # text: the depth
    fences: list[Fence] = field(default_factory=list)
    tables: list[Item] = field(default_factory=list)  # text: "<rows>x<cols>"
    lists: list[Item] = field(default_factory=list)  # "ordered:start=N:items=K" or "bullet:items=K"
    links: list[Item] = field(default_factory=list)  # text: the raw target
    paragraphs: list[Paragraph] = field(default_factory=list)
    cells: list[Paragraph] = field(default_factory=list)  # each table cell's inline source (claims in tables)
    ordered_lists: list[OrderedList] = field(default_factory=list)  # their items' first lines, for order claims

    def first_paragraph_after_h1(self) -> Paragraph | None:
        """The first paragraph after the H1 when no other heading comes before it."""
        if len(self.headings) == 0:
            return None
        h1 = self.headings[0].line
        nxt = self.headings[1].line if len(self.headings) > 1 else None
        for p in self.paragraphs:
            if p.line > h1 and (nxt is None or p.line < nxt):
                return p
        return None


def _line(tok: Token) -> int:
    return tok.map[0] + 1 if tok.map else 0


def _inline(tok: Token) -> Paragraph:
    code: list[str] = []
    text: list[str] = []
    links: list[str] = []
    # An image's alt text sits in the image token's own children, so it never counts as
    # prose here, and its target is not a link (images are not compared).
    for child in tok.children or []:
        if child.type == "code_inline":
            code.append(child.content)
        elif child.type == "text":
            text.append(child.content)
        elif child.type == "link_open":
            links.append(str(child.attrs.get("href", "")))
    return Paragraph(_line(tok), tok.content, tuple(code), tuple(text), tuple(links))


@lru_cache(maxsize=1024)
def parse(text: str) -> Structure:
    """The page's structure; cached, because every check of ``docs check`` reads every page
    (callers must not change what it returns)."""
    s = Structure()
    tokens = _MD.parse(text)
    list_stack: list[tuple[Token, list[int]]] = []
    items: list[list[str]] = []  # per open list: each item's first inline source
    item_open: list[bool] = []  # per open list: the current item has no inline yet
    table_rows = 0
    table_cols = 0
    table_line = 0
    in_head_row = False
    in_paragraph = False
    row_line = 0
    for tok in tokens:
        t = tok.type
        if t == "heading_open":
            s.headings.append(Item(_line(tok), str(int(tok.tag[1:]))))
        elif t in ("fence", "code_block"):
            info = tok.info.strip() if t == "fence" else ""
            s.fences.append(Fence(_line(tok), info, tok.content[:-1] if tok.content.endswith("\n") else tok.content))
        elif t == "table_open":
            table_rows, table_cols, table_line = 0, 0, _line(tok)
        elif t == "tr_open":
            row_line = _line(tok)
            table_rows += 1
            in_head_row = table_rows == 1
        elif t == "th_open" and in_head_row:
            table_cols += 1
        elif t == "table_close":
            row_line = 0
            s.tables.append(Item(table_line, f"{table_rows}x{table_cols}"))
        elif t in ("bullet_list_open", "ordered_list_open"):
            # Lists are recorded in document order of their start, as mdast visits them.
            s.lists.append(Item(_line(tok), ""))
            list_stack.append((tok, [len(s.lists) - 1, 0]))
            items.append([])
            item_open.append(False)
        elif t == "list_item_open" and list_stack:
            list_stack[-1][1][1] += 1
            item_open[-1] = True
        elif t in ("bullet_list_close", "ordered_list_close"):
            sources = items.pop()
            item_open.pop()
            if t == "ordered_list_close":
                s.ordered_lists.append(OrderedList(_line(list_stack[-1][0]), tuple(sources)))
            opener, (index, count) = list_stack.pop()
            if opener.type == "ordered_list_open":
                start = int(opener.attrs.get("start", 1) or 1)
                kind = f"ordered:start={start}:items={count}"
            else:
                kind = f"bullet:items={count}"
            s.lists[index] = Item(s.lists[index].line, kind)
        elif t == "paragraph_open":
            in_paragraph = True
        elif t == "paragraph_close":
            in_paragraph = False
        if t == "inline":
            if item_open and item_open[-1]:
                items[-1].append(tok.content)
                item_open[-1] = False
            para = _inline(tok)
            s.links += [Item(para.line, target) for target in para.links]
            if in_paragraph:
                s.paragraphs.append(para)
            elif row_line:  # inside a table: a cell
                s.cells.append(Paragraph(para.line or row_line, para.source, para.code, para.text, para.links))
    return s


def hard_wrapped(text: str) -> list[int]:
    """Lines of paragraphs that span more than one line (upstream's md-wrap rule)."""
    out = []
    for tok in _MD.parse(text):
        if tok.type == "paragraph_open" and tok.map and tok.map[1] - tok.map[0] > 1:
            out.append(tok.map[0] + 1)
    return out
