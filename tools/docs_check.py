"""``dsh-conformance docs check``: the pipeline page against its pair, its flow model and the
catalogs, for our docs or any DSH-style docs tree (upstream's included).

Four groups of checks, each finding an error or a warning at ``file:line``:

1. Pairs (every ``*.zh.md`` and ``*.i18n.yaml`` of the tree): the three files exist, the
   record's format and its git blob hashes, the Chinese language switcher, link locale,
   generated regions, and structural parity (heading depths, fenced blocks verbatim, table
   and list shapes, link targets), plus LF line ends and one final newline. Unlike
   upstream's gate, a pair that is out of sync still gets its structural checks, so that
   one failure does not hide another.
2. The pipeline page: one Mermaid block per side, equal on both sides, inside the subset
   the flow model renders to; every node and edge matched against the model; the block
   equal to the model's rendering.
3. Names: every name in the labels and the prose (code spans, ``<code>``, plain
   ``scope/name`` tokens and type members) has a kind in the flow model's name table and
   that kind in the catalog index; where the tree has its own catalogs (upstream's
   persistence, event, tool catalogs), the name is also found there with the same badge or
   mode; and label wording agrees with the kinds ("waterfall", "synchronous notification",
   "Session event:", a group of "session events", "Tool-owned").

4. Prose order (tools/docs_prose.py): every page's order claims ("A before B", "first A, then
   B", "A 在 B 之前", arrow chains, ordered lists) against the flow model's graph, and the two
   sides of each pair held to the same claims, whatever their record says.

A wording disagreement that the flow model acknowledges (with the reason) is a warning.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .catalog_index import INDEX_FILE, CatalogError, CatalogIndex, load_index
from .docs_prose import ProseChecker, check_prose, shown
from .glossary import GlossaryError, check_glossary, load_glossary
from .flow_model import FLOW_FILE, FlowModel, FlowModelError, load_flow_model
from .name_table import name_table
from .md_structure import Fence, Item, Structure, hard_wrapped, parse
from .mermaid_flow import label_text, render_mermaid
from .mermaid_parse import Flowchart, PageEdge, parse_flowchart
from .pairing import blob_hash, parse_record
from .pairing_rules import PairingRules
from .pipeline_claims import ClaimChecker, ClaimsError, check_claims, load_claims
from .pipeline_page import PROSE_FILE
from .prose_claims import LexiconError, load_lexicon
from .tree_catalogs import TreeCatalogs, catalog_entries, read_tree_catalogs

Severity = Literal["error", "warning"]
SKIPPED_DIRS = frozenset({"node_modules", "vendor", "lib", "tmp", "coverage", ".git"})
ZH_SWITCHER = "[English]({name}) | 中文"
EN_SWITCHER = "English | [中文]({name})"
GITHUB_BLOB = re.compile(r"^https://github\.com/[^/]+/[^/]+/blob/[^/]+/(?:.*/)?([^/]+)$")


@dataclass(frozen=True)
class Finding:
    severity: Severity
    file: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.severity}: {self.message}"


class BadInput(ValueError):
    """The command cannot run: a missing tree, catalogs that do not load, nothing to check."""


class _Report:
    """The findings; a pairing check runs ``under`` its rule (tools/data/pairing-rules.yaml) and
    reports nothing when the tree's rules (``--as-of``) do not hold that rule."""

    def __init__(self, in_force: frozenset[str] | None = None) -> None:
        self.findings: list[Finding] = []
        self.in_force = in_force
        self.rule: str | None = None

    @contextmanager
    def under(self, rule: str) -> Iterator[None]:
        before, self.rule = self.rule, rule
        try:
            yield
        finally:
            self.rule = before

    def _on(self) -> bool:
        return self.rule is None or self.in_force is None or self.rule in self.in_force

    def error(self, file: Path, line: int, message: str) -> None:
        if self._on():
            self.findings.append(Finding("error", file, line, message))

    def warning(self, file: Path, line: int, message: str) -> None:
        if self._on():
            self.findings.append(Finding("warning", file, line, message))


# ================================================================== entry point

def docs_dir(root: Path) -> Path:
    """The directory holding the pages: ``ROOT/docs`` when it exists, else ``ROOT``."""
    return root / "docs" if (root / "docs").is_dir() else root


