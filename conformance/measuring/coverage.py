"""``dsh-conformance coverage``: a measure of the generated half that is not the fault catalogue.

The corpus alone and the generated default run alone (``--no-corpus``, the same draws as
``run --examples N --seed S`` and the mutation report's generated-only column:
``mutate.default_cases``) are each run through the embedded oracle under coverage.py's
branch coverage of ``oracle/`` and of the kit it runs on (``kit/``). The branches the corpus reaches and the generated run
does not are printed grouped by rule: the rule ids of the nearest comment naming one
(``P12``), at or above the branch inside its function.

A branch no draw can reach is listed, with why, in ``conformance/data/coverage-exceptions.yaml``
(keyed by module, function and the source text of the branch's two ends, so that edits
elsewhere do not move it). Exit codes: 0 every branch the corpus reaches is reached by the
generated run or listed; 1 one is neither, or a listed exception is stale (the generated
run reaches it now, or the corpus no longer does); 2 a usage error (coverage.py missing).

Each run is measured in a fresh interpreter (the oracle keeps memo tables: compiled schema
validators, JSON encoders), so neither hides a branch from the other; the generated
scenarios are drawn before, and the draws' own oracle runs are not counted.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import json
import re
import subprocess
import sys
import tempfile
import tokenize
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from dsh_conformance.resources import COVERAGE_EXCEPTIONS, KIT, ORACLE
from dsh_conformance.spec.corpus import CASES

# Where the packages are, in a clone or an installed wheel alike (not this file's
# grandparent: installed, that is site-packages, and every figure would read 0).
ORACLE_DIR = ORACLE
KIT_DIR = KIT  # the kit's interpreter is the oracle's: measured with it
KIT_PREFIX = "kit/"
EXCEPTIONS_FILE = COVERAGE_EXCEPTIONS
RULE_ID = re.compile(r"\bP\d+\b")
NO_RULE = "(no rule cited)"
EXIT_OK, EXIT_GAPS, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True, order=True)
class Branch:
    """One arc of a branch line: from ``line`` to ``to`` (negative: the function exits)."""
    module: str  # the file's name inside oracle/ ("loop.py"), or the kit's as "kit/script.py"
    line: int
    to: int


@dataclass(frozen=True)
class Place:
    """What a reader (and the exceptions file) knows a branch by."""
    branch: Branch
    function: str
    source: str  # the branch line's text
    target: str  # the destination line's text, or "exit"
    rules: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.branch.module, self.function, self.source, self.target


# ============================================================================ measuring

def _oracle_files() -> list[Path]:
    return sorted(ORACLE_DIR.glob("*.py")) + sorted(KIT_DIR.glob("*.py"))


def _module_name(file: Path) -> str:
    """What a branch's module is called: ``loop.py`` in oracle/, ``kit/script.py`` in kit/."""
    return KIT_PREFIX + file.name if file.parent == KIT_DIR else file.name


def _module_file(module: str) -> Path:
    return KIT_DIR / module.removeprefix(KIT_PREFIX) if module.startswith(KIT_PREFIX) else ORACLE_DIR / module


def _shown(module: str) -> str:
    """The module's path in a clone, as printed."""
    return module if module.startswith(KIT_PREFIX) else f"oracle/{module}"


def measure(docs: Iterable[dict[str, Any]]) -> tuple[set[Branch], set[Branch]]:
    """The oracle branches that parsing and running ``docs`` takes, and every branch arc of
    the oracle's modules as coverage.py counts them: in a fresh interpreter, so that what an
    earlier run left in the oracle's memo tables (compiled schema validators, JSON encoders)
    does not hide a branch from this one."""
    with tempfile.TemporaryDirectory(prefix="dsh-coverage-") as tmp:
        path = Path(tmp) / "docs.json"
        path.write_text(json.dumps(list(docs)), encoding="utf-8")
        out = subprocess.run([sys.executable, "-m", "dsh_conformance.measuring.coverage", str(path)],
                             capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"the measuring process failed: {out.stderr.strip()[-2000:]}")
    got = json.loads(out.stdout)
    return ({Branch(*b) for b in got["taken"]}, {Branch(*b) for b in got["every"]})


def _measure_here(path: Path) -> dict[str, list[list[Any]]]:
    """``measure``'s work, in this (fresh) process: coverage starts before the oracle is imported."""
    # lazy (measurement): this module runs as the measuring process, which imports coverage
    # and then the oracle only once coverage has started (else its module lines are missed)
    import coverage

    docs = json.loads(path.read_text(encoding="utf-8"))
    cov = coverage.Coverage(branch=True, data_file=None, source=[str(ORACLE_DIR), str(KIT_DIR)], config_file=False)
    cov.start()
    try:
        # lazy (measurement): the oracle is imported with coverage started
        from dsh_conformance.oracle import ScenarioRunError, parse_scenario, run_scenario

        for doc in docs:
            try:
                run_scenario(parse_scenario(doc))
            except ScenarioRunError:  # counted as far as it went, as the run judges it
                pass
    finally:
        cov.stop()
    taken: set[Branch] = set()
    every: set[Branch] = set()
    for file in _oracle_files():
        # coverage.py's per-file analysis (private in the pinned 7.17.5: the public API gives lines only)
        analysis = cov._analyze(str(file))
        for line, tos in analysis.executed_branch_arcs().items():
            taken.update(Branch(_module_name(file), line, to) for to in tos)
        every.update(Branch(_module_name(file), line, to) for line, tos in analysis.missing_branch_arcs().items() for to in tos)
    return {"taken": [[b.module, b.line, b.to] for b in sorted(taken)],
            "every": [[b.module, b.line, b.to] for b in sorted(every | taken)]}


