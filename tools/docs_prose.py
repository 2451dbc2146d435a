"""The prose checks of ``docs check``: order claims against the flow model, and the two
languages of a pair held to the same claims (tools/prose_claims.py reads the claims).

- Every page of the tree (paragraphs, list items, ordered lists; not code blocks, tables or
  headings): a sentence claiming "A before B" of two flow-model nodes when B is not
  reachable from A is an error at its line, naming the sentence, the claim and the edges of
  the model that order them the other way.
- Every pair (``foo.md``/``foo.zh.md``): paragraphs are paired section by section (by
  heading), by position when both sides have as many paragraphs in the section, else the
  section as a whole. A unit where one side claims an order the other does not imply is one
  error, against the side that changed: the side the record's hashes say is out of sync,
  else the side whose claims the model contradicts, else the side git sees edited since the
  last commit, else the English source. When the
  changed side's sentence already contradicts the model, that error says the pair differs
  too, so that one edit gives one error.

Every error ends with how to fix it: the sentence, then the command that re-records the pair
(or, for our generated page, the prose source and ``docs generate``), or the flow model,
with where an installed suite keeps it.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .flow_model import FlowModel
from .md_structure import Structure, parse
from .pairing import blob_hash, pair_paths, parse_record
from .prose_claims import (ARROW, Claim, Lang, Lexicon, OrderGraph, Sentence, closure, code_key, list_claims,
                           sentence_claims)

GENERATED_MARK = "dsh-conformance docs generate"
CHAIN_FENCES = frozenset({"", "text", "txt", "plain", "plaintext"})  # code blocks whose arrow chains are prose
BARE_NAME = re.compile(r"(?<![\w`/.-])([A-Za-z][\w.-]*(?:/[\w.-]+)+|[A-Za-z][\w.]*\(\))(?=\*?(?![\w/`-]))")
RECORD_COMMAND = "dsh-conformance docs record"
INSTALLED_FLOW = 'importlib.resources.files("dsh_conformance.catalogs")'
QUOTE_MAX = 120


@dataclass(frozen=True)
class ProseError:
    file: Path
    line: int
    message: str


@dataclass
class _Unit:
    """A paragraph (or an ordered list) of a page with its sentences' claims."""
    section: int
    line: int
    sentences: list[tuple[int, Sentence]]  # (line, sentence)
    contradicted: list[int] = field(default_factory=list)  # indexes into the page's errors


@dataclass
class _Page:
    path: Path
    lang: Lang
    units: list[_Unit]
    generated: bool


def lang_of(page: Path) -> Lang:
    return "zh" if page.name.endswith(".zh.md") else "en"


def _is_switcher(source: str) -> bool:
    flat = source.replace(" ", "")
    return flat.startswith("[English](") and flat.endswith(")|中文") or flat.startswith("English|[中文](")


def read_page(path: Path, text: str, lexicon: Lexicon) -> _Page:
    lang = lang_of(path)
    s: Structure = parse(text)
    heads = [h.line for h in s.headings]
    units: list[_Unit] = []
    for para in s.paragraphs:
        if _is_switcher(para.source):
            continue
        section = sum(h < para.line for h in heads)
        sentences = [(para.line + para.source[: sen.start].count("\n"), sen)
                     for sen in sentence_claims(para.source, lexicon, lang)]
        units.append(_Unit(section, para.line, sentences))
    for ol in s.ordered_lists:
        claims, mentions = list_claims(list(ol.items), lexicon, lang)
        if claims:
            text_ = " / ".join(i.split("\n")[0] for i in ol.items)
            sentence = Sentence(0, 0, f"ordered list: {text_}", tuple(mentions), frozenset(claims))
            units.append(_Unit(sum(h < ol.line for h in heads), ol.line, [(ol.line, sentence)]))
    for fence in s.fences:
        if fence.info.split(" ")[0] not in CHAIN_FENCES:
            continue
        for i, line_text in enumerate(fence.body.split("\n")):
            if not ARROW.search(line_text):
                continue
            # A plain-text chain ("tool/call* -> tools/pre-execute -> ..."): its bare names
            # are read as code spans.
            source = BARE_NAME.sub(lambda m: f"`{m.group(1)}`" if code_key(m.group(1)) in lexicon.names
                                   else m.group(0), line_text)
            line = fence.line + 1 + i
            found = [(line, sen) for sen in sentence_claims(source, lexicon, lang) if sen.claims]
            if found:
                units.append(_Unit(sum(h < fence.line for h in heads), line, found))
    units.sort(key=lambda u: u.line)
    generated = text.startswith("<!--") and GENERATED_MARK in text.split("-->", 1)[0]
    return _Page(path, lang, units, generated)