def check_tree(root: Path, catalogs: Path, pairing: PairingRules | None = None) -> list[Finding]:
    """Every check of the tree; the pairs by ``pairing`` (the rules a tree's own tooling
    enforced at a commit, ``--as-of``), else by every rule of today."""
    if not root.is_dir():
        raise BadInput(f"{root}: no such directory")
    if not catalogs.is_dir():
        raise BadInput(f"{catalogs}: no such catalogs directory")
    try:
        model = load_flow_model(catalogs / FLOW_FILE.name)
        index = load_index(catalogs)
        lexicon = load_lexicon(model)
        claims = load_claims(model)
        glossary = load_glossary()
    except (FlowModelError, CatalogError, LexiconError, ClaimsError, GlossaryError) as e:
        raise BadInput(str(e)) from None
    docs = docs_dir(root)
    sources = _pair_sources(docs)
    page = docs / f"{model.page}.md"
    if not sources and not page.is_file():
        raise BadInput(f"{docs}: no bilingual pair (*.zh.md, *.i18n.yaml) and no {page.name} to check")
    r = _Report(pairing.in_force if pairing is not None else None)
    for source in sources:
        _check_pair(r, docs, source, sources)
    _check_tree_catalogs(r, docs, index)
    if page.is_file():
        _check_pipeline_page(r, page, model, index, read_tree_catalogs(docs))
    else:
        r.error(docs, 0, f"{page.name}: missing; the flow model {model.page}.flow.yaml describes this page")
    checker = ProseChecker(model, lexicon, catalogs / FLOW_FILE.name, PROSE_FILE)
    pages = _pages(docs)
    _add_prose_errors(r, check_prose(pages, sources, checker))
    for f in check_claims(pages, ClaimChecker(model, index, lexicon, claims)):
        r.error(f.file, f.line, f.message)
    for g in check_glossary(sources, glossary):
        # Our generated page keeps upstream's Chinese word for word (its prose source says so).
        if is_ours(g.file.with_name(g.file.name.removesuffix(".zh.md") + ".md")):
            r.warning(g.file, g.line, g.message + " — kept: our page reproduces upstream's text")
        else:
            r.error(g.file, g.line, g.message)
    return sorted(r.findings, key=lambda f: (str(f.file), f.line, f.severity, f.message))


def _pages(docs: Path) -> list[Path]:
    return sorted(p for p in docs.rglob("*.md")
                  if p.is_file() and not SKIPPED_DIRS & set(p.relative_to(docs).parts))


def _add_prose_errors(r: _Report, errors: list) -> None:
    """The prose checks' errors; a side's "out of sync" error folds into the prose error of
    that side (one edit, one error)."""
    for e in errors:
        record = e.file.with_name(e.file.name.removesuffix(".zh.md").removesuffix(".md") + ".i18n.yaml")
        stale = next((f for f in r.findings if f.severity == "error" and f.file == record
                      and f.message.startswith(f"{e.file.name} is out of sync")), None)
        message = e.message
        if stale is not None:
            r.findings.remove(stale)
            message += f" (and {record.name}:{stale.line} holds an older hash of this file)"
        r.error(e.file, e.line, message)


def _pair_sources(docs: Path) -> list[Path]:
    """The English side of every pair anchor (a ``.zh.md`` or an ``.i18n.yaml``)."""
    out: set[Path] = set()
    for path in docs.rglob("*"):
        if SKIPPED_DIRS & set(path.relative_to(docs).parts):
            continue
        if path.name.endswith(".zh.md"):
            out.add(path.with_name(path.name[: -len(".zh.md")] + ".md"))
        elif path.name.endswith(".i18n.yaml"):
            out.add(path.with_name(path.name[: -len(".i18n.yaml")] + ".md"))
    return sorted(out)


# ================================================================== 1. pairs

def _read(r: _Report, path: Path) -> str | None:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        r.error(path, data[: e.start].count(b"\n") + 1, f"not UTF-8 ({e.reason} at byte {e.start})")
        return None
    if "\r" in text:
        r.error(path, text[: text.index("\r")].count("\n") + 1, "CR line ending; pages use LF only")
    if not text.endswith("\n") or text.endswith("\n\n"):
        r.error(path, text.count("\n") + 1, "the file must end with exactly one newline")
    return text