def corpus_docs(cases: Path = CASES) -> list[dict[str, Any]]:
    # lazy (measurement): it imports the oracle, which the measuring process imports only
    # once coverage has started
    from dsh_conformance.running.references import corpus_items

    return [doc for _id, doc, _path in corpus_items(cases)]


def generated_docs(examples: int, seed: int) -> list[dict[str, Any]]:
    """The generated default run's scenarios: the independent draws ``run --no-corpus``
    judges and the mutation report's generated-only column counts (``mutate.default_cases``
    draws the same, a test holds them equal), each once. Not imported from mutate, which
    reaches back to the command line (an import circle)."""
    # lazy (measurement): these import the oracle, which the measuring process imports only
    # once coverage has started
    from dsh_conformance.spec.rules import ORACLE_PROFILES
    from dsh_conformance.running.properties import content_id, hypothesis_home
    from dsh_conformance.strategies.draws import independent_draws

    out: dict[str, dict[str, Any]] = {}
    with hypothesis_home():
        draws = independent_draws(examples, seed, frozenset(ORACLE_PROFILES))
        if draws is None:
            raise RuntimeError("hypothesis' internal draw API is not there: the pinned release is needed")
        for example, _choices in draws:
            out.setdefault(content_id(example.doc), example.doc)
    return list(out.values())


# ============================================================================ naming a branch

@dataclass(frozen=True)
class _Source:
    lines: list[str]
    comments: dict[int, str]
    functions: list[tuple[int, int, str]]  # (first line, last line, qualified name), outermost first


@cache
def _source(module: str) -> _Source:
    text = _module_file(module).read_text(encoding="utf-8")
    comments = {tok.start[0]: tok.string for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                if tok.type == tokenize.COMMENT}
    functions: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    functions.append((first, child.end_lineno or child.lineno, name))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")
    return _Source(text.splitlines(), comments, functions)


def _function(src: _Source, line: int) -> tuple[int, str]:
    """The innermost function holding ``line``: its first line and name (module level: 1, "")."""
    best = (1, "", 10**9)
    for first, last, name in src.functions:
        if first <= line <= last and last - first < best[2]:
            best = (first, name, last - first)
    return best[0], best[1]


def _rules_at(src: _Source, lineno: int) -> tuple[str, ...]:
    return tuple(dict.fromkeys(RULE_ID.findall(src.comments.get(lineno, ""))))


def rules_of_branch(src: _Source, b: Branch, start: int) -> tuple[str, ...]:
    """The rule ids of the nearest comment that names one: on the destination line or the
    comment lines just above it (a comment opening the branch's block), then on the branch
    line and upward to the start of its function."""
    if b.to > b.line:
        k = b.to
        while k > b.line:
            if found := _rules_at(src, k):
                return found
            k -= 1
            if src.lines[k - 1].strip() and not src.lines[k - 1].strip().startswith("#"):
                break
    for k in range(b.line, start - 1, -1):
        if found := _rules_at(src, k):
            return found
    return ()


def place(b: Branch) -> Place:
    src = _source(b.module)
    start, function = _function(src, b.line)
    target = src.lines[b.to - 1].strip() if 0 < b.to <= len(src.lines) else "exit"
    return Place(b, function, src.lines[b.line - 1].strip(), target, rules_of_branch(src, b, start))


# ============================================================================ exceptions

@dataclass(frozen=True)
class Exception_:
    module: str
    function: str
    source: str
    target: str
    reason: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.module, self.function, self.source, self.target


class ExceptionsError(ValueError):
    pass


