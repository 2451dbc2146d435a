"""No dead code (issue 43): every top-level name, function, class, method, attribute and
variable of the package is used, found with vulture over the package, its tests and
examples, with ``tests/dead_code_allowed.py`` naming what only a framework uses (each group
says who). Dead code is deleted, not documented."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from vulture import Vulture

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ("conformance", "kit", "oracle", "tools")
MIN_CONFIDENCE = 60  # vulture's default: unused imports, functions, classes, variables, attributes


def unused(paths: list[Path], min_confidence: int = MIN_CONFIDENCE) -> list[str]:
    v = Vulture()
    v.scavenge([str(p) for p in paths], exclude=["*/node_modules/*"])
    return [f"{Path(item.filename).resolve().relative_to(ROOT) if Path(item.filename).resolve().is_relative_to(ROOT) else item.filename}:"
            f"{item.first_lineno}: {item.message}" for item in v.get_unused_code(min_confidence=min_confidence)]


def test_the_package_has_no_dead_code() -> None:
    found = unused([*(ROOT / p for p in PACKAGE), ROOT / "tests", ROOT / "examples", ROOT / "tests" / "dead_code_allowed.py"])
    dead = [line for line in found if line.split("/", 1)[0] in PACKAGE]
    assert not dead, "delete it (or, if a framework uses it, add it to tests/dead_code_allowed.py with who):\n" + "\n".join(dead)


def test_the_check_sees_a_dead_function(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def used():\n    return 1\n\n\ndef dead():\n    return 2\n\n\nprint(used())\n")
    found = unused([tmp_path])
    assert any("unused function 'dead'" in line for line in found) and not any("'used'" in line for line in found)


# vulture counts a name as used wherever the same name is read, so a constant defined again in
# a second module (a copy left behind when a text moved) looks used through the first. This
# check resolves imports: a module's constant is used only when its own module reads it, or
# another file imports it from that module (by name, or as an attribute of the module).
# The folders of the package and their module names, as the build maps them.
PACKAGE_DIRS = {folder: module for module, folder in tomllib.loads(
    (ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"].items()}


def _module(path: Path, root: Path, dirs: dict[str, str]) -> str:
    rel = path.relative_to(root)
    parts = [dirs.get(rel.parts[0], rel.parts[0]), *rel.parts[1:-1]]
    return ".".join(parts if rel.stem == "__init__" else [*parts, rel.stem])


def unread_constants(root: Path, dirs: dict[str, str], readers: list[Path]) -> list[str]:
    """``path:line NAME`` of each upper-case module constant under ``dirs`` that neither its
    module nor any import of it from that module reads."""
    defined: dict[tuple[str, str], str] = {}
    read: set[tuple[str, str]] = set()
    own = [p for d in dirs for p in (root / d).rglob("*.py") if "node_modules" not in p.parts]
    for path in [*own, *readers]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = _module(path, root, dirs) if path in own else path.stem
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(max(node.level - 1, 0)):
                    base = base.rpartition(".")[0]
                source = ".".join(x for x in (base if node.level else "", node.module or "") if x)
                for alias in node.names:
                    read.add((source, alias.name))
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    aliases[alias.asname or alias.name] = alias.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                read.add((aliases[node.value.id], node.attr))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                read.add((module, node.id))
        if path in own:
            for node in tree.body:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
                for target in targets:
                    if isinstance(target, ast.Name) and target.id.lstrip("_").isupper():
                        defined[(module, target.id)] = f"{path.relative_to(root)}:{node.lineno} {target.id}"
    return sorted(where for key, where in defined.items() if key not in read)


def test_every_constant_is_read_from_the_module_that_defines_it() -> None:
    found = unread_constants(ROOT, PACKAGE_DIRS, sorted((ROOT / "tests").rglob("*.py")))
    assert not found, "delete it (a copy of a constant another module defines, or one nothing reads):\n" + "\n".join(found)


def test_the_constant_check_sees_a_copy_left_behind(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "texts.py").write_text('GREETING = "hi"\nFAREWELL = "bye"\n')
    (tmp_path / "pkg" / "old.py").write_text('GREETING = "hi"\n')
    (tmp_path / "pkg" / "use.py").write_text("from . import texts\nfrom .texts import FAREWELL\nprint(texts.GREETING, FAREWELL)\n")
    assert unread_constants(tmp_path, {"pkg": "pkg"}, []) == ["pkg/old.py:1 GREETING"]