def _check_pair(r: _Report, docs: Path, en: Path, sources: list[Path]) -> None:
    stem = en.name[: -len(".md")]
    zh, record = en.with_name(stem + ".zh.md"), en.with_name(stem + ".i18n.yaml")
    missing = [p.name for p in (en, zh, record) if not p.is_file()]
    if missing:
        anchor = next(p for p in (record, zh, en) if p.is_file())
        with r.under("pair-complete"):
            r.error(anchor, 1, f"incomplete pair — missing {', '.join(missing)}")
    if not en.is_file() or not zh.is_file():
        return
    en_text, zh_text = _read(r, en), _read(r, zh)
    if record.is_file():
        with r.under("record"):
            _check_record(r, record, en, zh)
    if en_text is None or zh_text is None:
        return
    a, b = parse(en_text), parse(zh_text)
    _check_switchers(r, en, zh, en_text, a, b)
    _check_structure(r, docs, en, zh, a, b)
    with r.under("link-locale"):
        _check_link_locale(r, docs, en, a, zh=False, sources=sources)
        _check_link_locale(r, docs, zh, b, zh=True, sources=sources)
    with r.under("regions"):
        _check_regions(r, en, zh, en_text, zh_text)


def _check_record(r: _Report, record: Path, en: Path, zh: Path) -> None:
    data = record.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        r.error(record, data[: e.start].count(b"\n") + 1, f"not UTF-8 ({e.reason} at byte {e.start}); a pairing "
                                                          "record is a short text file")
        return
    hashes, problems = parse_record(text, (en.name, zh.name))
    for p in problems:
        r.error(record, p.line, p.message)
    for side in (en, zh):
        if side.name not in hashes:
            continue
        recorded, line = hashes[side.name]
        actual = blob_hash(side.read_bytes())
        if actual != recorded:
            r.error(record, line, f"{side.name} is out of sync — its git blob hash is {actual}, the record holds "
                                  f"{recorded}: the content no longer matches the pair's last confirmed-consistent "
                                  f"state in {record.name} (regenerate the pair, or bring the other side along "
                                  f"and re-record: `dsh-conformance docs record {shown(en)}`)")


def _is_generated(text: str) -> bool:
    head = text.split("-->", 1)[0]
    return text.startswith("<!--") and "generated" in head.lower()


def _switcher_ok(source: str, pattern: str, target: str) -> bool:
    if source == pattern.format(name=target):
        return True
    # The target may also be the full GitHub blob URL of the other side.
    m = re.fullmatch(re.escape(pattern.format(name="@@")).replace("@@", "(.+)"), source)
    return bool(m and (g := GITHUB_BLOB.match(m.group(1))) and g.group(1) == target)


def _check_switchers(r: _Report, en: Path, zh: Path, en_text: str, a: Structure, b: Structure) -> None:
    zh_first = b.first_paragraph_after_h1()
    if zh_first is None or not _switcher_ok(zh_first.source, ZH_SWITCHER, en.name):
        line = b.headings[0].line if b.headings else 1
        with r.under("switcher-zh"):
            r.error(zh, line, f"missing language switcher — no link to {en.name}: the first paragraph after the "
                              f"title must be `{ZH_SWITCHER.format(name=en.name)}`")
    en_first = a.first_paragraph_after_h1()
    has_switcher = en_first is not None and _switcher_ok(en_first.source, EN_SWITCHER, zh.name)
    with r.under("switcher-en"):
        if _is_generated(en_text):
            if has_switcher:
                r.warning(en, en_first.line if en_first else 1,
                          "a generated English page carries a language switcher; it must equal its generator's output")
        elif not has_switcher:
            line = a.headings[0].line if a.headings else 1
            r.error(en, line, f"missing language switcher — no link back to {zh.name}: the first paragraph after "
                              f"the title must be `{EN_SWITCHER.format(name=zh.name)}`")


def _is_external(target: str) -> bool:
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)) or target.startswith("//")


def _semantic_target(docs: Path, page: Path, target: str) -> str:
    """A link target as the pairing compares it: external ones as written, internal ones as
    the English path relative to the docs tree (``.zh.md`` read as ``.md``)."""
    if _is_external(target) or target.startswith("#"):
        return target
    path, sep, fragment = target.partition("#")
    if path.endswith(".zh.md"):
        path = path[: -len(".zh.md")] + ".md"
    resolved = (page.parent / path).resolve()
    try:
        rel = resolved.relative_to(docs.resolve()).as_posix()
    except ValueError:
        rel = path
    return rel + sep + fragment


def _links_without_switcher(s: Structure, switcher: str) -> list[Item]:
    first = s.first_paragraph_after_h1()
    links = list(s.links)
    if first is not None and first.source.replace(" ", "") == switcher.replace(" ", "") and first.links:
        drop = next((i for i, link in enumerate(links) if link.line == first.line), None)
        if drop is not None:
            links.pop(drop)
    return links


