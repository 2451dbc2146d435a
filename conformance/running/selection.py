"""Choosing what a run runs: ``run -k EXPR``, ``--case ID|FILE``, ``--rule P11``, and
``--cases`` naming a directory or one case file.

- ``--cases PATH``: the corpus directory, or a single case file;
- ``--case ID`` (repeatable): a case of that corpus by id, or a case file anywhere (added to
  the run); only the named cases run;
- ``--rule P11`` (repeatable): only cases that cite one of these rules;
- ``-k EXPR``: pytest's keyword expression over each case: words joined by ``and``, ``or``,
  ``not`` and parentheses; a word matches a case when it is part of the case's id or is one
  of the rule ids it cites (case-insensitive; ``P1`` means rule P1, not P11).

Kinds of selection combine with *and*, repeated options of one kind with *or*. A selection
that matches no case, an unknown rule id, a case id the corpus lacks (with the nearest ids
suggested) or a bad ``-k`` expression is a usage error, found before any work.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_conformance.running.references import corpus_items
from dsh_conformance.spec.corpus import load_case
from dsh_conformance.spec.rules import rules

Item = tuple[str, dict[str, Any], str]  # (case id, document, file name within its directory)


class SelectionError(ValueError):
    """A selection that cannot be honoured (exit 2)."""


@dataclass
class Group:
    """Cases read from one directory (error messages and the report name files within it).
    ``named``: a case file given by ``--case FILE``, selected by being named."""

    directory: Path
    items: list[Item]
    named: bool = False


def gather(cases: Path, case_args: list[str]) -> tuple[list[Group], list[str], list[str]]:
    """The cases a run may choose from: the corpus of ``--cases`` (a directory, or one case
    file), then each case file named by ``--case``; with the ``--case`` values that are ids
    and those that are files."""

    if cases.is_dir():
        groups = [Group(cases, corpus_items(cases))]
    elif cases.is_file():
        groups = [Group(cases.parent, _one(cases))]
    else:
        raise SelectionError(f"--cases {cases}: no such directory or case file")
    ids, files = [], []
    for value in case_args:
        path = Path(value)
        if path.is_file() and cases.is_dir() and path.resolve().parent == cases.resolve():
            ids.append(path.stem)  # a file of the corpus itself: that case, once
        elif path.is_file():
            files.append(value)
            groups.append(Group(path.parent, _one(path), named=True))
        elif value.endswith(".json") or "/" in value:
            raise SelectionError(f"--case {value}: no such case file")
        else:
            ids.append(value)
    seen: dict[str, Path] = {}
    for g in groups:
        for case_id, _, name in g.items:
            if case_id in seen and seen[case_id] != g.directory / name:
                raise SelectionError(f"two cases have the id {case_id}: {seen[case_id]} and {g.directory / name}")
            seen[case_id] = g.directory / name
    return groups, ids, files


def _one(path: Path) -> list[Item]:
    case = load_case(path)  # a bad file is a ScenarioFileError (exit 2)
    return [(case.id, case.document, path.name)]


def nearest(word: str, known: Iterable[str], n: int = 3) -> str:
    """`` (nearest: a, b)`` for a mistyped id, or nothing when none is close."""
    close = difflib.get_close_matches(word, list(known), n=n, cutoff=0.6)
    return f" (nearest: {', '.join(close)})" if close else ""


# --------------------------------------------------------------------------- -k expressions

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
Match = Callable[[str, list[str]], bool]  # (case id, rule ids) -> selected


def keyword(expr: str) -> Match:
    """The predicate of a ``-k`` expression (pytest's grammar: or, and, not, parentheses)."""
    tokens = _tokens(expr)
    if not tokens:
        raise SelectionError("-k: an empty expression")
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def disjunction() -> Match:
        left = conjunction()
        while peek() == "or":
            take()
            right = conjunction()
            left = (lambda a, b: lambda i, r: a(i, r) or b(i, r))(left, right)
        return left

    def conjunction() -> Match:
        left = negation()
        while peek() == "and":
            take()
            right = negation()
            left = (lambda a, b: lambda i, r: a(i, r) and b(i, r))(left, right)
        return left

    def negation() -> Match:
        if peek() == "not":
            take()
            inner = negation()
            return lambda i, r: not inner(i, r)
        return atom()

    def atom() -> Match:
        t = peek()
        if t is None:
            raise SelectionError(f"-k {expr!r}: the expression ends where a word was expected")
        if t in ("and", "or", ")"):
            raise SelectionError(f"-k {expr!r}: unexpected {t!r}")
        take()
        if t == "(":
            inner = disjunction()
            if peek() != ")":
                raise SelectionError(f"-k {expr!r}: a '(' is not closed")
            take()
            return inner
        return _word(t)

    found = disjunction()
    if pos != len(tokens):
        raise SelectionError(f"-k {expr!r}: unexpected {tokens[pos]!r}")
    return found


def _tokens(expr: str) -> list[str]:
    return [m.group(1) for m in _TOKEN.finditer(expr)]


def _word(word: str) -> Match:
    w = word.lower()
    return lambda case_id, rule_ids: w in case_id.lower() or any(w == r.lower() for r in rule_ids)


# --------------------------------------------------------------------------- the selection

def rule_ids(values: list[str] | None) -> set[str]:
    """``--rule`` values, checked against the spec's index."""
    known = rules()
    out = set()
    for v in values or []:
        for rid in (x.strip() for x in v.split(",")):
            match = next((k for k in known if k.lower() == rid.lower()), None)
            if match is None:
                raise SelectionError(f"--rule {rid}: no such rule in the spec (P1..P{len(known)})"
                                     + nearest(rid.upper(), known))
            out.add(match)
    return out


def _cited(doc: dict[str, Any]) -> list[str]:
    cited = doc.get("rules") if isinstance(doc, dict) else None
    return [r for r in cited if isinstance(r, str)] if isinstance(cited, list) else []


def select(groups: list[Group], case_ids: list[str], rules_: set[str], expr: str | None) -> list[Group]:
    """The groups with only the selected cases. ``case_ids``: the ``--case`` values that are
    ids (files were loaded into groups of their own, and are selected)."""
    known = {case_id for g in groups if not g.named for case_id, _, _ in g.items}
    for cid in case_ids:
        if cid not in known:
            where = groups[0].directory if groups else "-"
            raise SelectionError(f"--case {cid}: no case of that id in the corpus {where}" + nearest(cid, known))
    match = keyword(expr) if expr else None
    named = bool(case_ids) or any(g.named for g in groups)
    out = []
    for g in groups:
        kept = [item for item in g.items
                if (not named or g.named or item[0] in case_ids)
                and (not rules_ or rules_ & set(_cited(item[1])))
                and (match is None or match(item[0], _cited(item[1])))]
        if kept:
            out.append(Group(g.directory, kept, g.named))
    return out


def left_out(groups: list[Group], chosen: list[Group]) -> frozenset[str]:
    """The rules cited by a corpus case of ``groups`` that ``chosen`` left out: a run of the
    selection cannot say whether a listed failure of one is gone (its failing case may be
    among those left out)."""
    kept = {case_id for g in chosen for case_id, _, _ in g.items}
    return frozenset(r for g in groups for case_id, doc, _ in g.items if case_id not in kept for r in _cited(doc))


def describe(case_ids: list[str], files: list[str], rules_: set[str], expr: str | None) -> str:
    """The selection in words, for the error when it matches nothing."""
    parts = [f"--case {c}" for c in [*case_ids, *files]] + [f"--rule {r}" for r in sorted(rules_)]
    if expr:
        parts.append(f"-k {expr!r}")
    return " ".join(parts)


def is_selective(case_ids: list[str], files: list[str], rules_: set[str], expr: str | None) -> bool:
    return bool(case_ids or files or rules_ or expr)


__all__ = ["Group", "gather", "SelectionError", "keyword", "nearest", "rule_ids", "select", "describe", "is_selective"]
