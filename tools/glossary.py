"""The spec's terms in Chinese: where the English side of a pair uses a term of the glossary
(tools/data/glossary.yaml), the paired Chinese paragraph must render it with one of the
accepted renderings. "binding rejections" rendered 具有约束力的驳回 ("rejections with binding
force") reads as another thing: the finding names the paragraph, the term, the rendering it
found, the rule that defines the term and the accepted rendering to use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from dsh_conformance.resources import TOOLS

from .md_structure import Paragraph, Structure, parse
from .pairing import pair_paths
from .prose_claims import mask

GLOSSARY_FILE = TOOLS / "data" / "glossary.yaml"


class GlossaryError(ValueError):
    """tools/data/glossary.yaml does not load."""


@dataclass(frozen=True)
class Term:
    en: re.Pattern[str]
    accepted: tuple[re.Pattern[str], ...]
    wrong: tuple[re.Pattern[str], ...]
    rule: str
    means: str
    suggest: str


@dataclass(frozen=True)
class GlossaryFinding:
    file: Path
    line: int
    message: str


def load_glossary(path: Path = GLOSSARY_FILE) -> list[Term]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return [Term(re.compile(t["en"], re.IGNORECASE),
                     tuple(re.compile(p, re.IGNORECASE) for p in t["accepted"]),
                     tuple(re.compile(p) for p in t.get("wrong", [])),
                     str(t["rule"]), str(t["means"]), str(t["suggest"])) for t in data.get("terms", [])]
    except (OSError, yaml.YAMLError, KeyError, TypeError, re.error) as e:
        raise GlossaryError(f"{path}: cannot read the glossary: {e}") from None


def _is_switcher(p: Paragraph) -> bool:
    flat = p.source.replace(" ", "")
    return flat.startswith("[English](") or flat.startswith("English|[中文](")


def paired_paragraphs(a: Structure, b: Structure) -> list[tuple[list[Paragraph], list[Paragraph]]]:
    """Paragraphs paired section by section: by position when both sides have as many, else
    the section as a whole."""
    def sections(s: Structure) -> dict[int, list[Paragraph]]:
        heads = [h.line for h in s.headings]
        out: dict[int, list[Paragraph]] = {}
        for p in s.paragraphs:
            if not _is_switcher(p):
                out.setdefault(sum(h < p.line for h in heads), []).append(p)
        return out

    xs, ys = sections(a), sections(b)
    out: list[tuple[list[Paragraph], list[Paragraph]]] = []
    for n in sorted(set(xs) | set(ys)):
        x, y = xs.get(n, []), ys.get(n, [])
        out += [([p], [q]) for p, q in zip(x, y)] if len(x) == len(y) else [(x, y)]
    return out


def _quote(text: str, at: int = 0) -> str:
    """The paragraph, or, when long, the part of it around ``at``."""
    flat = " ".join(text.split())
    if len(flat) <= 120:
        return f"“{flat}”"
    start = max(0, min(len(" ".join(text[:at].split())) - 40, len(flat) - 119))
    return "“" + ("…" if start else "") + flat[start:start + 119] + ("…" if start + 119 < len(flat) else "") + "”"


def check_pair(en: Path, zh: Path, en_text: str, zh_text: str, terms: list[Term]) -> list[GlossaryFinding]:
    out: list[GlossaryFinding] = []
    for xs, ys in paired_paragraphs(parse(en_text), parse(zh_text)):
        if not ys:
            continue
        zh_source = "\n".join(q.source for q in ys)
        for term in terms:
            said = next(((p, m) for p in xs if (m := term.en.search(mask(p.source))) is not None), None)
            if said is None or any(r.search(zh_source) for r in term.accepted):
                continue
            p, m = said
            wrong = next((w for r in term.wrong if (w := r.search(zh_source)) is not None), None)
            q = next((q for q in ys if wrong is not None and wrong.group(0) in q.source), ys[0])
            line = q.line + q.source[: q.source.find(wrong.group(0))].count("\n") if wrong is not None else q.line
            found = (f"renders it {wrong.group(0)!r}" if wrong is not None
                     else "uses none of the glossary's renderings")
            out.append(GlossaryFinding(zh, line, (
                f"{_quote(q.source, q.source.find(wrong.group(0)) if wrong is not None else 0)}: the English ({en.name}:{p.line}) says {m.group(0)!r}, and this paragraph "
                f"{found}; in the spec ({term.rule}) it means {term.means}; suggested wording: {term.suggest} "
                f"(tools/data/glossary.yaml)")))
    return out


def check_glossary(pairs: list[Path], terms: list[Term]) -> list[GlossaryFinding]:
    out: list[GlossaryFinding] = []
    for en in pairs:
        zh = pair_paths(en)[1]
        try:
            en_text, zh_text = en.read_bytes().decode("utf-8"), zh.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # reported by the pair checks
        out += check_pair(en, zh, en_text, zh_text, terms)
    return out
