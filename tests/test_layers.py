"""The package's layers, read from its source with ``ast``: the arrows between modules go
one way.

- The kit (``dsh_conformance.kit``: the scenario interpreter and the JS value model)
  imports nothing above it: none of the oracle's stages, no module of the suite, no ``tools``.
- The oracle (``dsh_conformance.oracle``) imports nothing above it but the kit: no module of
  the suite, no ``tools``.
- Between the suite's subpackages the arrows go down ``LAYERS``: a module imports only from
  its own layer and the ones below it (``dsh_conformance.running`` may import the judge; the
  judge may not import the runner).
- No module imports another module's private (``_x``) names, neither by ``from m import
  _x`` nor as ``m._x`` of an imported module.
- No import cycle among the package's modules, function-local imports included (an import
  under ``if TYPE_CHECKING:`` is for annotations only and does not count).
- No module of ``conformance/`` is over 500 lines (one concern a module, issue 43), nor one of
  ``kit/`` or ``oracle/`` over 800.
- pyflakes finds nothing in any module of the package (an unused import, an undefined or
  redefined name).
- docs/reference/modules.md, "Module by module", lists every module of the tree, and nothing else.

``ALLOWED`` lists today's violations. It must only shrink: the test fails on a violation it
does not list AND on a listed one that is gone, so that each fix removes its line.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"conformance": "dsh_conformance", "kit": "dsh_conformance.kit", "oracle": "dsh_conformance.oracle",
            "tools": "dsh_conformance.tools"}
MAX_LINES = 800
MAX_SUITE_LINES = 500  # issue 43: a module of the suite (conformance/) holds one concern
SIZED = ("conformance", "kit", "oracle")  # the folders whose modules the size limit covers

# Violations allowed for now, each to be removed by the change that fixes it (empty: issue
# 22's circles, private imports and oversized modules are all gone; keep it so).
ALLOWED: dict[str, set[str]] = {"cycle": set(), "private": set(), "above": set(), "size": set()}

# The suite's layers, lowest first (issue 43): the kit, the oracle, the top modules every
# concern reads (``BASE``), text and files written safely, the spec as data, the laws, the
# judge, the generators, building DSH, implementations under test, reports, running,
# measuring the suite and porting, the generators of catalogs and docs, and on top the
# command line and the pytest plugin (every other top-level module, ``ENTRY``).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("kit",), ("oracle",), ("base",), ("textio",), ("spec",), ("laws",), ("judge",), ("strategies",), ("dsh",),
    ("iut",), ("reporting",), ("running",), ("measuring", "porting"), ("tools",), ("entry",))
BASE = {"dsh_conformance", "dsh_conformance.resources", "dsh_conformance.defaults", "dsh_conformance.argtypes"}
SUBPACKAGES = {name for layer in LAYERS for name in layer} - {"base", "entry"}


def layer_of(module: str) -> int | None:
    """The index in LAYERS of a module of the package (None: not one of the package's)."""
    parts = module.split(".")
    if parts[0] != "dsh_conformance":
        return None
    if module in BASE:
        group = "base"
    elif len(parts) > 1 and parts[1] in SUBPACKAGES:
        group = parts[1]
    elif len(parts) > 1 and parts[1] in ("catalogs", "examples"):
        return None  # folders of data
    else:
        group = "entry"
    return next(i for i, layer in enumerate(LAYERS) if group in layer)


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rsplit(".", 1)[0]


def _sources(folder: Path) -> list[Path]:
    """The .py files of a folder, not descending into node_modules, caches or dot folders."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
        out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py")]
    return out


def modules() -> dict[str, Module]:
    out: dict[str, Module] = {}
    for folder, package in PACKAGES.items():
        for path in _sources(ROOT / folder):
            rel = path.relative_to(ROOT / folder)
            parts = list(rel.with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            if parts and any(not p.isidentifier() for p in parts):
                continue
            name = ".".join([package, *parts])
            out[name] = Module(name, path, is_package)
    return out


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of import nodes under ``if TYPE_CHECKING:`` (annotations only)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skipped |= {id(n) for child in node.body for n in ast.walk(child)}
    return skipped


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the module imported from (or imported)
    name: str | None  # the name taken from it (None: the module itself)
    line: int


def imports(mod: Module, known: dict[str, Module]) -> list[Import]:
    """Every import of a package module by ``mod``, wherever it stands in the file."""
    tree = ast.parse(mod.path.read_text(encoding="utf-8"))
    skipped = _type_checking_only(tree)
    out: list[Import] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:  # `from . import x`: the module x
                    out.append(Import(mod.name, sub, None, node.lineno))
                elif target in known:
                    out.append(Import(mod.name, target, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            out += [Import(mod.name, a.name, None, node.lineno) for a in node.names if a.name in known]
    return out


def private_attributes(mod: Module, known: dict[str, Module]) -> list[str]:
    """``m._x`` where ``m`` is a package module ``mod`` imported under that name."""
    tree = ast.parse(mod.path.read_text(encoding="utf-8"))
    aliases: dict[str, str] = {}
    for imp in imports(mod, known):
        if imp.name is None:
            aliases[imp.target.rsplit(".", 1)[-1]] = imp.target
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and _private(node.attr)):
            found.append(f"{mod.name} imports {aliases[node.value.id]}.{node.attr}")
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def graph() -> tuple[dict[str, Module], dict[str, list[Import]]]:
    known = modules()
    return known, {name: imports(m, known) for name, m in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), and any
    module that imports itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def violations() -> dict[str, set[str]]:
    known, imps = graph()
    found: dict[str, set[str]] = {"cycle": set(), "private": set(), "above": set(), "size": set()}
    edges = {name: {i.target for i in xs if i.target != name} for name, xs in imps.items()}
    found["cycle"] = {" <-> ".join(c) for c in cycles(edges)}
    for name, xs in imps.items():
        for i in xs:
            if i.name is not None and _private(i.name) and i.target != name:
                found["private"].add(f"{name} imports {i.target}.{i.name}")
            low, high = layer_of(i.target), layer_of(name)
            if low is not None and high is not None and low > high:
                found["above"].add(f"{name} imports {i.target} (line {i.line})")
        found["private"] |= set(private_attributes(known[name], known))
    for name, m in known.items():
        folder = m.path.relative_to(ROOT).parts[0]
        limit = MAX_SUITE_LINES if folder == "conformance" else MAX_LINES
        if folder in SIZED and len(m.path.read_text(encoding="utf-8").splitlines()) > limit:
            found["size"].add(str(m.path.relative_to(ROOT)))
    return found


FOUND = violations()


@pytest.mark.parametrize("kind", sorted(ALLOWED))
def test_no_new_violation(kind: str) -> None:
    new = sorted(FOUND[kind] - ALLOWED[kind])
    assert not new, f"new {kind} violations (fix them; do not allow-list them): {new}"


@pytest.mark.parametrize("kind", sorted(ALLOWED))
def test_allow_list_is_honest(kind: str) -> None:
    gone = sorted(ALLOWED[kind] - FOUND[kind])
    assert not gone, f"fixed, remove from ALLOWED[{kind!r}] in tests/test_layers.py: {gone}"


def test_the_reader_sees_function_local_imports_and_skips_type_checking(tmp_path: Path) -> None:
    """The reader is what the test stands on: a function-local import is an edge, an import
    under TYPE_CHECKING is not, a relative import resolves against its package."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n"
                                 "def f():\n    from .b import g\n    from . import c\n    return c._hidden\n")
    (folder / "b.py").write_text("from .a import f\n")
    (folder / "c.py").write_text("_hidden = 1\n")
    known = {n: Module(n, folder / f"{s}.py", s == "__init__") for n, s in
             (("pkg", "__init__"), ("pkg.a", "a"), ("pkg.b", "b"), ("pkg.c", "c"))}
    got = {(i.target, i.name) for i in imports(known["pkg.a"], known)}
    assert got == {("pkg.b", "g"), ("pkg.c", None)}
    assert private_attributes(known["pkg.a"], known) == ["pkg.a imports pkg.c._hidden"]
    edges = {n: {i.target for i in imports(m, known)} for n, m in known.items()}
    assert cycles(edges) == [["pkg.a", "pkg.b"]]


