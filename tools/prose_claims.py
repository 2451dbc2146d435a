"""Order claims in prose: which stage of the flow model a sentence says comes before which.

A page says the pipeline's order in words: "the `tools/pre-execute` waterfall runs first,
monotonic guards run next", "`ctx.approval` resolves asks before monotonic guards",
"`tools/pre-execute` → registered monotonic guards → `tools/execute`", and in Chinese
"`ctx.approval` 在单调守卫之前处理询问", "首先 …，随后 …，然后 …". Each such statement is a set of
claims "A precedes B" between nodes of the flow model, which the model's graph can check (B
must be reachable from A) and which the two languages of a pair must share.

What counts:

- a *mention* names a node: a code span of one of the node's label names
  (`tools/pre-execute` is ``pre``), or a phrase of tools/data/prose-stages.yaml;
- an *order word* relates the mentions of its clause (clauses end at ``, ; ，；``) and
  sentence (sentences end at ``. ! ? ; 。！？；``): "A before B", "A after B", "A follows B",
  "A, followed by B", "A until B", "before/after B, A", "once A, B", "A 在 B 之前/之后",
  "A 先于/早于/晚于 B", "一旦 A，B", an arrow chain "A → B → C", and a sequence ("first", "next",
  "then", "follow", "afterward", "finally", "in order"; 首先, 随后, 然后, 接着, 最后, 此后, 依次):
  the clauses of a sequence are in order (and so are the stages one of them lists, "`X` and
  `Y` follow", though a translation may list them otherwise), a clause saying "first" leads,
  and a sentence that
  opens with "then" (or "afterward", 随后, 在此之后 ...) follows the mentions of the last
  sentence before it that had any;
- the items of an ordered list are a sequence.

Words that only look like order words are not: "read-before-edit", "the first call", "the
next step", "the following table", "exactly once".
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import yaml

from dsh_conformance.resources import TOOLS

from .flow_model import Code, Edge, FlowModel

Lang = Literal["en", "zh"]
STAGES_FILE = TOOLS / "data" / "prose-stages.yaml"


class LexiconError(ValueError):
    """tools/data/prose-stages.yaml does not load or names a node the flow model lacks."""


@dataclass(frozen=True)
class Claim:
    """``before`` precedes ``after`` (node ids of the flow model)."""
    before: str
    after: str

    def text(self) -> str:
        return f"{self.before} before {self.after}"


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    node: str
    text: str


@dataclass(frozen=True)
class Sentence:
    """A sentence of a paragraph (offsets into the paragraph's source) and its claims."""
    start: int
    end: int
    text: str
    mentions: tuple[Mention, ...]
    claims: frozenset[Claim]
    # The order in which one clause of a sequence lists stages ("`X` and `Y` follow"): checked
    # against the model, but a translation may list them otherwise.
    listed: frozenset[Claim] = frozenset()

    @property
    def checked(self) -> frozenset[Claim]:
        return self.claims | self.listed


_Span = TypeVar("_Span", "Mention", "Marker")


# ================================================================== the lexicon: mentions

@dataclass(frozen=True)
class Lexicon:
    """How prose names the flow model's nodes: code names and plain-text phrases."""
    names: dict[str, str]  # code name -> node id
    phrases: dict[str, list[tuple[re.Pattern[str], str]]]  # lang -> [(phrase, node id)]

    def mentions(self, source: str, masked: str, lang: Lang) -> list[Mention]:
        out: list[Mention] = []
        for m in CODE_SPAN.finditer(source):
            node = self.names.get(code_key(m.group(2)))
            if node is not None:
                out.append(Mention(m.start(), m.end(), node, m.group(0)))
        found = [Mention(m.start(), m.end(), node, m.group(0))
                 for pattern, node in self.phrases[lang] for m in pattern.finditer(masked)]
        return _without_overlaps(out + found)


def _without_overlaps(items: list[_Span]) -> list[_Span]:
    """Sorted by start; of overlapping items the earlier one (then the one listed first) stays."""
    order = sorted(range(len(items)), key=lambda i: (items[i].start, i))
    out: list[_Span] = []
    for i in order:
        if not out or items[i].start >= out[-1].end:
            out.append(items[i])
    return out


def code_key(span: str) -> str:
    """A code span as a name: ``finalizeContent(exec, result)`` is ``finalizeContent``."""
    span = span.strip()
    return re.sub(r"\(.*\)$", "", span) if re.fullmatch(r"[\w.$]+\(.*\)", span) else span


def label_names(model: FlowModel) -> dict[str, str]:
    """Each code name of a node's label, by node; a line listing more than two names is a
    group of names (the tool-owned events), not the node's name; a name two nodes share
    names neither."""
    seen: dict[str, set[str]] = {}
    for node in model.nodes:
        for line in node.label:
            codes = [s.code for s in line if isinstance(s, Code)]
            if len(codes) > 2:
                continue
            for code in codes:
                seen.setdefault(code, set()).add(node.id)
    return {name: next(iter(ids)) for name, ids in seen.items() if len(ids) == 1}


def load_lexicon(model: FlowModel, path: Path = STAGES_FILE) -> Lexicon:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise LexiconError(f"{path}: cannot read: {e}") from None
    if not isinstance(data, dict):
        raise LexiconError(f"{path}: expected a mapping of node ids")
    known = {n.id for n in model.nodes}
    names = label_names(model)
    phrases: dict[str, list[tuple[re.Pattern[str], str]]] = {"en": [], "zh": []}
    for node, entry in data.items():
        if node not in known:
            raise LexiconError(f"{path}: {node!r} is not a node of the flow model {model.page}.flow.yaml")
        if not isinstance(entry, dict) or set(entry) - {"names", "en", "zh"}:
            raise LexiconError(f"{path}: {node}: expected `names`, `en` and `zh` lists only")
        for name in entry.get("names", []):
            names[str(name)] = node
        for lang in ("en", "zh"):
            for phrase in entry.get(lang, []):
                try:
                    bounded = rf"(?<![\w-]){phrase}(?![\w-])" if lang == "en" else phrase
                    phrases[lang].append((re.compile(bounded, re.IGNORECASE), node))
                except re.error as e:
                    raise LexiconError(f"{path}: {node}: {lang} phrase {phrase!r}: {e}") from None
    return Lexicon(names, phrases)


# ================================================================== masking the source

CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
LINK_TARGET = re.compile(r"\]\([^)]*\)")
ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf)\.", re.IGNORECASE)
HIDDEN = "\x00"


