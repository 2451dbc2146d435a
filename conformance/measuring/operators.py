"""Operator mutants of the oracle and the plan of a run's mutants.

The oracle's modules are walked with libcst; each mutation point is one change that one of
mutmut's operators (``mutmut.mutation.mutators``) or one of ours (conditions negated,
statements deleted, neighbouring statements swapped, integers minus one, early returns and
returned values replaced by ``None``) makes there. Points are enumerated in source order, and
a run's plan draws ``budget`` of them with ``random.Random(seed)``, spread over the modules,
beside the catalogue's faults (``measuring.mutants``)."""

from __future__ import annotations

import fnmatch
import hashlib
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from mutmut.mutation.mutators import mutation_operators

from dsh_conformance.measuring.mutants import (
    RULE_ID,
    Mutant,
    MutantError,
    code_line,
    excluded_functions,
    excluded_modules,
    faults,
    module_source,
    oracle_modules,
    theme_of,
)


@dataclass
class Point:
    """One place and way to mutate a module: the node, its replacement, and where."""
    module: str
    function: str  # the enclosing function's qualified name, or "<module>"
    line: int
    operator: str
    original: Any  # libcst node
    replacement: Any  # libcst node (or a FlattenSentinel / RemovalSentinel)
    before: str
    after: str
    rules: tuple[str, ...] = ()
    id: str = ""


def _operators() -> list[tuple[type, Callable[[Any], Iterable[Any]], str]]:
    """mutmut's node operators, then the ones this module adds."""
    ours: list[tuple[type, Callable[[Any], Iterable[Any]], str]] = [
        (cst.If, _negate_condition, "negate_condition"),
        (cst.While, _negate_condition, "negate_condition"),
        (cst.Integer, _minus_one, "number_minus_one"),
        (cst.Return, _return_none, "return_none"),
    ]
    theirs = [(t, fn, fn.__name__.removeprefix("operator_")) for t, fn in mutation_operators
              if fn.__name__ not in LEFT_OUT]
    return theirs + ours


# mutmut operators left out: replacing a call's argument by None or dropping it, assigning
# None, and changing a lambda's or dict()'s body make nearly every mutant a TypeError in the
# oracle's own code, a crash rather than a plausible fault of an implementation.
LEFT_OUT = frozenset({"operator_arg_removal", "operator_assignment", "operator_lambda",
                      "operator_dict_arguments"})


def _negate_condition(node: Any) -> Iterator[Any]:
    test = node.test
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return  # mutmut's remove_unary_ops already drops a `not`
    yield node.with_changes(test=cst.UnaryOperation(
        operator=cst.Not(), expression=test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])))


def _minus_one(node: Any) -> Iterator[Any]:
    value = node.evaluated_value
    if isinstance(value, int) and value > 0:
        yield cst.Integer(repr(value - 1))


def _return_none(node: Any) -> Iterator[Any]:
    if node.value is not None and not (isinstance(node.value, cst.Name) and node.value.value == "None"):
        yield node.with_changes(value=cst.Name("None"))


def _block_operators(body: list[Any]) -> Iterator[tuple[str, int, Any]]:
    """Statement deletion, neighbouring statements swapped, and an early return, in one
    block of statements: (operator, index, new statement list)."""

    statements = list(body)
    start = 1 if statements and _is_docstring(statements[0]) else 0
    for i in range(start, len(statements)):
        s = statements[i]
        if _is_deletable(s):
            yield "delete_statement", i, [*statements[:i], cst.SimpleStatementLine([cst.Pass()]), *statements[i + 1:]]
    for i in range(start, len(statements) - 1):
        a, b = statements[i], statements[i + 1]
        if _is_deletable(a) and _is_deletable(b):
            yield "swap_statements", i, [*statements[:i], b, a, *statements[i + 2:]]
    for i in range(start + 1, len(statements)):
        if not _returns(statements[i - 1]):
            yield "early_return", i, [*statements[:i], cst.SimpleStatementLine([cst.Return()]), *statements[i:]]


def _is_docstring(s: Any) -> bool:
    return (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr)
            and isinstance(s.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _is_deletable(s: Any) -> bool:
    """A statement whose absence still compiles and means a missing step: an assignment, a
    call, an augmented assignment, a raise; not a return, a definition or an import."""

    if not isinstance(s, cst.SimpleStatementLine):
        return isinstance(s, (cst.If, cst.For, cst.While, cst.With, cst.Try))
    return all(isinstance(x, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr, cst.Raise)) for x in s.body) and not (
        any(isinstance(x, cst.AnnAssign) and x.value is None for x in s.body))


def _returns(s: Any) -> bool:
    return isinstance(s, cst.SimpleStatementLine) and any(isinstance(x, (cst.Return, cst.Raise)) for x in s.body)


