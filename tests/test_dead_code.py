"""No dead code (issue 43): every top-level name, function, class, method, attribute and
variable of the package is used, found with vulture over the package, its tests and
examples, with ``tests/dead_code_allowed.py`` naming what only a framework uses (each group
says who). Dead code is deleted, not documented."""

from __future__ import annotations

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