def _first_difference(kind: str, en: Path, zh: Path, xs: list[Item], ys: list[Item],
                      show: str = "{}") -> tuple[int, str] | None:
    for n, (x, y) in enumerate(zip(xs, ys), start=1):
        if x.text != y.text:
            return x.line, (f"{en.name} ↔ {zh.name}: {kind} #{n} diverges between the pair: "
                            f"{show.format(x.text)} ({en.name}:{x.line}) vs {show.format(y.text)} ({zh.name}:{y.line})")
    if len(xs) != len(ys):
        n = min(len(xs), len(ys)) + 1
        extra, side = (xs[n - 1], en.name) if len(xs) > len(ys) else (ys[n - 1], zh.name)
        return (xs[n - 1].line if len(xs) > len(ys) else 1), (
            f"{en.name} ↔ {zh.name}: {kind} #{n} diverges between the pair: {en.name} has {len(xs)}, "
            f"{zh.name} has {len(ys)}; the first extra one is {show.format(extra.text)} at {side}:{extra.line}")
    return None


def _fence_difference(en: Path, zh: Path, xs: list[Fence], ys: list[Fence]) -> tuple[int, str] | None:
    for n, (x, y) in enumerate(zip(xs, ys), start=1):
        if x.signature == y.signature:
            continue
        if x.info != y.info:
            return x.line, (f"{en.name} ↔ {zh.name}: code block #{n} diverges between the pair: info string "
                            f"{x.info!r} ({en.name}:{x.line}) vs {y.info!r} ({zh.name}:{y.line})")
        xl, yl = x.body.split("\n"), y.body.split("\n")
        i = next((i for i, (p, q) in enumerate(zip(xl, yl)) if p != q), min(len(xl), len(yl)))
        p = xl[i] if i < len(xl) else "<end of block>"
        q = yl[i] if i < len(yl) else "<end of block>"
        return x.line + 1 + i, (f"{en.name} ↔ {zh.name}: code block #{n} ({x.info or 'no info'}) diverges between the "
                                f"pair at {en.name}:{x.line + 1 + i} / {zh.name}:{y.line + 1 + i}: {p!r} vs {q!r}")
    if len(xs) != len(ys):
        return 1, f"{en.name} ↔ {zh.name}: {en.name} has {len(xs)} code block(s), {zh.name} has {len(ys)}"
    return None


def _check_structure(r: _Report, docs: Path, en: Path, zh: Path, a: Structure, b: Structure) -> None:
    checks = [
        ("structure-headings", "heading (depth)", a.headings, b.headings, "{}"),
        ("structure-tables", "table (row x column count)", a.tables, b.tables, "{}"),
        ("structure-lists", "list (kind, start, item count)", a.lists, b.lists, "{}"),
    ]
    for rule, kind, xs, ys, show in checks:
        if d := _first_difference(kind, en, zh, xs, ys, show):
            with r.under(rule):
                r.error(en, *d)
    if d := _fence_difference(en, zh, a.fences, b.fences):
        with r.under("structure-code"):
            r.error(en, *d)
    xs = [Item(i.line, _semantic_target(docs, en, i.text))
          for i in _links_without_switcher(a, EN_SWITCHER.format(name=zh.name))]
    ys = [Item(i.line, _semantic_target(docs, zh, i.text))
          for i in _links_without_switcher(b, ZH_SWITCHER.format(name=en.name))]
    if d := _first_difference("link target", en, zh, xs, ys, "`{}`"):
        with r.under("structure-links"):
            r.error(en, *d)


def _check_link_locale(r: _Report, docs: Path, page: Path, s: Structure, zh: bool, sources: list[Path]) -> None:
    paired = {p.resolve() for p in sources}
    # The switcher links to the other side on purpose: it is exempt.
    if zh:
        switcher = ZH_SWITCHER.format(name=page.name[: -len(".zh.md")] + ".md")
    else:
        switcher = EN_SWITCHER.format(name=page.name[: -len(".md")] + ".zh.md")
    links = _links_without_switcher(s, switcher)
    for link in links:
        if _is_external(link.text) or link.text.startswith("#"):
            continue
        path, sep, fragment = link.text.partition("#")
        base = path[: -len(".zh.md")] + ".md" if path.endswith(".zh.md") else path
        if (page.parent / base).resolve() not in paired:
            continue  # outside the bilingual corpus: kept as written
        want = (base[: -len(".md")] + ".zh.md") if zh else base
        if path != want:
            r.error(page, link.line, f'link target "{link.text}" uses the wrong locale; expected "{want}{sep}{fragment}"')


