"""Generated catalogs: JSON Schemas of the project's own languages, and the rule index.

``generate()`` renders every catalog file in memory; ``write`` puts them in ``catalogs/``
and ``check`` compares them byte for byte with what is committed (the drift check).
Rendering is pure: the same code gives the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance import rules as rule_index
from oracle.scenario import scenario_json_schema
from oracle.trace import trace_json_schema

ROOT = Path(__file__).resolve().parent.parent
CATALOGS = ROOT / "catalogs"


def _dump(doc: dict) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def generate() -> dict[Path, str]:
    """Every generated file and its text."""
    out = {
        CATALOGS / "scenario.schema.json": _dump(scenario_json_schema()),
        CATALOGS / "trace.schema.json": _dump(trace_json_schema()),
    }
    if rule_index.SPEC_RULES.is_file():
        # The project's copy of the rule index follows the spec whenever the spec is at hand.
        out[rule_index.INDEX] = rule_index.dumps_index(rule_index.index_from_spec())
    return out


def write() -> list[Path]:
    changed = []
    for path, text in generate().items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def check() -> list[str]:
    """The stale or missing generated files, as messages (empty when all are fresh)."""
    problems = []
    for path, text in generate().items():
        rel = path.relative_to(ROOT)
        if not path.is_file():
            problems.append(f"{rel}: missing; run `dsh-conformance catalogs generate`")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{rel}: stale; run `dsh-conformance catalogs generate`")
    return problems
