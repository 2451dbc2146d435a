"""docs/rule-reach.md, what the suite can say rule by rule, is current; what it lists as
inexpressible is the spec's own wording, each with a reason; and its generated counts are
the default run's own draws."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from dsh_conformance.tools import reach_page

pytestmark = pytest.mark.rules("P1")


def test_committed_page_is_current():
    text = reach_page.generate()[reach_page.PAGE]
    assert reach_page.PAGE.read_text(encoding="utf-8") == text, \
        "docs/rule-reach.md is stale: run `dsh-conformance docs generate` (make regen) and commit"


def test_every_rule_of_every_profile_has_a_row():
    from dsh_conformance.spec.rules import rules

    text = reach_page.PAGE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (P\d+) \|", text, flags=re.M)
    assert sorted(rows) == sorted(rules()) and len(rows) == len(set(rows))


def test_nothing_is_inexpressible_without_a_reason(tmp_path):
    bad = tmp_path / "gaps.yaml"
    bad.write_text("- rule: P22\n  sentence: The token differs.\n", encoding="utf-8")
    with pytest.raises(reach_page.InexpressibleError, match="reason is missing"):
        reach_page.load_gaps(bad)
    bad.write_text("- rule: P999\n  sentence: x\n  reason: y\n", encoding="utf-8")
    with pytest.raises(reach_page.InexpressibleError, match="no rule 'P999'"):
        reach_page.load_gaps(bad)


def test_listed_sentences_are_the_specs(shared):
    spec = " ".join((shared / "spec" / "pipeline.md").read_text(encoding="utf-8").split())
    for gap in reach_page.load_gaps():
        if gap.rule is not None:
            assert " ".join(gap.sentence.split()) in spec, f"{gap.rule}: not the spec's wording: {gap.sentence}"


def test_generated_counts_are_the_default_runs_draws(monkeypatch):
    # The page counts the scenarios Runner.run_properties draws: run both on a few examples.
    from dsh_conformance.iut.in_process import embedded_oracle
    from dsh_conformance.reporting.report import CaseRecord, Outcome
    from dsh_conformance.spec.rules import ORACLE_PROFILES
    from dsh_conformance.running.runner import Runner

    seen: list[list[str]] = []
    iut = embedded_oracle()
    iut.start()
    runner = Runner(iut, set(ORACLE_PROFILES))

    def decide(case_id, doc, source, *rest, **kw):
        seen.append(list(doc["rules"]))
        return CaseRecord(id=case_id, source=source, rules=doc["rules"], outcome=Outcome.PASS)
    monkeypatch.setattr(runner, "decide", decide)
    runner.run_properties(8, 0, frozenset(ORACLE_PROFILES))
    drawn, counts = reach_page.default_run_reach(examples=8)
    assert drawn == len(seen) == 8
    assert counts == sum((Counter(r) for r in seen), Counter())