REGION_BEGIN = re.compile(r"^<!-- BEGIN GENERATED ([\w.-]+)\b.*-->$")
REGION_END = re.compile(r"^<!-- END GENERATED ([\w.-]+) -->$")


def _regions(r: _Report, page: Path, text: str) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    open_: tuple[str, int, list[str]] | None = None
    for n, line in enumerate(text.split("\n"), start=1):
        if m := REGION_BEGIN.match(line):
            if open_ is not None:
                r.error(page, n, f"generated region {m.group(1)!r} begins inside region {open_[0]!r}")
            open_ = (m.group(1), n, [])
        elif m := REGION_END.match(line):
            if open_ is None or open_[0] != m.group(1):
                r.error(page, n, f"END of generated region {m.group(1)!r} without its BEGIN")
            else:
                # Paired-document links are compared as the English path.
                out[open_[0]] = (open_[1], re.sub(r"\.zh\.md\b", ".md", "\n".join(open_[2])))
            open_ = None
        elif open_ is not None:
            open_[2].append(line)
    if open_ is not None:
        r.error(page, open_[1], f"generated region {open_[0]!r} is never closed")
    return out


def _check_regions(r: _Report, en: Path, zh: Path, en_text: str, zh_text: str) -> None:
    a, b = _regions(r, en, en_text), _regions(r, zh, zh_text)
    for slug in sorted(set(a) | set(b)):
        if slug not in a or slug not in b:
            where, line = (en, a[slug][0]) if slug in a else (zh, b[slug][0])
            r.error(where, line, f"generated region {slug!r} is on one side of the pair only")
        elif a[slug][1] != b[slug][1]:
            r.error(en, a[slug][0], f"generated region {slug!r} differs beyond paired-document locale paths "
                                    "— regenerate both sides")


# ================================================================== 2. the pipeline page

@dataclass(frozen=True)
class Block:
    page: Path
    fence: Fence

    def line(self, offset: int) -> int:
        return self.fence.line + 1 + offset


def _mermaid_block(r: _Report, page: Path, s: Structure) -> Block | None:
    fences = [f for f in s.fences if f.info.split(" ")[0] == "mermaid"]
    if len(fences) != 1:
        r.error(page, fences[1].line if len(fences) > 1 else 1,
                f"the pipeline page has {len(fences)} `mermaid` blocks; it must have exactly one")
        return None
    return Block(page, fences[0])


def _check_pipeline_page(r: _Report, en: Path, model: FlowModel, index: CatalogIndex, tree: TreeCatalogs) -> None:
    zh = en.with_name(en.name[: -len(".md")] + ".zh.md")
    sides = [en] + ([zh] if zh.is_file() else [])
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in sides}
    structures = {p: parse(t) for p, t in texts.items()}
    blocks = {p: _mermaid_block(r, p, structures[p]) for p in sides}
    if all(blocks.values()) and len(sides) == 2 and blocks[en].fence.body != blocks[zh].fence.body:  # type: ignore[union-attr]
        _first_line_difference(r, blocks[en], blocks[zh], "the Mermaid block differs between the languages")  # type: ignore[arg-type]
    checked: list[str] = []
    for page in sides:
        block = blocks[page]
        if block is None or block.fence.body in checked:
            continue  # an identical block was checked on the other side
        checked.append(block.fence.body)
        chart = parse_flowchart(block.fence.body)
        for offset, message in chart.problems:
            r.error(page, block.line(offset), message)
        _match_model(r, block, chart, model)
        _check_labels(r, block, chart, model, index, tree)
    for page in sides:
        for line in hard_wrapped(texts[page]):
            r.warning(page, line, "hard-wrapped paragraph: a prose paragraph stays on one line")
        for para in structures[page].paragraphs:
            _check_prose(r, page, para.line, para.source, para.code, para.text, model, index, tree)
    if len(sides) == 2:
        spans = {p: Counter(c for para in structures[p].paragraphs for c in para.code) for p in sides}
        if spans[en] != spans[zh]:
            only_en = sorted((spans[en] - spans[zh]).elements())
            only_zh = sorted((spans[zh] - spans[en]).elements())
            r.warning(zh, 1, "the prose's code spans differ between the languages (they are copied verbatim): "
                             f"only in {en.name}: {only_en or '-'}; only in {zh.name}: {only_zh or '-'}")


