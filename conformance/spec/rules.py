"""The rule index (ids, profiles, titles) of the spec, as the project keeps it.

``rules.json`` is a copy of ``../shared/spec/rules.yaml`` reduced to what the suite needs,
so that rule checks also run in a user's clone where ``../shared`` is absent. A test
keeps the copy in step with the spec when the spec is present
(``dsh-conformance catalogs generate`` rewrites it).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import NamedTuple

from dsh_conformance.resources import SHARED, SUITE

INDEX = SUITE / "rules.json"
SPEC_RULES = SHARED / "spec" / "rules.yaml" if SHARED is not None else SUITE / "no-shared-spec"
PROFILES = ("core", "reference", "loop", "code-mode")
ORACLE_PROFILES = PROFILES  # the oracle implements every profile


class Rule(NamedTuple):
    # A named tuple, and json imported when the index is read: the command line's grammar
    # imports this module for PROFILES, and ``--help`` should not pay for dataclasses
    # (inspect, ast) or the JSON decoder.
    id: str
    profile: str
    title: str


@cache
def rules() -> dict[str, Rule]:
    # lazy (start-up): the command line's grammar imports this module for PROFILES (--help)
    import json

    data = json.loads(INDEX.read_text(encoding="utf-8"))
    return {r["id"]: Rule(r["id"], r["profile"], r["title"]) for r in data["rules"]}


def rules_of(*profiles: str) -> list[Rule]:
    return [r for r in rules().values() if r.profile in profiles]


def profiles_needed(rule_ids: list[str]) -> set[str]:
    """The profiles a test citing ``rule_ids`` needs (section 2: a profile needs core)."""
    out = {rules()[r].profile for r in rule_ids}
    if out - {"core"}:
        out.add("core")
    return out


def index_from_spec(path: Path = SPEC_RULES) -> dict:
    # lazy (start-up): only the catalogs' generator reads the spec
    import yaml

    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {"source": "shared/spec/rules.yaml",
            "rules": [{"id": e["id"], "profile": e["profile"], "title": e["title"]} for e in entries]}


def dumps_index(index: dict) -> str:
    # lazy (start-up), as rules()
    import json

    return json.dumps(index, ensure_ascii=False, indent=1) + "\n"