class _Walker:
    """Collects the points of one module: libcst nodes in source order with their
    enclosing function and the rule ids the code there cites."""

    def __init__(self, module_name: str, source: str) -> None:
        self.cst = cst
        self.module_name = module_name
        self.lines = source.splitlines()
        self.wrapper = MetadataWrapper(cst.parse_module(source))
        self.tree = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)
        self.points: list[Point] = []
        self.operators = _operators()

    def line_of(self, node: Any) -> int:
        pos = self.positions.get(node)
        return pos.start.line if pos else 0

    def code(self, node: Any) -> str:
        return self.tree.code_for_node(node)

    def walk(self) -> list[Point]:
        self._visit(self.tree, "<module>", None)
        return self.points

    def _skip(self, node: Any) -> bool:
        cst = self.cst
        if isinstance(node, (cst.Annotation, cst.Decorator, cst.Import, cst.ImportFrom)):
            return True
        if isinstance(node, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == "__all__" for t in node.targets):
            return True
        if isinstance(node, cst.If) and isinstance(node.test, cst.Name) and node.test.value == "TYPE_CHECKING":
            return True
        if isinstance(node, cst.Param) and node.default is not None and not isinstance(
                node.default, (cst.Name, cst.BaseNumber, cst.BaseString)):
            return True
        if isinstance(node, cst.SimpleStatementLine) and _is_docstring(node):
            return True
        # A field's description (pydantic's Field(description=...)) documents the generated
        # catalogs; no trace holds it, so each of its text mutants would be a noted equivalent.
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "description":
            return True
        return False

    def _keeps(self, node: Any) -> bool:
        """A string is mutated only when it is a text (it has a space: a message, a
        template); a key, a token name or an event name changed makes the oracle fail on
        its own data, not a fault an implementation would have."""
        cst = self.cst
        if isinstance(node, cst.SimpleString):
            return " " in node.evaluated_value if isinstance(node.evaluated_value, str) else False
        return True

    def _visit(self, node: Any, function: str, fn_node: Any) -> None:
        cst = self.cst
        if self._skip(node):
            return
        if isinstance(node, cst.FunctionDef):
            function = node.name.value if function == "<module>" else f"{function}.{node.name.value}"
            fn_node = node
        elif isinstance(node, cst.ClassDef):
            function = node.name.value if function == "<module>" else f"{function}.{node.name.value}"
        for t, op, name in self.operators:
            if isinstance(node, t) and self._keeps(node):
                for new in op(node):
                    self._add(node, new, name, function, fn_node)
        if isinstance(node, cst.IndentedBlock) and fn_node is not None:
            for name, i, statements in _block_operators(list(node.body)):
                self._add(node, node.with_changes(body=statements), name, function, fn_node, anchor=node.body[i])
        for child in node.children:
            self._visit(child, function, fn_node)

    def _add(self, node: Any, new: Any, operator: str, function: str, fn_node: Any, anchor: Any = None) -> None:
        cst = self.cst
        where = anchor if anchor is not None else node
        before = self.code(where) if anchor is not None else self.code(node)
        if anchor is not None:
            after = _describe_block_change(operator, node, new, self.tree, anchor)
        else:
            after = cst.Module([]).code_for_node(new)
        if before.strip() == after.strip():
            return
        line = self.line_of(where)
        self.points.append(Point(self.module_name, function, line, operator, node, new, before, after,
                                 self._rules(line, fn_node)))

    def _rules(self, line: int, fn_node: Any) -> tuple[str, ...]:
        """The rule ids the code at ``line`` cites: its own line, else the nearest comment
        above it inside its function, else the function's docstring."""
        if line <= 0:
            return ()
        first = self.line_of(fn_node) if fn_node is not None else 1
        own = _ids(self.lines[line - 1])
        if own:
            return own
        for n in range(line - 1, first - 1, -1):
            text = self.lines[n - 1].strip()
            if text.startswith("#"):
                ids = _ids(text)
                if ids:
                    return ids
        if fn_node is not None:
            doc = fn_node.get_docstring()
            if doc:
                return _ids(doc)
        return ()


def _describe_block_change(operator: str, block: Any, new: Any, tree: Any, anchor: Any) -> str:
    code = tree.code_for_node(anchor).strip()
    first = code.splitlines()[0] if code else ""
    match operator:
        case "delete_statement":
            return "pass"
        case "swap_statements":
            i = list(block.body).index(anchor)
            nxt = tree.code_for_node(block.body[i + 1]).strip().splitlines()[0]
            return f"{nxt} (moved before {first})"
        case _:
            return f"return (before {first})"


def _ids(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f"P{m}" for m in RULE_ID.findall(text)))


def _point_ids(points: list[Point]) -> None:
    """Stable ids: module, function, and a hash of the change (numbered when the same
    change occurs more than once in one function)."""
    seen: dict[str, int] = {}
    for p in points:
        digest = hashlib.sha256(f"{p.operator}\0{p.before}\0{p.after}".encode()).hexdigest()[:8]
        base = f"{p.module.removesuffix('.py')}.{p.function}#{digest}"
        n = seen.get(base, 0)
        seen[base] = n + 1
        p.id = base if n == 0 else f"{base}.{n}"