def _first_line_difference(r: _Report, x: Block, y: Block, what: str) -> None:
    xl, yl = x.fence.body.split("\n"), y.fence.body.split("\n")
    i = next((i for i, (p, q) in enumerate(zip(xl, yl)) if p != q), min(len(xl), len(yl)))
    p = xl[i] if i < len(xl) else "<end of block>"
    q = yl[i] if i < len(yl) else "<end of block>"
    r.error(x.page, x.line(i), f"{what}: first difference at {x.page.name}:{x.line(i)} / {y.page.name}:{y.line(i)}: "
                               f"{p.strip()!r} vs {q.strip()!r}")


def _match_model(r: _Report, block: Block, chart: Flowchart, model: FlowModel) -> None:
    flow = f"the flow model ({model.page}.flow.yaml)"
    page_nodes = {n.id: n for n in chart.nodes}
    model_nodes = {n.id: n for n in model.drawn_nodes}
    specific = 0
    for n in chart.nodes:
        if n.id not in model_nodes:
            r.error(block.page, block.line(n.line), f"node {n.id!r} is not a drawn node of {flow}")
            specific += 1
        elif n.label != label_text(model_nodes[n.id]):
            r.error(block.page, block.line(n.line), f"node {n.id!r}: label {n.label!r} differs from {flow}: "
                                                    f"{label_text(model_nodes[n.id])!r}")
            specific += 1
    for node_id in model_nodes:
        if node_id not in page_nodes:
            r.error(block.page, block.fence.line, f"node {node_id!r} of {flow} is missing from the Mermaid block")
            specific += 1
    page_edges = Counter(e.key for e in chart.edges)
    model_edges = Counter((e.source, e.target, e.style, e.label) for e in model.drawn_edges)
    for e in chart.edges:
        if page_edges[e.key] > model_edges[e.key]:
            r.error(block.page, block.line(e.line), f"edge `{e.text()}` is not a drawn edge of {flow}"
                                                    + _near(e, model))
            page_edges[e.key] -= 1
            specific += 1
    for e in model.drawn_edges:
        key = (e.source, e.target, e.style, e.label)
        if page_edges[key] < model_edges[key]:
            arrow = "-.->" if e.style == "dotted" else "-->"
            r.error(block.page, block.fence.line, f"edge {e.id} `{e.source} {arrow}"
                                                  f"{f'|{e.label}|' if e.label else ''} {e.target}` of {flow} "
                                                  "is missing from the Mermaid block")
            page_edges[key] += 1
            specific += 1
    rendered = render_mermaid(model)
    if not specific and not chart.problems and block.fence.body != rendered:
        xl, yl = block.fence.body.split("\n"), rendered.split("\n")
        i = next((i for i, (p, q) in enumerate(zip(xl, yl)) if p != q), min(len(xl), len(yl)))
        r.error(block.page, block.line(i), f"the Mermaid block is not {flow}'s rendering (same nodes and edges, "
                                           f"another order or spelling): first difference at block line {i + 1}: "
                                           f"{xl[i] if i < len(xl) else '<end>'!r} vs {yl[i] if i < len(yl) else '<end>'!r}")


def _near(e: PageEdge, model: FlowModel) -> str:
    """A hint when the model joins the same two nodes with another style or label."""
    same_ends = [m for m in model.drawn_edges if (m.source, m.target) == (e.source, e.target)]
    if same_ends:
        m = same_ends[0]
        return f" (the model draws {m.id} between these nodes as {m.style}{f' with label {m.label!r}' if m.label else ''})"
    return ""


# ================================================================== 3. names

CODE_TAG = re.compile(r"<code>(.*?)</code>")
SLASH_TOKEN = re.compile(r"(?<![\w/.-])([a-z][a-z0-9-]*(?:/[a-z0-9][a-z0-9-]*)+)(?![\w/])")
MEMBER_TOKEN = re.compile(r"(?<![\w.])(?:([A-Z][A-Za-z0-9]*)\.)?([a-z]+[A-Z][A-Za-z0-9]*|[a-z]+(?=\(\)))(?:\([^)]*\))?")
VALUE_MEMBER = re.compile(r"^(?!ctx\.)[a-z][A-Za-z0-9]*\.([A-Za-z_][A-Za-z0-9_]*)(?:\(.*\))?$")
SERVICE_CALL = re.compile(r"^(ctx\.[A-Za-z_][\w.]*)\(.*\)$")
CODE_MEMBER = re.compile(r"^(?:([A-Z][A-Za-z0-9]*)\.)?([A-Za-z_][A-Za-z0-9_]*)\(.*\)$")