def mask(source: str) -> str:
    """The source with code spans, link targets, HTML tags and abbreviations' dots hidden
    (same length, so offsets agree): what order words and phrases are looked for in."""
    out = source
    for pattern in (CODE_SPAN, LINK_TARGET, re.compile(r"<[^>\n]+>")):
        out = pattern.sub(lambda m: HIDDEN * len(m.group(0)), out)
    return ABBREVIATION.sub(lambda m: m.group(0).replace(".", HIDDEN), out)


SENTENCE_END = {"en": re.compile(r"[.!?;](?=\s|$)|[。！？；]"), "zh": re.compile(r"[.!?;](?=\s|$)|[。！？；]")}
CLAUSE_END = re.compile(r"[,，;；:：]")


def spans(masked: str, ends: re.Pattern[str], start: int, stop: int) -> list[tuple[int, int]]:
    """``masked[start:stop]`` cut after each match of ``ends`` outside parentheses; blank
    pieces dropped."""
    cuts = re.compile(rf"(?P<open>[(（])|(?P<close>[)）])|(?:{ends.pattern})")
    out, at, depth = [], start, 0
    for m in cuts.finditer(masked, start, stop):
        if m.group("open"):
            depth += 1
        elif m.group("close"):
            depth -= depth > 0
        elif depth == 0:
            out.append((at, m.end()))
            at = m.end()
    out.append((at, stop))
    return [(x, y) for x, y in out if x < y and masked[x:y].strip(" \t\n" + HIDDEN)]


# ================================================================== order words

MarkerKind = Literal["precedes", "succeeds", "zh-before", "zh-after", "once", "first", "then", "order", "follow",
                     "followed"]


@dataclass(frozen=True)
class Marker:
    start: int
    end: int
    kind: MarkerKind


