"""Mutants of the oracle: one plausible fault each, as a changed copy of one module.

Two kinds, both a module's source text with one change:

- **operator mutants**, the classic mutation operators over every module of
  ``oracle/``. mutmut's operators (``mutmut.mutation.mutators``: comparisons and
  arithmetic swapped, ``is``/``in`` flipped, ``and``/``or``, ``True``/``False``, numbers
  plus one, strings changed, assignments to ``None``, arguments dropped, ``match`` cases
  dropped, ternaries forced) work on libcst nodes; this module walks the oracle with
  libcst and adds what mutmut does not have: conditions negated, statements deleted,
  neighbouring statements swapped, integers minus one, early returns and returned values
  replaced by ``None``. mutmut's own runner (trampolines selected by an environment
  variable, pytest as the test command) does not fit: here a mutant is an implementation
  under test, run through the suite, not a library under unit tests.
- **catalogue faults** (``conformance/data/mutation-faults.yaml``): named fault models
  written as data, each a text replacement in one module tied to the rule it breaks and
  a theme (ordering, monotonic guards, snapshot and throw normalization, result
  immutability, call/result adjacency, Code Mode, ...).

A mutant's id is stable across unrelated edits: the module, the enclosing function and a
hash of the changed code (and of how often the same change occurs before it there), so
the committed equivalence notes (``conformance/data/mutation-equivalents.yaml``) keep
naming the same change. Sampling is reproducible: the points are enumerated in source
order and drawn with ``random.Random(seed)``, spread over the modules.
"""

from __future__ import annotations

import difflib
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from dsh_conformance.resources import KIT, ORACLE, SUITE
from dsh_conformance.spec.rules import rules as rule_index


DATA = SUITE / "data"


FAULTS_FILE = DATA / "mutation-faults.yaml"


EQUIVALENTS_FILE = DATA / "mutation-equivalents.yaml"


RULE_ID = re.compile(r"\bP(\d{1,3})\b")


class MutantError(Exception):
    """A catalogue or equivalence file that does not fit the oracle (one line, with its place)."""


@dataclass(frozen=True)
class Mutant:
    id: str
    kind: str  # "operator" or "fault"
    module: str  # file name inside oracle/ ("loop.py"), or kit/ as "kit/script.py"
    line: int
    operator: str  # the mutation operator, or "fault"
    change: str  # one line: what was changed into what
    rules: tuple[str, ...]  # the rules the code at that place implements (a fault: the rule it breaks)
    theme: str
    mutated: str  # the module's whole mutated source
    title: str = ""  # a fault's name
    why: str = ""  # a fault's description

    def diff(self) -> str:
        original = module_source(self.module)
        return "".join(difflib.unified_diff(original.splitlines(keepends=True), self.mutated.splitlines(keepends=True),
                                            f"a/{source_path(self.module)}", f"b/{source_path(self.module)}", n=2))

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.kind, "module": self.module, "line": self.line,
                "operator": self.operator, "change": self.change, "rules": list(self.rules), "theme": self.theme,
                **({"title": self.title, "why": self.why} if self.kind == "fault" else {})}


KIT_PREFIX = "kit/"  # the kit's modules are mutated with the oracle's: the oracle runs on them


def oracle_modules() -> list[str]:
    """Every module the oracle runs on, in name order: the oracle package's (``loop.py``)
    and the kit's below it (``kit/script.py``)."""
    return sorted([p.name for p in ORACLE.glob("*.py")] + [KIT_PREFIX + p.name for p in KIT.glob("*.py")])


def _module_file(module: str) -> Path:
    return KIT / module.removeprefix(KIT_PREFIX) if module.startswith(KIT_PREFIX) else ORACLE / module


def source_path(module: str) -> str:
    """The module's path in a clone: ``oracle/loop.py``, ``kit/script.py``."""
    return module if module.startswith(KIT_PREFIX) else f"oracle/{module}"


@cache
def module_source(module: str) -> str:
    return _module_file(module).read_text(encoding="utf-8")


def materialize(root: Path, package: str, mutant: Mutant | None = None) -> Path:
    """Write a copy of the oracle package under ``root/package`` and of the kit under
    ``root/package/kit`` (the oracle imports the kit as ``..kit``, made ``.kit`` in the copy;
    the kit's modules import one another relatively), so the copy is a whole implementation
    of its own, with ``mutant`` applied. The reference side, ``dsh_conformance.oracle`` and
    ``dsh_conformance.kit``, is left untouched."""
    target = root / package
    if target.exists():
        shutil.rmtree(target)
    (target / "kit").mkdir(parents=True)
    for name in oracle_modules():
        text = mutant.mutated if mutant is not None and mutant.module == name else module_source(name)
        if not name.startswith(KIT_PREFIX):
            text = _KIT_IMPORT.sub(r"\1from .kit", text)
        (target / name).write_text(text, encoding="utf-8")
    return target


_KIT_IMPORT = re.compile(r"^(\s*)from \.\.kit\b", re.M)