def _plain_names(text: str) -> list[tuple[str, str | None]]:
    """(name, owner type) of the name-shaped tokens of plain text."""
    out: list[tuple[str, str | None]] = [(m.group(1), None) for m in SLASH_TOKEN.finditer(text)]
    out += [(m.group(2), m.group(1)) for m in MEMBER_TOKEN.finditer(text)]
    return out


def _code_name(span: str) -> tuple[str, str | None]:
    if m := SERVICE_CALL.match(span):
        return m.group(1), None  # `ctx.tools.execute()`: a service method
    if m := VALUE_MEMBER.match(span):
        return m.group(1), None  # `exec.signal`, `result.additionalContexts`: a member of some type
    if m := CODE_MEMBER.match(span):
        return m.group(2), m.group(1)
    return span, None


def _resolve(r: _Report, page: Path, line: int, name: str, owner: str | None, model: FlowModel,
             index: CatalogIndex, tree: TreeCatalogs) -> None:
    if name in model.notNames:
        return
    table = name_table(index)
    entries = table.entries_of(name)
    if not entries:
        r.error(page, line, f"unknown name `{name}`: not in the name table (generated from {INDEX_FILE}, "
                            "rc.8's public surface as the catalogs hold it)")
        return
    entry = entries[0] if owner is None else next((e for e in entries if e.of == owner), None)
    if entry is None:
        types = ", ".join(sorted({e.of or e.kind for e in entries}))
        r.error(page, line, f"`{owner}.{name}`: the name table has `{name}` as a member of {types}")
        return
    _resolve_in_tree(r, page, line, name, entry.kind, index, tree)


def _check_tree_catalogs(r: _Report, docs: Path, index: CatalogIndex) -> None:
    """The tree's own event catalogs (the persistence catalog, the event matrix, the subsystem
    pages' generated regions) give each pipeline event the mode or badge of the catalog index."""
    for name, kind, said, where in catalog_entries(docs):
        live, ev = index.live_event(name), index.session_event(name)
        if live is None and ev is None:
            continue  # not a pipeline name: the catalogs do not judge it
        if kind == "live-event" and live is None:
            r.error(where.file, where.line, f"`{name}` is listed as a live event ({said}), but {INDEX_FILE} has it as "
                                            f"a session-log event ({', '.join(ev.rules)})")  # type: ignore[union-attr]
        elif kind == "live-event" and live is not None and said != live.mode:
            r.error(where.file, where.line, f"`{name}` is listed with mode {said}, but {INDEX_FILE} gives mode "
                                            f"{live.mode} ({', '.join(live.rules)}); suggested wording: "
                                            f"`{name}` — {live.mode}")
        elif kind == "session-event" and ev is None:
            r.error(where.file, where.line, f"`{name}` is listed as a session-log event, but {INDEX_FILE} has it as "
                                            f"a live {live.mode} event ({', '.join(live.rules)})")  # type: ignore[union-attr]
        elif kind == "session-event" and ev is not None and said != ev.badge:
            r.error(where.file, where.line, f"`{name}` is marked {said}, but {INDEX_FILE} marks it {ev.badge} "
                                            f"({', '.join(ev.rules)}); suggested wording: `{name}` — {ev.badge}")


def _resolve_in_tree(r: _Report, page: Path, line: int, name: str, kind: str, index: CatalogIndex,
                     tree: TreeCatalogs) -> None:
    if not tree.has(kind):
        return
    where = tree.files[kind].name
    if kind == "session-event":
        ours = index.session_event(name)
        found = tree.session_events.get(name)
        if found is None:
            r.error(page, line, f"`{name}` (session-log event) is not in the tree's {where}")
        elif ours is not None and found[0] != ours.badge:
            r.error(page, line, f"`{name}`: {found[1].file.name}:{found[1].line} marks it {found[0]}, "
                                f"{INDEX_FILE} {ours.badge}")
    elif kind == "live-event":
        ours_live = index.live_event(name)
        found = tree.live_events.get(name)
        if found is None:
            r.error(page, line, f"`{name}` (live event) is not in the tree's event catalogs ({where}, subsystems/)")
        elif ours_live is not None and found[0] != ours_live.mode:
            r.error(page, line, f"`{name}`: {found[1].file.name}:{found[1].line} gives mode {found[0]}, "
                                f"{INDEX_FILE} {ours_live.mode}")
    elif kind == "service" and name not in tree.services:
        r.error(page, line, f"`{name}` (service) is not in the tree's subsystem pages")
    elif kind == "tool":
        package = next((t.package for t in index.tools if t.name == name), None)
        if (package, name) not in tree.tools:
            r.error(page, line, f"`{name}` (tool) is not under `{package}` in the tree's {where}")
    elif kind == "package":
        package = next((p.package for p in index.packages if p.name == name), None)
        if package not in tree.packages:
            r.error(page, line, f"`{name}` (package {package}) has no section in the tree's {where}")


