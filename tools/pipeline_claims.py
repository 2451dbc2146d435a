"""Claims about the pipeline other than stage order, read from every page of a docs tree in
both languages and checked against the catalogs and the spec's rules.

The claims are data (tools/data/pipeline-claims.yaml): what a sentence must contain for a
claim to be made (a subject, an object, the claim's words), the rule it is held to and a
wording to suggest. Four kinds:

- *statements* about a subject: a count that must equal a fact computed from the flow model
  and the catalog index ("sub-calls go through both waterfalls": P120 makes it three), or a
  claim a rule contradicts ("sub-call contexts are dropped": P126);
- *roles*: a clause that names exactly one stage and then a role another stage has
  ("`tools/result` to replace the content": P99);
- *ownership*: a sentence calling events tool-owned names only session events a tool body
  writes (P71);
- *kinds*: the word beside a name ("`X` waterfall", "`X` session event") agrees with the
  catalog index.

A negation before the claim in its clause ("are never dropped") makes no claim. Each
finding carries the page, the line, the sentence, the rule or catalog entry and a suggested
wording (:class:`ClaimFinding`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dsh_conformance.resources import TOOLS

from .catalog_index import INDEX_FILE, CatalogIndex
from .flow_model import Code, FlowModel
from .md_structure import parse
from .name_table import name_table
from .prose_claims import CLAUSE_END, CODE_SPAN, HIDDEN, NEGATION, Lang, Lexicon, code_key, mask, sentence_claims, spans

CLAIMS_FILE = TOOLS / "data" / "pipeline-claims.yaml"
EVENT_SHAPE = re.compile(r"[a-z]+/(?:[a-z][a-z0-9-]*(?:/[a-z][a-z0-9-]*)?|\*)")
EVENT_BEFORE = re.compile(r"(?:\bctx\.(?:on|emit|waterfall|serial)\(['\"]?|\b(?:on|emits?|emitted|dispatch(?:es|ed)?|appends?|"
                          r"appended|listens? (?:to|on)|listeners? (?:of|on)|the event|session event|waterfall)\s+|"
                          r"(?:监听|派发|发出|追加)\s*)$", re.I)
EVENT_AFTER = re.compile(r"\s*(?:\(|（)?(?:(?:events?|waterfalls?|listeners?|notifications?|session(?:-log)? events?|emits?|"
                         r"fires|is (?:emitted|dispatched|appended))\b|事件|监听|瀑布)", re.I)
ORDER_WORD = re.compile(r"\b(?:after|before|once|following|until|prior to)\b|之后|之前|以后|以前|经过", re.I)
NUMBERS = {"both": 2, "two": 2, "three": 3, "four": 4, "five": 5, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5}


class ClaimsError(ValueError):
    """tools/data/pipeline-claims.yaml does not load or names what the flow model lacks."""


@dataclass(frozen=True)
class ClaimFinding:
    file: Path
    line: int
    message: str


def load_claims(model: FlowModel, path: Path = CLAIMS_FILE) -> dict[str, Any]:
    """The claims file, its patterns compiled in place (``{lang: pattern}`` dicts)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ClaimsError(f"{path}: cannot read: {e}") from None
    nodes = {n.id for n in model.nodes}

    def compile_(entry: Any, where: str) -> dict[str, re.Pattern[str]]:
        if not isinstance(entry, dict) or not set(entry) <= {"en", "zh"}:
            raise ClaimsError(f"{path}: {where}: expected `en` and `zh` patterns")
        try:
            return {lang: re.compile(str(p), re.IGNORECASE) for lang, p in entry.items()}
        except re.error as e:
            raise ClaimsError(f"{path}: {where}: {e}") from None

    for s in data.get("statements", []):
        for key in ("subject", "object", "claim"):
            if key in s:
                s[key] = compile_(s[key], f"{s.get('id')}.{key}")
    for r in data.get("roles", []):
        if r.get("node") not in nodes:
            raise ClaimsError(f"{path}: role of {r.get('node')!r}: not a node of the flow model")
        r["not"] = compile_(r["not"], f"roles.{r['node']}.not")
    if "ownership" in data:
        data["ownership"]["claim"] = compile_(data["ownership"]["claim"], "ownership.claim")
    for k in data.get("kinds", []):
        k["said"] = compile_(k["said"], f"kinds.{k.get('must')}.said")
    return data


