"""The rules' statements and the spec sections they sit in, for reports that show them.

Read from the spec (``../shared/spec/pipeline.md``, section 5: ``### 5.x`` sections and
``#### P<n> · profile · title`` rules) when it is beside the clone; else from the
project's copy, ``rule_statements.json``, which ``dsh-conformance catalogs generate``
rewrites from the spec and a test keeps in step, like the rule index (``rules.json``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dsh_conformance.resources import SHARED, SUITE

STATEMENTS = SUITE / "rule_statements.json"
SPEC_TEXT = SHARED / "spec" / "pipeline.md" if SHARED is not None else SUITE / "no-shared-spec"

_RULE = re.compile(r"^#### (P\d+) · ([\w-]+) · (.+)$")
_SECTION = re.compile(r"^### (5\.\d+ .+)$")


@dataclass(frozen=True)
class Statement:
    id: str
    section: str  # "5.6 Monotonic guards", as the spec's heading reads (Markdown)
    text: str  # the rule's body in Markdown: statement, notes, and its Seed/Upstream line


class RuleTextError(ValueError):
    pass


def statements_from_spec(path: Path = SPEC_TEXT) -> dict:
    """The statements of section 5 of the spec, as the committed copy holds them."""
    out: list[dict[str, str]] = []
    section: str | None = None
    current: dict[str, str] | None = None
    body: list[str] = []
    in_rules = False

    def close() -> None:
        if current is not None:
            current["text"] = "\n".join(body).strip() + "\n"
            out.append(current)

    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("## "):
            close()
            current, body = None, []
            in_rules = line.startswith("## 5.")
            continue
        if not in_rules:
            continue
        if m := _SECTION.match(line):
            close()
            current, body, section = None, [], m.group(1)
        elif m := _RULE.match(line):
            close()
            if section is None:
                raise RuleTextError(f"{path}:{n}: rule {m.group(1)} outside a 5.x section")
            current, body = {"id": m.group(1), "section": section}, []
        elif line.startswith("#"):
            close()
            current, body = None, []
        elif current is not None:
            body.append(line)
    close()
    return {"source": "shared/spec/pipeline.md", "rules": out}


def dumps_statements(doc: dict) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


@cache
def statements() -> dict[str, Statement]:
    """Every rule's statement: from the spec when present, else from the project's copy."""
    doc = statements_from_spec() if SPEC_TEXT.is_file() else json.loads(STATEMENTS.read_text(encoding="utf-8"))
    return {r["id"]: Statement(r["id"], r["section"], r["text"]) for r in doc["rules"]}


def section_of(rule_id: str) -> str:
    s = statements().get(rule_id)
    return s.section if s else "other rules"


__all__ = ["Statement", "statements", "section_of", "statements_from_spec", "dumps_statements", "STATEMENTS"]