def test_the_laws_list_every_marked_law() -> None:
    """conformance.laws.LAWS is the explicit list of the laws that run: every function a
    theme module marks with @law is on it, once, and nothing else is."""
    from dsh_conformance import laws

    marked = [fn for theme in laws.THEMES for fn in vars(theme).values()
              if callable(fn) and getattr(fn, "is_law", False) and fn.__module__ == theme.__name__]
    assert sorted(fn.__qualname__ for fn in laws.LAWS) == sorted(fn.__qualname__ for fn in marked)
    assert len(set(laws.LAWS)) == len(laws.LAWS)


class _Findings:
    """A pyflakes reporter that keeps what it is told."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def unexpectedError(self, filename: str, message: str) -> None:
        self.lines.append(f"{filename}: {message}")

    def syntaxError(self, filename: str, message: str, lineno: int, offset: int, text: str) -> None:
        self.lines.append(f"{filename}:{lineno}: {message}")

    def flake(self, message: object) -> None:
        self.lines.append(str(message))


def pyflakes_findings(paths: list[Path]) -> list[str]:
    from pyflakes.api import checkPath

    found = _Findings()
    for path in paths:
        checkPath(str(path), found)
    return found.lines


def test_every_subpackage_has_a_layer() -> None:
    """A new subpackage of the suite is given its place in LAYERS (else it would count as the
    command line's and could import anything)."""
    folders = {p.name for p in (ROOT / "conformance").iterdir() if (p / "__init__.py").is_file()}
    assert folders == SUBPACKAGES - {"kit", "oracle", "tools"}


def test_the_layer_check_sees_an_upward_import() -> None:
    assert layer_of("dsh_conformance.judge.compare") < layer_of("dsh_conformance.running.runner")
    assert layer_of("dsh_conformance.cli") == len(LAYERS) - 1
    assert layer_of("dsh_conformance.argtypes") == 2
    assert layer_of("dsh_conformance.kit.trace") == 0


def test_pyflakes_finds_nothing() -> None:
    paths = [m.path for m in modules().values()]
    assert len(paths) > 100  # the whole package: conformance, oracle, tools
    assert pyflakes_findings(paths) == []


def test_pyflakes_check_sees_an_unused_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import json\nfrom typing import Any\n\n\ndef f(x: Any) -> Any:\n    return undefined_name\n")
    got = pyflakes_findings([module])
    assert any("'json' imported but unused" in line for line in got), got
    assert any("undefined name 'undefined_name'" in line for line in got), got


README = ROOT / "docs" / "reference" / "modules.md"  # moved out of the README (issue 44)
FOLDERS = ("kit", "oracle", "conformance", "tools")


def readme_modules() -> dict[str, set[str]]:
    """The names in the first column of each folder's table under "## Module by module":
    files (``x.py``) and folders (``x/``) of that folder."""
    import re

    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Module by module", 1)[1].split("\n## ", 1)[0]
    out: dict[str, set[str]] = {}
    folder = None
    for line in section.splitlines():
        heading = re.match(r"^`(\w+)/`", line)
        if heading:
            folder = heading.group(1)
            out[folder] = set()
        elif folder and line.startswith("| `"):
            first = line.split(" | ", 1)[0]
            out[folder] |= set(re.findall(r"`([^`]+)`", first))
    return out


def test_the_readme_lists_every_module() -> None:
    listed = readme_modules()
    assert sorted(listed) == sorted(FOLDERS)
    for folder in FOLDERS:
        base = ROOT / folder
        missing = []
        for path in _sources(base):
            rel = path.relative_to(base).parts
            # a module of a subpackage is listed by its path; a folder entry (`x/`) only
            # covers a folder of data (the kit's, the oracle's and the tools' modules are flat)
            if "/".join(rel) not in listed[folder] and not (len(rel) == 1 and rel[0] in listed[folder]):
                missing.append("/".join(rel))
        gone = sorted(n for n in listed[folder] if not (base / n.rstrip("/")).exists())
        assert not missing, f"docs/reference/modules.md, Module by module, {folder}/: add a line for {missing}"
        assert not gone, f"docs/reference/modules.md, Module by module, {folder}/: no such module any more: {gone}"


def _spelled_stage_lists(source: str) -> list[int]:
    """Lines of literals that spell out the pipeline's stage list: a tuple, list or set holding
    every stage of ``kit.trace.PIPELINE_STAGES``, or a dict ranking each of them."""
    from dsh_conformance.kit.trace import PIPELINE_STAGES

    every = set(PIPELINE_STAGES)
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        elif isinstance(node, ast.Dict):
            names = {k.value for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and isinstance(v.value, int)}
        else:
            continue
        if every <= names:
            out.append(node.lineno)
    return out


def test_the_stage_list_is_spelled_out_once() -> None:
    """Issue 39: the ordered list of a call's stages is ``kit.trace.PIPELINE_STAGES``; every
    other module reads it (a second list drifts from the first)."""
    found = {}
    for pkg in ("kit", "oracle", "conformance", "tools"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            lines = _spelled_stage_lists(path.read_text(encoding="utf-8"))
            if lines:
                found[path.relative_to(ROOT).as_posix()] = lines
    # kit/trace.py: PIPELINE_STAGES, and the vocabulary of every stage name an observation may carry
    assert set(found) == {"kit/trace.py"}, found


def test_the_stage_list_check_sees_a_second_list() -> None:
    assert _spelled_stage_lists('S = ("pre-execute", "approval", "guards", "execute", "body", "post-execute", '
                                '"finalize", "result")\n') == [1]
    assert _spelled_stage_lists('R = {"pre-execute": 1, "approval": 2, "guards": 3, "execute": 4, "body": 4, '
                                '"post-execute": 5, "finalize": 6, "result": 7}\n') == [1]
    assert _spelled_stage_lists('S = ("pre-execute", "approval")\n') == []


MAX_LOCAL_IMPORTS = 60  # issue 43: function-local imports only where they save start-up time


def function_local_imports(path: Path) -> list[tuple[int, bool]]:
    """Each import statement inside a function (not under TYPE_CHECKING) and whether a
    comment says why it is there: on its line, on the line of the first import of its run
    of imports, or on the line above that run."""
    text = path.read_text(encoding="utf-8")
    tree, lines = ast.parse(text), text.splitlines()
    skipped = _type_checking_only(tree)
    found: dict[int, ast.AST] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped:
                    found[id(node)] = node
    out = []
    for node in found.values():
        first = node.lineno - 1
        while first > 0 and lines[first - 1].strip().startswith(("import ", "from ")):
            first -= 1
        said = "#" in lines[node.lineno - 1] or "#" in lines[first] or (
            first > 0 and lines[first - 1].strip().startswith("#"))
        out.append((node.lineno, said))
    return out


def test_function_local_imports_are_few_and_each_says_why() -> None:
    every = {m.path: function_local_imports(m.path) for m in modules().values()}
    total = sum(len(v) for v in every.values())
    unexplained = [f"{p.relative_to(ROOT)}:{line}" for p, found in every.items() for line, said in found if not said]
    assert total < MAX_LOCAL_IMPORTS, f"{total} function-local imports (hoist them to the module's top)"
    assert not unexplained, f"a function-local import without a comment saying why: {unexplained}"


def test_the_local_import_check_sees_one_without_a_reason(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import json\n    return json\n\n\ndef g():\n    # lazy (start-up): heavy\n"
                      "    import csv\n    import re\n    return csv, re\n")
    assert sorted(function_local_imports(module)) == [(2, False), (8, True), (9, True)]


def test_the_wheel_lists_every_subpackage() -> None:
    """setuptools packages only what pyproject.toml names: a subpackage left out of the list
    is missing from the wheel (an installed suite fails to import it)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    folders = {"dsh_conformance." + p.name for p in (ROOT / "conformance").iterdir() if (p / "__init__.py").is_file()}
    assert folders <= listed, f"pyproject.toml [tool.setuptools] packages: add {sorted(folders - listed)}"


def test_the_readmes_tree_names_every_folder_and_subpackage() -> None:
    """The README's "The tree" table names each top-level folder of the package and each
    subpackage of the suite (the map a newcomer meets first), and nothing that is gone."""
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("\n## The tree\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([\w/]+/)`", table))
    wanted = {f"{f}/" for f in FOLDERS} | {f"conformance/{p.name}/" for p in (ROOT / "conformance").iterdir()
                                           if (p / "__init__.py").is_file()}
    assert wanted <= named, f"README.md, The tree: add {sorted(wanted - named)}"
    gone = sorted(n for n in named if not (ROOT / n).is_dir())
    assert not gone, f"README.md, The tree: no such folder any more: {gone}"