# ================================================================== facts from the catalogs

def pipeline_waterfalls(model: FlowModel, index: CatalogIndex) -> list[str]:
    """The waterfalls every call passes: the flow model's stages whose label names a live
    event the catalog index gives mode waterfall and has the registry dispatch (a body's
    `fs/*` intents are the body's own, P71)."""
    out = []
    for node in model.drawn_nodes:
        for line in node.label:
            for seg in line:
                live = index.live_event(seg.code) if isinstance(seg, Code) else None
                if live is not None and live.mode == "waterfall" and live.dispatchedBy == "registry" \
                        and seg.code not in out:  # type: ignore[union-attr]
                    out.append(seg.code)  # type: ignore[union-attr]
    return out


# ================================================================== reading a page

@dataclass(frozen=True)
class _Sentence:
    line: int
    source: str  # the paragraph's source
    masked: str
    start: int
    end: int
    mentions: tuple  # prose_claims.Mention
    cell: bool = False  # a table cell: roles only

    def visible(self, at: int) -> bool:
        """Whether offset ``at`` is prose (not inside a code span, link target or tag), or
        opens a code span the pattern names on purpose (`` `tool/result` ``)."""
        return self.masked[at] != HIDDEN or self.source[at] == "`"

    @property
    def text(self) -> str:
        return self.source[self.start:self.end]

    def quote(self) -> str:
        flat = " ".join(self.text.split())
        return f"“{flat if len(flat) <= 160 else flat[:159] + '…'}”"

    def negated(self, at: int) -> bool:
        """A negation before ``at`` (an offset in the paragraph) in its clause."""
        for a, b in spans(self.masked, CLAUSE_END, self.start, self.end):
            if a <= at < b:
                return _negation(self.masked, a, at)
        return False


WITHOUT = re.compile(r"\bwithout\b|而不|无需|不必|不会", re.I)


def _negation(masked: str, start: int, at: int) -> bool:
    """A negation in ``masked[start:at]``: the order check's words, and "without"."""
    return NEGATION.search(masked, start, at) is not None or WITHOUT.search(masked, start, at) is not None


def _sentences(text: str, lexicon: Lexicon, lang: Lang) -> list[_Sentence]:
    out = []
    structure = parse(text)
    # A table's cells are read for stage roles only: a table may list faults or cases by what
    # they break ("A sub-call's contexts are dropped"), a use-case table states roles.
    for paras, cell in ((structure.paragraphs, False), (structure.cells, True)):
        for para in paras:
            masked = mask(para.source)
            for s in sentence_claims(para.source, lexicon, lang):
                line = para.line + para.source[: s.start].count("\n")
                out.append(_Sentence(line, para.source, masked, s.start, s.end, s.mentions, cell))
    return out


# ================================================================== the checks