# ================================================================== fix hints

def shown(path: Path) -> str:
    """A path as a user types it: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _flow_hint(flow: Path) -> str:
    return f"or, if the pipeline changed, the flow model {shown(flow)} (installed: {INSTALLED_FLOW})"


def _pair_hint(en: Path, generated: bool, prose_file: Path | None) -> str:
    if generated and prose_file is not None:
        return f"edit both languages in {shown(prose_file)} and run `{GENERATED_MARK}`"
    return f"then re-record the pair: `{RECORD_COMMAND} {shown(en)}`"


def _quote(text: str, focus: int = 0) -> str:
    """The sentence, or, when long, the part of it from a little before ``focus`` (where the
    claim is made)."""
    flat = " ".join(text.split())
    if len(flat) <= QUOTE_MAX:
        return f"“{flat}”"
    focus = len(" ".join(text[:focus].split()))
    start = 0 if focus + 40 <= QUOTE_MAX else max(0, min(focus - 20, len(flat) - QUOTE_MAX + 1))
    start = flat.rfind(" ", 0, start) + 1 if start else 0  # from the start of a word
    head = "…" if start else ""
    return "“" + head + flat[start: start + QUOTE_MAX - 1 - len(head)] + ("…" if start + QUOTE_MAX - 1 < len(flat) else "") + "”"


def _focus(sentence: Sentence, claims: list[Claim]) -> int:
    """Where in the sentence's text the first of ``claims`` names its first stage."""
    nodes = {n for c in claims for n in (c.before, c.after)}
    spots = [sentence.text.find(m.text) for m in sentence.mentions if m.node in nodes]
    return min((i for i in spots if i >= 0), default=0)


def _plain(text: str) -> str:
    """A name as the sentence said it, without the node id the message adds: "X (around)" is "X"."""
    return re.sub(r" \([A-Za-z]+\)", "", text)


def _claims_text(claims: list[Claim], names: dict[str, str], limit: int = 3) -> str:
    parts = [f"{names.get(c.before, c.before)} before {names.get(c.after, c.after)}" for c in claims[:limit]]
    more = f" (+{len(claims) - limit} more)" if len(claims) > limit else ""
    return ", ".join(parts) + more


def _names(sentence: Sentence) -> dict[str, str]:
    """Each node as the sentence names it: `tools/execute` (around)."""
    out: dict[str, str] = {}
    for m in sentence.mentions:
        out.setdefault(m.node, f"{m.text} ({m.node})")
    return out


# ================================================================== the checks