@cache
def _catalogue() -> dict[str, Any]:
    try:
        doc = yaml.safe_load(FAULTS_FILE.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise MutantError(f"{FAULTS_FILE}: not YAML: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("themes"), dict) or not isinstance(doc.get("faults"), list):
        raise MutantError(f"{FAULTS_FILE}: $: needs 'themes' (a mapping) and 'faults' (a list)")
    return doc


@cache
def themes() -> dict[str, dict[str, Any]]:
    """Theme name -> {title, rules}: each rule belongs to the first theme listing it."""
    out = {}
    for name, t in _catalogue()["themes"].items():
        if not isinstance(t, dict) or not isinstance(t.get("rules"), list):
            raise MutantError(f"{FAULTS_FILE}: $.themes.{name}: needs 'title' and a list 'rules'")
        out[name] = {"title": str(t.get("title", name)), "rules": [str(r) for r in t["rules"]]}
    return out


def theme_of(rules: Iterable[str]) -> str:
    """The theme of the first of ``rules`` that a theme lists; "other" when none does."""
    for rule in rules:
        for name, t in themes().items():
            if rule in t["rules"]:
                return name
    return "other"


@cache
def faults() -> list[Mutant]:
    """The fault catalogue, each applied to a fresh copy of its module. An entry whose
    ``find`` text does not occur exactly once in its module is an error: the catalogue
    has gone stale against the oracle."""

    known = set(rule_index())
    out, seen = [], set()
    for n, f in enumerate(_catalogue()["faults"]):
        where = f"{FAULTS_FILE}: $.faults[{n}]"
        if not isinstance(f, dict):
            raise MutantError(f"{where}: a fault is a mapping")
        missing = [k for k in ("id", "rule", "theme", "module", "find", "replace", "why") if k not in f]
        if missing:
            raise MutantError(f"{where}: missing {', '.join(missing)}")
        fid, module, find, replace = str(f["id"]), str(f["module"]), str(f["find"]), str(f["replace"])
        if fid in seen:
            raise MutantError(f"{where}.id: {fid} is listed twice")
        seen.add(fid)
        if f["rule"] not in known:
            raise MutantError(f"{where}.rule: {f['rule']} is no rule of the spec")
        if f["theme"] not in themes():
            raise MutantError(f"{where}.theme: {f['theme']} is not one of the themes ({', '.join(themes())})")
        if module not in oracle_modules():
            raise MutantError(f"{where}.module: {source_path(module)} does not exist")
        source = module_source(module)
        count = source.count(find)
        if count != 1:
            raise MutantError(f"{where}.find: occurs {count} times in {source_path(module)}, not once")
        at = source.index(find)
        line = source.count("\n", 0, at) + 1
        mutated = source.replace(find, replace)
        out.append(Mutant(id=f"fault:{fid}", kind="fault", module=module, line=line, operator="fault",
                          change=f"{code_line(find)} -> {code_line(replace)}", rules=(str(f["rule"]),),
                          theme=str(f["theme"]), mutated=mutated, title=str(f.get("title", fid)),
                          why=" ".join(str(f["why"]).split())))
    return out


def code_line(code: str, limit: int = 120) -> str:
    text = " ".join(code.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


@cache
def _equivalence_doc() -> dict[str, Any]:
    try:
        doc = yaml.safe_load(EQUIVALENTS_FILE.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise MutantError(f"{EQUIVALENTS_FILE}: not YAML: {e}") from None
    if not isinstance(doc, dict):
        raise MutantError(f"{EQUIVALENTS_FILE}: $: a mapping with 'modules' and 'mutants'")
    for key in ("modules", "functions", "mutants"):
        section = doc.get(key) or {}
        if not isinstance(section, dict):
            raise MutantError(f"{EQUIVALENTS_FILE}: $.{key}: a mapping of names to reasons")
        for name, entry in section.items():
            reason = entry.get("reason") if isinstance(entry, dict) else entry
            if not isinstance(reason, str) or not reason.strip():
                raise MutantError(f"{EQUIVALENTS_FILE}: $.{key}.{name}: needs a reason")
    return doc


@cache
def excluded_modules() -> dict[str, str]:
    """Modules no mutant is drawn from, each with its reason (code the IUT protocol never
    runs: the command line, the catalog generator)."""
    out = {}
    for name, entry in (_equivalence_doc().get("modules") or {}).items():
        if name not in oracle_modules():
            raise MutantError(f"{EQUIVALENTS_FILE}: $.modules.{name}: {source_path(name)} does not exist")
        out[name] = entry["reason"] if isinstance(entry, dict) else entry
    return out


@cache
def excluded_functions() -> dict[str, str]:
    """Functions (``module.qualname``, shell patterns allowed) no mutant is drawn from, each
    with its reason: code an implementation under test never runs through ``answer()``."""
    out = {}
    for name, entry in (_equivalence_doc().get("functions") or {}).items():
        out[str(name)] = entry["reason"] if isinstance(entry, dict) else entry
    return out


@cache
def equivalents() -> dict[str, dict[str, str]]:
    """Mutant id -> {reason, change}: mutants that change nothing an implementation can
    show, each with the reason, read from the committed file."""
    out = {}
    for name, entry in (_equivalence_doc().get("mutants") or {}).items():
        entry = entry if isinstance(entry, dict) else {"reason": entry}
        out[str(name)] = {"reason": " ".join(str(entry["reason"]).split()), "change": str(entry.get("change", ""))}
    return out


__all__ = ["Mutant", "MutantError", "faults", "materialize", "equivalents", "excluded_modules",
           "excluded_functions", "themes", "theme_of", "oracle_modules", "module_source", "source_path"]