@dataclass
class ClaimChecker:
    model: FlowModel
    index: CatalogIndex
    lexicon: Lexicon
    claims: dict[str, Any]

    def __post_init__(self) -> None:
        self.facts = {"pipeline-waterfalls": pipeline_waterfalls(self.model, self.index)}

    def check_page(self, path: Path, text: str) -> list[ClaimFinding]:
        lang: Lang = "zh" if path.name.endswith(".zh.md") else "en"
        out: list[ClaimFinding] = []
        for s in _sentences(text, self.lexicon, lang):
            out += [ClaimFinding(path, s.line, m) for m in self._sentence(s, lang)]
        structure = parse(text)
        for para in [*structure.paragraphs, *structure.cells]:  # names: the whole paragraph or cell
            whole = _Sentence(para.line, para.source, mask(para.source), 0, len(para.source), ())
            out += [ClaimFinding(path, para.line + para.source[:at].count("\n"), m) for at, m in self._names(whole)]
        return out

    def _sentence(self, s: _Sentence, lang: Lang) -> list[str]:
        if s.cell:
            return self._roles(s, lang)
        found: list[str] = []
        said: set[tuple[int, int]] = set()  # one finding per stretch of text: the first statement's
        for st in self.claims.get("statements", []):
            found += self._statement(s, st, lang, said)
        found += self._roles(s, lang)
        found += self._ownership(s, lang)
        found += self._kinds(s, lang)
        return found

    def _names(self, s: _Sentence) -> list[tuple[int, str]]:
        spec = self.claims.get("names")
        if not spec:
            return []
        table = name_table(self.index)
        out = []
        for code in CODE_SPAN.finditer(s.source, s.start, s.end):
            name = code.group(2).strip()
            # Event-shaped only: `scope/name`, `scope/name/part` or `scope/*` (not a path such as
            # `tools/data/x.yaml`, nor a glob such as `fs/*-intent`).
            if not any(name.startswith(p) for p in spec["scopes"]) or not EVENT_SHAPE.fullmatch(name):
                continue
            if table.entries_of(name):
                continue
            # Said as an event ("`X` listeners", "on `X`", "`X` 事件"): a wire method or a
            # proposal's name in passing (`tools/call` of MCP) is not judged.
            before, after = s.source[max(0, code.start() - 40):code.start()], s.source[code.end():code.end() + 30]
            if not (EVENT_BEFORE.search(before) or EVENT_AFTER.match(after)):
                continue
            known = sorted({e.name for e in table.entries if "/" in e.name})
            near = difflib.get_close_matches(name, known, n=1)
            out.append((code.start(), f"{s.quote()} names `{name}`, which is not in the name table (generated from {INDEX_FILE}, "
                       f"which holds every rc.8 event of the scopes {', '.join(spec['scopes'])})"
                       + (f"; suggested wording: “`{near[0]}`”" if near else "")))
        return out

    def _search(self, s: _Sentence, entry: dict[str, re.Pattern[str]] | None, lang: Lang) -> bool:
        pattern = entry.get(lang) if entry else None
        return pattern is not None and pattern.search(s.source, s.start, s.end) is not None

    def _statement(self, s: _Sentence, st: dict[str, Any], lang: Lang, said: set[tuple[int, int]]) -> list[str]:
        claim = st["claim"].get(lang)
        if claim is None or not self._search(s, st["subject"], lang):
            return []
        if "object" in st and not self._search(s, st["object"], lang):
            return []
        out = []
        for m in claim.finditer(s.source, s.start, s.end):
            if s.negated(m.start()) or m.span() in said or not s.visible(m.start()):
                continue
            said.add(m.span())
            suggest = st["suggest"][lang]
            if st["kind"] == "count":
                names = self.facts[st["expect"]]
                word = m.group("n").lower()
                n = NUMBERS.get(word, int(word) if word.isdigit() else -1)
                if n == len(names):
                    continue
                fact = st["fact"].format(expect=len(names), names=", ".join(f"`{x}`" for x in names))
                out.append(f"{s.quote()} says {m.group(0)!r}, but {fact} ({st['rule']}; the waterfalls are the flow "
                           f"model's stages whose events {INDEX_FILE} gives mode waterfall); suggested wording: "
                           f"“{suggest.format(expect=len(names))}”")
            else:
                out.append(f"{s.quote()} says {m.group(0)!r}, but {st['fact']} ({st['rule']}); suggested wording: "
                           f"“{suggest}”")
        return out

    def _roles(self, s: _Sentence, lang: Lang) -> list[str]:
        out = []
        roles = {r["node"]: r for r in self.claims.get("roles", [])}
        for a, b in spans(s.masked, CLAUSE_END, s.start, s.end):
            inside = [m for m in s.mentions if a <= m.start < b]
            if len({m.node for m in inside}) != 1 or inside[0].node not in roles:
                continue
            role = roles[inside[0].node]
            if "mention" in role and not re.search(role["mention"], inside[0].text, re.I):
                continue
            pattern = role["not"].get(lang)
            m = pattern.search(s.masked, inside[-1].end, b) if pattern is not None else None
            if m is None or _negation(s.masked, a, m.start()):
                continue
            if ORDER_WORD.search(s.masked, inside[-1].end, m.start()):
                continue  # "`tools/result` observes the outcome after transforms": an order, not a role
            out.append(f"{s.quote()} gives {inside[0].text} the role {m.group(0)!r}, but {role['does']} "
                       f"({role['rule']}); suggested wording: “{role['suggest'][lang]}”")
        return out

    def _ownership(self, s: _Sentence, lang: Lang) -> list[str]:
        own = self.claims.get("ownership")
        pattern = own["claim"].get(lang) if own else None
        m = pattern.search(s.source, s.start, s.end) if pattern is not None else None
        if m is None or s.negated(m.start()) or not s.visible(m.start()):
            return []
        out = []
        for code in CODE_SPAN.finditer(s.source, s.start, s.end):
            name = code_key(code.group(2))
            ev, live = self.index.session_event(name), self.index.live_event(name)
            if live is not None:
                out.append(f"{s.quote()} calls `{name}` tool-owned with session events, but {INDEX_FILE} has it as "
                           f"a live {live.mode} event dispatched by {live.dispatchedBy}, not a session event "
                           f"({own['rule']}); suggested wording: list it apart, as a live event")
            elif ev is not None and ev.writtenBy not in own["writers"]:
                out.append(f"{s.quote()} calls `{name}` tool-owned, but {INDEX_FILE} says {ev.writtenBy} writes it "
                           f"({', '.join(ev.rules) or own['rule']}); suggested wording: name its writer, "
                           f"“`{name}` (appended by {ev.writtenBy})”")
        return out

    def _kinds(self, s: _Sentence, lang: Lang) -> list[str]:
        out: list[str] = []
        seen: set[tuple[str, str]] = set()
        for k in self.claims.get("kinds", []):
            pattern = k["said"].get(lang)
            for m in pattern.finditer(s.source, s.start, s.end) if pattern is not None else []:
                groups = m.groupdict()
                names = ([c.group(2) for c in CODE_SPAN.finditer(groups["names"])] if groups.get("names")
                         else [groups.get("name") or groups.get("name2") or ""])
                fresh = [n for n in map(code_key, names) if (n, k["must"]) not in seen]
                seen |= {(n, k["must"]) for n in fresh}  # a name two patterns read is one finding
                out += self._kind(s, k, fresh)
        return out

    def _kind(self, s: _Sentence, k: dict[str, Any], names: list[str]) -> list[str]:
        out = []
        for name in names:
            if name.endswith("/*") or not self.index.kinds_of(name):
                continue  # a scope, or a name the catalogs do not hold: not judged here
            live, ev = self.index.live_event(name), self.index.session_event(name)
            must = k["must"]
            ok = (live is not None and live.mode == must) if must in ("waterfall", "emit") else ev is not None
            if ok:
                continue
            is_ = (f"a live {live.mode} event" if live is not None else "a session-log event" if ev is not None
                   else f"a {', '.join(self.index.kinds_of(name))}")
            rules = (live.rules if live is not None else ev.rules if ev is not None else []) or [k["rule"]]
            word = {"waterfall": "waterfall", "emit": "notification (emit)", "session-event": "session event"}[must]
            fix = (f"`{name}` {live.mode if live.mode == 'waterfall' else 'synchronous notification'}"
                   if live is not None else f"`{name}` session event" if ev is not None else f"`{name}`")
            out.append(f"{s.quote()} calls `{name}` a {word}, but {INDEX_FILE} has it as {is_} "
                       f"({', '.join(rules)}); suggested wording: “{fix}”")
        return out


def check_claims(pages: list[Path], checker: ClaimChecker) -> list[ClaimFinding]:
    out: list[ClaimFinding] = []
    for path in pages:
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # reported by the pair checks
        out += checker.check_page(path, text)
    return out