@cache
def _walked(module: str) -> tuple[Any, tuple[Point, ...]]:
    """The module's libcst tree and its points (their nodes belong to that tree)."""
    w = _Walker(module, module_source(module))
    found = w.walk()
    _point_ids(found)
    return w.tree, tuple(found)


def points(module: str) -> tuple[Point, ...]:
    return _walked(module)[1]


def operator_mutant(p: Point) -> Mutant:
    tree = _walked(p.module)[0]
    mutated = tree.deep_replace(p.original, p.replacement)
    return Mutant(id=p.id, kind="operator", module=p.module, line=p.line, operator=p.operator,
                  change=f"{code_line(p.before)} -> {code_line(p.after)}", rules=p.rules, theme=theme_of(p.rules),
                  mutated=mutated.code)


def _left_out(p: Point) -> bool:
    qualified = f"{p.module.removesuffix('.py')}.{p.function}"
    return any(fnmatch.fnmatchcase(qualified, pattern) for pattern in excluded_functions())


@dataclass
class Plan:
    mutants: list[Mutant]
    points: int  # operator mutation points over the modules sampled from
    per_module: dict[str, int] = field(default_factory=dict)  # points per module


def plan(budget: int, seed: int, with_faults: bool = True, only: list[str] | None = None,
         modules: list[str] | None = None) -> Plan:
    """``budget`` operator mutants drawn reproducibly (``seed``), spread over the modules
    (``modules``, default all but the excluded) in proportion to their points and at least
    one from each, then the fault catalogue. ``only``: just the mutants with these ids
    (an operator mutant's module is named by its id, so only that module is walked)."""
    if modules:
        for m in modules:
            if m not in oracle_modules():
                raise MutantError(f"--module {m}: no such oracle module ({', '.join(oracle_modules())})")
    if only is not None:
        named = {i.split(".", 1)[0] + ".py" for i in only if not i.startswith("fault:")}
        modules = sorted(m for m in named if m in oracle_modules())
    pts = [p for m in (modules or oracle_modules()) if modules or m not in excluded_modules() for p in points(m)
           if only is not None or not _left_out(p)]
    per_module: dict[str, list[Point]] = {}
    for p in pts:
        per_module.setdefault(p.module, []).append(p)
    counts = {m: len(v) for m, v in per_module.items()}
    if only is not None:
        wanted = set(only)
        by_id = {p.id: p for p in pts}
        mutants = [operator_mutant(by_id[i]) for i in only if i in by_id]
        mutants += [f for f in faults() if f.id in wanted]
        unknown = wanted - {m.id for m in mutants}
        if unknown:
            raise MutantError(f"--only: no such mutant: {', '.join(sorted(unknown))}")
        return Plan(mutants, len(pts), counts)
    chosen = _sample(per_module, budget, random.Random(seed))
    mutants = [operator_mutant(p) for p in chosen]
    if with_faults:
        mutants += faults()
    return Plan(mutants, len(pts), counts)


def _sample(per_module: dict[str, list[Point]], budget: int, rng: random.Random) -> list[Point]:
    total = sum(len(v) for v in per_module.values())
    if budget <= 0 or total == 0:
        return []
    if budget >= total:
        return [p for m in sorted(per_module) for p in per_module[m]]
    modules = sorted(per_module)
    share = {m: max(1, round(budget * len(per_module[m]) / total)) for m in modules} if budget >= len(modules) else {}
    if not share:  # fewer mutants than modules: the modules themselves are drawn
        share = {m: 1 for m in rng.sample(modules, budget)}
    while sum(share.values()) > budget:  # rounding: take back from the largest
        biggest = max(share, key=lambda m: (share[m], m))
        share[biggest] -= 1
    while sum(share.values()) < budget:
        room = [m for m in modules if share.get(m, 0) < len(per_module[m])]
        m = max(room, key=lambda m: (len(per_module[m]) - share.get(m, 0), m))
        share[m] = share.get(m, 0) + 1
    # Within a module, the points whose keyed digest of their id is lowest: a change
    # elsewhere in the module (a line added, a function rewritten) leaves the other points'
    # ids, and so whether they are drawn, as they were, where an index drawn at random would
    # move every later pick. The committed report and its noted equivalents then stay valid
    # across unrelated edits of the oracle.
    key = rng.getrandbits(64).to_bytes(8, "big")
    out = []
    for m in modules:
        k = min(share.get(m, 0), len(per_module[m]))
        ranked = sorted(range(len(per_module[m])),
                        key=lambda i: hashlib.blake2b(per_module[m][i].id.encode(), key=key, digest_size=8).digest())
        out.extend(per_module[m][i] for i in sorted(ranked[:k]))
    return out