@dataclass
class ProseChecker:
    model: FlowModel
    lexicon: Lexicon
    flow_file: Path
    prose_file: Path | None = None  # the bilingual source of our generated page
    errors: list[ProseError] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.graph = OrderGraph(self.model)

    def check_page(self, page: _Page) -> None:
        for unit in page.units:
            for line, sentence in unit.sentences:
                # The most direct contradictions first: one edge back before a long way round.
                bad = sorted((c for c in sentence.checked if not self.graph.holds(c)),
                             key=lambda c: (len(self.graph.path(c.after, c.before) or range(99)), c.before, c.after))
                if not bad:
                    continue
                names = _names(sentence)
                said = "; ".join(f"{_claims_text([c], names)} ({self.graph.why_not(c)})" for c in bad[:3])
                more = f"; and {len(bad) - 3} more such claim(s)" if len(bad) > 3 else ""
                unit.contradicted.append(len(self.errors))
                first = bad[0]
                rules = sorted({r for e in self.graph.path(first.after, first.before) or [] for r in e.rules},
                               key=lambda r: int(r[1:]) if r[1:].isdigit() else 0)
                wording = f"{names.get(first.after, first.after)} before {names.get(first.before, first.before)}"
                self.errors.append(ProseError(page.path, line, (
                    f"{_quote(sentence.text, _focus(sentence, bad[:1]))} says {said}{more}: fix the sentence "
                    f"(suggested wording: “{_plain(wording)}”, the order of {', '.join(rules) or 'the flow model'}), "
                    f"{_flow_hint(self.flow_file)}")))

    def check_pair(self, en: _Page, zh: _Page, stale: set[Path]) -> None:
        for x, y in _paired_units(en, zh):
            if _direct(x) <= _implied(y) and _direct(y) <= _implied(x):
                continue
            contradicted = {p.path for p, units in ((en, x), (zh, y)) if any(u.contradicted for u in units)}
            edited = set() if stale or contradicted else uncommitted({en.path, zh.path})
            changed = next(iter(stale if len(stale) == 1 else contradicted if len(contradicted) == 1 else
                                edited if len(edited) == 1 else {en.path}))
            here, there = (x, y) if changed == en.path else (y, x)
            other = zh if changed == en.path else en
            # What each side says that the other does not imply.
            only_here = sorted(_direct(here) - _implied(there), key=lambda c: (c.before, c.after))
            only_there = sorted(_direct(there) - _implied(here), key=lambda c: (c.before, c.after))
            where = f"{other.path.name}:{there[0].line}" if there else other.path.name
            said_there = (f"only its pair {where} says {_claims_text(only_there, {})}" if only_there
                          else f"its pair {where} does not say it")
            says = (f"only this paragraph says {_claims_text(only_here, {})}; " if only_here else "") + said_there
            hint = _pair_hint(en.path, en.generated, self.prose_file)
            first = next((u for u in here if u.contradicted), None)
            if first is not None:
                i = first.contradicted[0]
                e = self.errors[i]
                self.errors[i] = ProseError(e.file, e.line, f"{e.message}; {said_there} ({hint} once the sentence is "
                                                            "fixed)")
                continue
            line = here[0].line if here else 1
            self.errors.append(ProseError(changed, line, (
                f"the two languages state different orders: {says}; bring them to the same order, {hint}")))


def _direct(units: list[_Unit]) -> set[Claim]:
    """What the units claim (not the order in which a clause merely lists stages)."""
    return {c for u in units for _, s in u.sentences for c in s.claims}


def _implied(units: list[_Unit]) -> frozenset[Claim]:
    """Everything the units' claims and listings imply together: the other language must
    say nothing beyond it."""
    return closure({c for u in units for _, s in u.sentences for c in s.checked})


def _paired_units(en: _Page, zh: _Page) -> list[tuple[list[_Unit], list[_Unit]]]:
    """Paragraphs paired section by section: by position when the counts agree, else the
    section as one unit."""
    sections = sorted({u.section for u in en.units} | {u.section for u in zh.units})
    out: list[tuple[list[_Unit], list[_Unit]]] = []
    for n in sections:
        xs = [u for u in en.units if u.section == n]
        ys = [u for u in zh.units if u.section == n]
        if len(xs) == len(ys):
            out += [([x], [y]) for x, y in zip(xs, ys)]
        else:
            out.append((xs, ys))
    return out


def uncommitted(paths: set[Path]) -> set[Path]:
    """Which of the files differ from their last commit, when they are in a git work tree
    (none when git or the repository is not there)."""
    folder = next(iter(paths)).parent
    try:
        done = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--no-renames", "-z", "--",
                               *(p.name for p in sorted(paths))], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return set()
    if done.returncode != 0:
        return set()
    changed = {entry[3:].decode("utf-8", "replace") for entry in done.stdout.split(b"\0") if len(entry) > 3}
    return {p for p in paths if any(name == p.name or name.endswith("/" + p.name) for name in changed)}


def stale_sides(en: Path) -> set[Path]:
    """The sides whose bytes no longer match the pair's record (none when it is unreadable)."""
    _, zh, record = pair_paths(en)
    try:
        text = record.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    hashes, _ = parse_record(text, (en.name, zh.name))
    out = set()
    for side in (en, zh):
        if side.name in hashes and side.is_file() and blob_hash(side.read_bytes()) != hashes[side.name][0]:
            out.add(side)
    return out


def check_prose(pages: list[Path], pairs: list[Path], checker: ProseChecker) -> list[ProseError]:
    """Order claims of every page, and of every pair's two sides."""
    read: dict[Path, _Page] = {}
    for path in pages:
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # reported by the pair checks
        read[path] = read_page(path, text, checker.lexicon)
        checker.check_page(read[path])
    for en in pairs:
        zh = pair_paths(en)[1]
        if en in read and zh in read:
            checker.check_pair(read[en], read[zh], stale_sides(en))
    return checker.errors