_W = r"(?<![\w-])"
_E = r"(?![\w-])"
_LEAD = r"[\s\x00]*(?:(?:and|but|only|even|just) )?"  # before a clause's first word (matched at its start)
EN_MARKERS: list[tuple[re.Pattern[str], MarkerKind]] = [
    (re.compile(_W + r"(?P<w>after (?:that|this|them|these|those|it|which))" + _E, re.I), "then"),
    (re.compile(_W + r"(?P<w>before|prior to|precedes?|ahead of|until)" + _E, re.I), "precedes"),
    (re.compile(_W + r"(?P<w>after)" + _E, re.I), "succeeds"),
    (re.compile(_W + r"(?P<w>follows?)" + _E, re.I), "follow"),
    (re.compile(_W + r"(?P<w>followed by)" + _E, re.I), "followed"),
    (re.compile(_LEAD + r"(?P<w>once)" + _E, re.I), "once"),
    (re.compile(_W + r"(?P<w>first)(?=\s*(?:[,;.:)]|$))", re.I), "first"),
    (re.compile(_LEAD + r"(?P<w>first)" + _E, re.I), "first"),
    (re.compile(_W + r"(?P<w>then|afterwards?|subsequently|finally)" + _E, re.I), "then"),
    (re.compile(_W + r"(?P<w>next)(?=\s*(?:[,;.:)]|$))", re.I), "then"),
    (re.compile(_LEAD + r"(?P<w>next)(?=\s*,)", re.I), "then"),
    (re.compile(_W + r"(?P<w>in (?:that )?order|in turn|in sequence)" + _E, re.I), "order"),
]
ZH_MARKERS: list[tuple[re.Pattern[str], MarkerKind]] = [
    (re.compile(r"(?P<w>先于|早于|直到)"), "precedes"),
    (re.compile(r"(?P<w>晚于|后于)"), "succeeds"),
    (re.compile(r"(?P<w>在此之后|此后)"), "then"),
    (re.compile(r"(?P<w>之前|以前)"), "zh-before"),
    (re.compile(r"(?P<w>之后|以后)"), "zh-after"),
    (re.compile(r"(?P<w>一旦)"), "once"),
    (re.compile(r"(?P<w>首先|最先)"), "first"),
    (re.compile(r"(?P<w>随后|然后|接着|紧接着|其后|最后)"), "then"),
    (re.compile(r"(?P<w>依次|按顺序)"), "order"),
]
ARROW = re.compile(r"→|->|⇒")
NEGATION = re.compile(_W + r"(?:not|never|cannot|no longer|neither|nor)" + _E + r"|n't\b|不会|不在|并不|从不|从未|不是|没有|未在|绝不"
                      r"|不得|不能|无法", re.I)
INITIAL = re.compile(_LEAD, re.I)


class _MarkerIndex:
    """The order words of a paragraph: those that may stand anywhere found in one scan, those
    that open a clause (``_LEAD``) tried at each clause's start."""

    def __init__(self, masked: str, lang: Lang) -> None:
        self.masked = masked
        table = EN_MARKERS if lang == "en" else ZH_MARKERS
        self.leading = [(p, k) for p, k in table if p.pattern.startswith(_LEAD)]
        self.order = {id(p): i for i, (p, _) in enumerate(table)}
        found = [(m.start("w"), self.order[id(p)], Marker(m.start("w"), m.end("w"), k))
                 for p, k in table if p.pattern and not p.pattern.startswith(_LEAD) for m in p.finditer(masked)]
        found.sort(key=lambda x: (x[0], x[1]))
        self.found = found
        self.starts = [x[0] for x in found]

    def clause(self, a: int, b: int) -> list[Marker]:
        inside = self.found[bisect_left(self.starts, a):bisect_left(self.starts, b)]
        lead = [(m.start("w"), self.order[id(p)], Marker(m.start("w"), m.end("w"), k))
                for p, k in self.leading if (m := p.match(self.masked, a, b)) is not None]
        ranked = sorted(inside + lead, key=lambda x: (x[0], x[1]))
        return _without_overlaps([x[2] for x in ranked if x[2].end <= b])


# ================================================================== claims of a sentence

@dataclass(eq=False)
class _Clause:
    start: int
    end: int
    mentions: list[Mention]
    markers: list[Marker]

    def __post_init__(self) -> None:
        self.starts = [m.start for m in self.mentions]

    def between(self, lo: int, hi: int) -> list[str]:
        return [m.node for m in _within(self.mentions, lo, hi, self.starts) if m.end <= hi]


def _pairs(xs: list[str], ys: list[str]) -> set[Claim]:
    return {Claim(x, y) for x in set(xs) for y in set(ys) if x != y}


def _within(items: list[Mention], lo: int, hi: int, starts: list[int] | None = None) -> list[Mention]:
    """The mentions (sorted by start) that start in ``[lo, hi)``; ``starts`` are their
    starts, when the caller keeps them."""
    starts = starts if starts is not None else [m.start for m in items]
    return items[bisect_left(starts, lo):bisect_left(starts, hi)]


RELATIVE = re.compile(_LEAD + r"(?:which|that|who|and these|and they)" + _E, re.I)


