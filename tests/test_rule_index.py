"""Every rule of the profiles the oracle implements is cited by some test, and the
project's copy of the rule index agrees with the spec."""

from __future__ import annotations

import pytest

from dsh_conformance.spec.rules import ORACLE_PROFILES, dumps_index, index_from_spec, INDEX, rules, rules_of

from .conftest import CITED, whole_suite_collected


def test_every_rule_is_cited_by_a_test():
    if not whole_suite_collected():
        pytest.skip("only part of the test suite was collected")
    missing = [r.id for r in rules_of(*ORACLE_PROFILES) if r.id not in CITED]
    assert missing == [], f"rules of {ORACLE_PROFILES} that no test cites: {missing}"


def test_citations_name_known_rules():
    unknown = sorted(CITED - set(rules()))
    assert unknown == []


def test_index_matches_the_spec(shared):
    assert INDEX.read_text(encoding="utf-8") == dumps_index(index_from_spec(shared / "spec" / "rules.yaml"))


def test_index_profiles():
    counts = {p: len(rules_of(p)) for p in ("core", "reference", "loop", "code-mode")}
    assert sum(counts.values()) == len(rules()) and all(counts.values())