def load_exceptions(path: Path = EXCEPTIONS_FILE) -> list[Exception_]:
    """The listed branches no draw can reach, each with why."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise ExceptionsError(f"{path}: cannot read: {e}") from None
    entries = (data or {}).get("exceptions") or []
    out = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str) and e.get(k)
                                              for k in ("module", "function", "source", "target", "reason")):
            raise ExceptionsError(f"{path}: exceptions[{i}]: needs module, function, source, target and reason "
                                  "(non-empty strings)")
        out.append(Exception_(e["module"], e["function"], e["source"], e["target"], e["reason"]))
    return out


# ============================================================================ the report

@dataclass
class Measure:
    total: int
    corpus: set[Branch]
    generated: set[Branch]
    n_corpus: int
    n_generated: int
    examples: int
    seed: int
    gaps: list[Place]  # corpus, not generated, not listed
    excused: list[tuple[Place, Exception_]]
    stale: list[Exception_]


def compare(corpus: set[Branch], generated: set[Branch], total: int, exceptions: list[Exception_],
            n_corpus: int, n_generated: int, examples: int, seed: int) -> Measure:
    listed = {e.key: e for e in exceptions}
    gaps, excused, used = [], [], set()
    for b in sorted(corpus - generated):
        p = place(b)
        if p.key in listed:
            excused.append((p, listed[p.key]))
            used.add(p.key)
        else:
            gaps.append(p)
    stale = [e for e in exceptions if e.key not in used]
    return Measure(total, corpus, generated, n_corpus, n_generated, examples, seed, gaps, excused, stale)


def by_rule(places: Iterable[Place]) -> dict[str, list[Place]]:
    groups: dict[str, list[Place]] = defaultdict(list)
    for p in places:
        groups[", ".join(p.rules) or NO_RULE].append(p)
    return dict(sorted(groups.items(), key=lambda kv: (kv[0] == NO_RULE, _rule_number(kv[0]))))


def _rule_number(rules: str) -> int:
    found = RULE_ID.search(rules)
    return int(found.group()[1:]) if found else 0


def _describe(p: Place) -> str:
    where = f"{_shown(p.branch.module)}:{p.branch.line}->{p.branch.to if p.branch.to > 0 else 'exit'}"
    return f"{where} in {p.function or '<module>'}: {p.source}  ->  {p.target}"


def text_report(m: Measure) -> str:
    both = len(m.corpus & m.generated)
    out = [
        f"oracle branches (coverage.py branch arcs of oracle/ and kit/): {m.total}",
        f"  corpus alone ({m.n_corpus} cases): {len(m.corpus)}",
        f"  generated default run alone ({m.n_generated} scenarios of {m.examples} draws, seed {m.seed}): "
        f"{len(m.generated)}",
        f"  both: {both}; generated and not the corpus: {len(m.generated - m.corpus)}",
        f"  the corpus and not the generated run: {len(m.gaps) + len(m.excused)} "
        f"({len(m.excused)} listed exceptions, {len(m.gaps)} not listed)",
    ]
    for rule, places in by_rule(m.gaps).items():
        out.append(f"\n{rule} ({len(places)})")
        out.extend(f"  {_describe(p)}" for p in places)
    if m.excused:
        out.append(f"\nlisted exceptions reached by the corpus only ({len(m.excused)}, "
                   f"{EXCEPTIONS_FILE.name}):")
        out.extend(f"  {_describe(p)}\n    why: {e.reason}" for p, e in m.excused)
    for e in m.stale:
        out.append(f"\nstale exception: {_shown(e.module)} {e.function}: {e.source} -> {e.target} "
                   "(the generated run reaches it, or the corpus does not)")
    return "\n".join(out)


def json_report(m: Measure) -> str:
    def one(p: Place) -> dict[str, Any]:
        return {"module": p.branch.module, "line": p.branch.line, "to": p.branch.to, "function": p.function,
                "source": p.source, "target": p.target, "rules": list(p.rules)}
    return json.dumps({
        "branches": m.total, "corpus": len(m.corpus), "generated": len(m.generated),
        "both": len(m.corpus & m.generated), "generated_only": len(m.generated - m.corpus),
        "corpus_cases": m.n_corpus, "generated_scenarios": m.n_generated, "examples": m.examples, "seed": m.seed,
        "gaps": {rule: [one(p) for p in ps] for rule, ps in by_rule(m.gaps).items()},
        "excused": [dict(one(p), reason=e.reason) for p, e in m.excused],
        "stale": [e.__dict__ for e in m.stale],
    }, indent=1)


def cmd_coverage(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("coverage") is None:
        print("error: dsh-conformance coverage needs coverage.py: pip install 'dsh-conformance[mutate]'",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        exceptions = load_exceptions(Path(args.exceptions))
    except ExceptionsError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    corpus = corpus_docs(Path(args.cases))
    generated = generated_docs(args.examples, args.seed)
    (by_corpus, every), (by_generated, _) = measure(corpus), measure(generated)
    if not every or not corpus:  # a measure of nothing is no pass (the oracle's files not found, no corpus)
        where = f"no branch of the oracle's files was found ({ORACLE_DIR}, {KIT_DIR})" if not every else \
            f"the corpus {args.cases} holds no case"
        print(f"error: nothing to measure: {where}", file=sys.stderr)
        return EXIT_GAPS
    m = compare(by_corpus, by_generated, len(every), exceptions,
                len(corpus), len(generated), args.examples, args.seed)
    print(json_report(m) if args.format == "json" else text_report(m))
    return EXIT_GAPS if m.gaps or m.stale else EXIT_OK


__all__ = ["cmd_coverage", "measure", "compare", "place", "load_exceptions",
           "Branch", "Place", "Measure"]


if __name__ == "__main__":  # the measuring process of ``measure``
    print(json.dumps(_measure_here(Path(sys.argv[1]))))