def _clause_claims(masked: str, c: _Clause, following: list[str], preceding: list[str]) -> tuple[set[Claim], bool]:
    """Claims inside a clause (and into the clauses around it, for "before B, A" and "A,
    which runs before B"), and whether the clause is part of a sequence."""
    claims: set[Claim] = set()
    in_sequence = False
    bounds = [c.start] + [m.start for m in c.markers] + [c.end]
    relative = preceding[-1:] if RELATIVE.match(masked, c.start, c.end) else []
    for i, mk in enumerate(c.markers):
        left = c.between(bounds[i], mk.start) or (relative if i == 0 else [])
        right = c.between(mk.end, bounds[i + 2])
        initial = bool(INITIAL.fullmatch(masked, c.start, mk.start))
        if NEGATION.search(masked, bounds[i], mk.start):
            continue  # "never runs before B" says no order
        if mk.kind in ("precedes", "succeeds"):
            if initial and right and following:  # "before B, A" / "after B, A"
                a, b = (following, right) if mk.kind == "precedes" else (right, following)
                claims |= _pairs(a, b)
            elif left and right:
                claims |= _pairs(left, right) if mk.kind == "precedes" else _pairs(right, left)
        elif mk.kind == "follow":
            if left and right:  # "A follows B"
                claims |= _pairs(right, left)
            else:  # "... and B follow"
                in_sequence = True
        elif mk.kind == "followed":
            if left and right:  # "A followed by B"
                claims |= _pairs(left, right)
            else:  # "A, followed by B"
                in_sequence = True
        elif mk.kind in ("zh-before", "zh-after"):
            before_marker = c.between(c.start, mk.start)
            if not before_marker:
                in_sequence |= mk.kind == "zh-after"  # "之后，B": then
                continue
            obj = before_marker[-1:]
            # "在 B 之前，A …": the subject is the next clause only when the clause ends at the
            # marker; "在 B 之前立即物化…" has its own verb, and a later clause is not its subject.
            rest = masked[mk.end:c.end].strip(" \t\n，,；;：:。" + HIDDEN)
            subject = before_marker[:-1] or right or (following if not rest else [])
            claims |= _pairs(subject, obj) if mk.kind == "zh-before" else _pairs(obj, subject)
        elif mk.kind == "once":
            if right and following:
                claims |= _pairs(right, following)
        else:
            in_sequence = True
    return claims, in_sequence


def _arrow_claims(masked: str, sentence: tuple[int, int], mentions: list[Mention]) -> set[Claim]:
    """``A → B → C``: each arrow joins the last mention before it and the mentions up to the
    next arrow (the first one only, after the last arrow)."""
    a, b = sentence
    arrows = [m.start() + a for m in ARROW.finditer(masked[a:b])]
    if not arrows:
        return set()
    cuts = [a] + arrows + [b]
    starts = [m.start for m in mentions]
    groups = [[m.node for m in _within(mentions, cuts[i], cuts[i + 1], starts)] for i in range(len(cuts) - 1)]
    groups[0], groups[-1] = groups[0][-1:], groups[-1][:1]
    return _sequence([g for g in groups if g])


def _sequence(groups: list[list[str]]) -> set[Claim]:
    """Each group's nodes after every node of the groups before it."""
    claims: set[Claim] = set()
    seen: set[str] = set()
    for g in groups:
        claims |= _pairs(sorted(seen), g)
        seen |= set(g)
    return claims