def _describe(name: str, index: CatalogIndex) -> str:
    live = index.live_event(name)
    if live is not None:
        return f"a live event with mode {live.mode}"
    if index.session_event(name) is not None:
        return "a session-log event"
    kinds = index.kinds_of(name)
    return f"a {', '.join(kinds)}" if kinds else "unknown to the catalogs"


def is_ours(page: Path) -> bool:
    """A page written by our ``docs generate``: it keeps upstream's text on purpose."""
    try:
        head = page.read_text(encoding="utf-8", errors="replace")[:400]
    except OSError:
        return False
    return head.startswith("<!--") and "dsh-conformance docs generate" in head.split("-->", 1)[0]


def _wording(r: _Report, page: Path, line: int, node: str, check: str, name: str, message: str,
             model: FlowModel) -> None:
    """A label that contradicts the catalogs. The flow model's acknowledged entries are known
    upstream errors: a warning on our generated page (which reproduces upstream's text on
    purpose), a real error on any other tree, upstream's included."""
    ack = next((a for a in model.acknowledged if (a.check, a.node, a.name) == (check, node, name)), None)
    if ack is not None and is_ours(page):
        r.warning(page, line, f"{message} — acknowledged in the flow model: {ack.why}")
    elif ack is not None:
        r.error(page, line, f"{message} — a known upstream error (flow model): {ack.why}")
    else:
        r.error(page, line, message)


def _check_labels(r: _Report, block: Block, chart: Flowchart, model: FlowModel, index: CatalogIndex,
                  tree: TreeCatalogs) -> None:
    for n in chart.nodes:
        line = block.line(n.line)
        label_lines = n.label.split("<br/>")
        all_codes = [html.unescape(c) for c in CODE_TAG.findall(n.label)]
        for text in label_lines:
            codes = [html.unescape(c) for c in CODE_TAG.findall(text)]
            for code in codes:
                _resolve(r, block.page, line, *_code_name(code), model, index, tree)
            for name, owner in _plain_names(CODE_TAG.sub(" ", text)):
                _resolve(r, block.page, line, name, owner, model, index, tree)
            for code in codes:
                if not name_table(index).entries_of(code):
                    continue  # reported as unknown above
                live = index.live_event(code)
                if re.search(r"\bwaterfall\b", text) and (live is None or live.mode != "waterfall"):
                    r.error(block.page, line, f"node {n.id!r} says `waterfall`, but `{code}` is {_describe(code, index)}")
                if "synchronous notification" in text and (live is None or live.mode != "emit"):
                    r.error(block.page, line, f"node {n.id!r} says `synchronous notification` (an emit event), "
                                              f"but `{code}` is {_describe(code, index)}")
                if text.startswith("Session event:") and index.session_event(code) is None:
                    r.error(block.page, line, f"node {n.id!r} says `Session event:`, but `{code}` is "
                                              f"{_describe(code, index)}")
        if re.search(r"session events", n.label, re.IGNORECASE):
            for code in all_codes:
                if name_table(index).entries_of(code) and index.session_event(code) is None:
                    _wording(r, block.page, line, n.id, "session-event-group", code,
                             f"node {n.id!r} groups `{code}` with session events, but it is {_describe(code, index)}",
                             model)
        if n.label.startswith("Tool-owned"):
            for code in all_codes:
                ev, live = index.session_event(code), index.live_event(code)
                writer = ev.writtenBy if ev is not None else live.dispatchedBy if live is not None else None
                if writer is not None and writer not in ("tool-body", "code-mode-bridge"):
                    _wording(r, block.page, line, n.id, "tool-owned-group", code,
                             f"node {n.id!r} calls `{code}` tool-owned, but the catalogs say {writer} writes it",
                             model)


def _check_prose(r: _Report, page: Path, line: int, source: str, codes: tuple[str, ...], texts: tuple[str, ...],
                 model: FlowModel, index: CatalogIndex, tree: TreeCatalogs) -> None:
    for code in codes:
        _resolve(r, page, line, *_code_name(code), model, index, tree)
    for text in texts:
        for name, owner in _plain_names(text):
            _resolve(r, page, line, name, owner, model, index, tree)
    # What the prose calls a name ("`X` waterfall") is tools/pipeline_claims.py's, on every page.