def sentence_claims(source: str, lexicon: Lexicon, lang: Lang) -> list[Sentence]:
    """The sentences of a paragraph's inline source and the claims each makes."""
    masked = mask(source)
    mentions = lexicon.mentions(source, masked, lang)
    starts = [m.start for m in mentions]
    markers = _MarkerIndex(masked, lang)
    out: list[Sentence] = []
    previous: list[str] = []  # the mentions of the last sentence that had any
    for s_start, s_end in spans(masked, SENTENCE_END[lang], 0, len(masked)):
        in_sentence = _within(mentions, s_start, s_end, starts)
        sentence_starts = [m.start for m in in_sentence]
        clauses = []
        for c_start, c_end in spans(masked, CLAUSE_END, s_start, s_end):
            clauses.append(_Clause(c_start, c_end, _within(in_sentence, c_start, c_end, sentence_starts),
                                   markers.clause(c_start, c_end)))
        claims: set[Claim] = _arrow_claims(masked, (s_start, s_end), in_sentence)
        listed: set[Claim] = set()
        sequence: list[tuple[bool, _Clause]] = []
        following: list[list[str]] = []  # per clause: the mentions of the next clause that has any
        nxt: list[str] = []
        for c in reversed(clauses):
            following.append(nxt)
            nxt = [m.node for m in c.mentions] or nxt
        following.reverse()
        preceding: list[str] = []  # the mentions of the last clause that had any
        plain: list[_Clause] = []  # clauses whose order words make no claim inside them
        for i, c in enumerate(clauses):
            inner, in_seq = _clause_claims(masked, c, following[i], preceding)
            preceding = [m.node for m in c.mentions] or preceding
            claims |= inner
            sequence.append((in_seq, c))
            if not inner:
                plain.append(c)
        if any(flag for flag, _ in sequence):
            groups = [c for _, c in sequence if c.mentions]
            # In a sequence, "`tools/execute` and `tools/post-execute` follow" lists them in order.
            for c in plain:
                listed |= _sequence([[m.node] for m in c.mentions])
            leads = [c for c in groups if any(m.kind == "first" for m in c.markers)]
            ordered = leads + [c for c in groups if not any(m.kind == "first" for m in c.markers)]
            claims |= _sequence([[m.node for m in c.mentions] for c in ordered])
            # A sentence that opens with "then" follows the last sentence that had mentions.
            opening = groups[0] if groups else None
            if opening is not None and previous and not any(m.kind == "first" for m in opening.markers) and any(
                    m.kind in ("then", "follow", "zh-after") for m in clauses[0].markers):
                claims |= _pairs(previous, [m.node for m in opening.mentions])
        if in_sentence:
            previous = [m.node for m in in_sentence]
        out.append(Sentence(s_start, s_end, source[s_start:s_end].strip(), tuple(in_sentence), frozenset(claims),
                            frozenset(listed - claims)))
    return out


def list_claims(items: list[str], lexicon: Lexicon, lang: Lang) -> tuple[set[Claim], list[Mention]]:
    """An ordered list's items are a sequence: the first mention of each item, in order."""
    firsts: list[Mention] = []
    for source in items:
        found = lexicon.mentions(source, mask(source), lang)
        if found:
            firsts.append(found[0])
    claims = {Claim(x.node, y.node) for i, x in enumerate(firsts) for y in firsts[i + 1:] if x.node != y.node}
    return claims, firsts


def closure(claims: set[Claim] | frozenset[Claim]) -> frozenset[Claim]:
    """Everything the claims imply together (so "A, then B, then C" equals "A before B, B
    before C" and "A before C")."""
    after: dict[str, set[str]] = {}
    for c in claims:
        after.setdefault(c.before, set()).add(c.after)
    out: set[Claim] = set()
    for start in after:
        seen: set[str] = set()
        todo = list(after[start])
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += after.get(n, ())
        out |= {Claim(start, n) for n in seen if n != start}
    return frozenset(out)


# ================================================================== the flow model's order

class OrderGraph:
    """The flow model's graph, drawn and extension edges alike: a claim "A before B" holds
    when B is reachable from A."""

    def __init__(self, model: FlowModel) -> None:
        self.model = model
        self.out: dict[str, list[Edge]] = {}
        for e in model.edges:
            self.out.setdefault(e.source, []).append(e)

    def path(self, a: str, b: str) -> list[Edge] | None:
        """The shortest path from ``a`` to ``b`` on the page's drawn edges, else through the
        model's extension edges too (breadth first, edges in the model's order)."""
        return self._path(a, b, drawn_only=True) or self._path(a, b, drawn_only=False)

    def _path(self, a: str, b: str, drawn_only: bool) -> list[Edge] | None:
        back: dict[str, Edge | None] = {a: None}
        todo = deque([a])
        while todo:
            n = todo.popleft()
            for e in self.out.get(n, []):
                if e.target in back or (drawn_only and not e.drawn):
                    continue
                back[e.target] = e
                if e.target == b:
                    edges = []
                    at = b
                    while back[at] is not None:
                        edge = back[at]
                        edges.append(edge)
                        at = edge.source  # type: ignore[union-attr]
                    return list(reversed(edges))  # type: ignore[arg-type]
                todo.append(e.target)
        return None

    def holds(self, claim: Claim) -> bool:
        return self.path(claim.before, claim.after) is not None

    def why_not(self, claim: Claim) -> str:
        """What in the model contradicts a claim that does not hold: the path the other way,
        or, when there is none, that the two are on separate branches."""
        back = self.path(claim.after, claim.before)
        if back is not None:
            return "the flow model runs them the other way: " + ", ".join(edge_text(e) for e in back)
        return f"the flow model has no path between {claim.before} and {claim.after}: they are on separate branches"


def edge_text(e: Edge) -> str:
    arrow = "-.->" if e.style == "dotted" else "-->"
    label = f"|{e.label}|" if e.label else ""
    return f"{e.id} `{e.source} {arrow}{label} {e.target}`"
