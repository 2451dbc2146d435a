"""The counts every view shows, each defined once and labelled the same in the console,
the Markdown, HTML and JSON reports and the badges.

Per rule (``rule_counts``):

- **citing**: the cases that cite the rule (its ``rules``);
- of those, how many ended in each outcome;
- **blamed**: the cases that did not pass and whose failure or error is put down to the
  rule (their ``failing_rules``: the first divergence's and broken invariants' rules; a
  case without any, every rule it cites). A case can be blamed on a rule it does not cite
  (a divergence in another rule's stage), so *blamed* may exceed *citing*.

Per run (``case_totals``): the cases, and what they are made of: the corpus cases, and the
generated draws, which are folded: the draws of a run are judged one by one but recorded as
one case (``generated-seed-N``: a pass when at least one draw passed and none failed), plus
one case for each draw recorded on its own (a shrunk counterexample, a draw that ended in
an error, a timeout or a crash).

A report's **score** per profile: how many of the profile's scored rules pass.

A rule is *scored* when the run decided it: its outcome (``report.rule_outcomes``) is a
pass, a failure (expected or not) or a broken case. Rules without a case, skipped, not
scored (a profile the implementation does not support), inconclusive (every case citing
them failed first on another rule) or not run (the run stopped early, ``--max-fail``, before
it decided them) are left out, as a ``-k`` selection leaves out the rules it does not run:
a stopped run's score is of what it decided, and its exit code and STOPPED line say that it
stopped (issue 44). An expected failure or error does not pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import Any

from dsh_conformance.reporting.report import BROKEN, INCONCLUSIVE, CaseRecord, Outcome, Report, rule_outcomes
from dsh_conformance.spec.rules import PROFILES, rules

# The labels, one per count, wherever it is shown.
CITING = "citing"
BLAMED = "blamed"
SCORE = "rules passing / scored"
LEGEND = f"{CITING}: cases that cite the rule; {BLAMED}: cases that did not pass, put down to the rule"
BLAMABLE = frozenset({Outcome.FAIL, Outcome.XFAIL, Outcome.XERROR, *BROKEN})  # outcomes a case is blamed for

SCORED = frozenset({Outcome.PASS.value, Outcome.FAIL.value, Outcome.XFAIL.value, Outcome.ERROR.value,
                    Outcome.TIMEOUT.value, Outcome.INVALID.value, Outcome.XERROR.value})
assert INCONCLUSIVE not in SCORED


@dataclass(frozen=True)
class Score:
    profile: str  # a profile, or "all" for the profiles together
    passing: int
    scored: int

    @property
    def ratio(self) -> float:
        return self.passing / self.scored if self.scored else 0.0

    def __str__(self) -> str:
        return f"{self.passing}/{self.scored}"


@dataclass(frozen=True)
class RuleCount:
    citing: int
    outcomes: dict[str, int]  # of the cases citing the rule, how many ended in each outcome
    blamed: int

    def to_json(self) -> dict[str, Any]:
        return {CITING: self.citing, "outcomes": dict(sorted(self.outcomes.items())), BLAMED: self.blamed}

    def words(self) -> str:
        """``9 citing, 15 blamed`` (blamed only when some case is)."""
        return f"{self.citing} {CITING}" + (f", {self.blamed} {BLAMED}" if self.blamed else "")


NO_COUNT = RuleCount(0, {}, 0)


def blamed_cases(cases: list[CaseRecord]) -> dict[str, list[CaseRecord]]:
    """Each rule's blamed cases, in the report's order."""
    out: dict[str, list[CaseRecord]] = {}
    for c in cases:
        if c.outcome in BLAMABLE:
            for rule in (c.failing_rules or c.rules):
                out.setdefault(rule, []).append(c)
    return out


def rule_counts(cases: list[CaseRecord]) -> dict[str, RuleCount]:
    """The counts of each rule that a case cites or is blamed on."""
    citing: dict[str, dict[str, int]] = {}
    for c in cases:
        for rule in c.rules:
            by = citing.setdefault(rule, {})
            by[c.outcome.value] = by.get(c.outcome.value, 0) + 1
    blamed = blamed_cases(cases)
    return {r: RuleCount(sum(citing.get(r, {}).values()), citing.get(r, {}), len(blamed.get(r, [])))
            for r in [*citing, *(r for r in blamed if r not in citing)]}


@dataclass(frozen=True)
class CaseTotals:
    cases: int
    corpus: int
    generated: int  # cases that hold generated draws (folded, or recorded on their own)
    draws: int  # generated draws judged
    replayed: int = 0

    def __str__(self) -> str:
        """``272 cases (271 corpus cases + 1 case for 100 generated draws)``; plain ``9 cases``
        when every case is a corpus case."""
        head = f"{self.cases} case{'s' * (self.cases != 1)}"
        if not self.generated and not self.replayed:
            return head
        parts = [f"{self.corpus} corpus case{'s' * (self.corpus != 1)}"] if self.corpus else []
        if self.generated:
            parts.append(f"{self.generated} case{'s' * (self.generated != 1)} for {self.draws} generated "
                         f"draw{'s' * (self.draws != 1)}")
        if self.replayed:
            parts.append(f"{self.replayed} replayed")
        return f"{head} ({' + '.join(parts)})"

    def to_json(self) -> dict[str, int]:
        return {"cases": self.cases, "corpus": self.corpus, "generated": self.generated, "draws": self.draws,
                "replayed": self.replayed}


def case_totals(cases: list[CaseRecord], examples: int = 0) -> CaseTotals:
    """What a run's cases are made of. ``examples``: the draws the run asked for, for a report
    written before cases said how many draws they fold."""
    generated = [c for c in cases if c.source == "property"]
    draws = sum(c.draws or 0 for c in generated)
    if generated and not any(c.draws is not None for c in generated):
        draws = examples
    return CaseTotals(len(cases), sum(c.source == "corpus" for c in cases), len(generated), draws,
                      sum(c.source == "replay" for c in cases))


def outcome_counts(cases: list[CaseRecord]) -> dict[str, int]:
    """How many cases ended in each outcome."""
    out: dict[str, int] = {}
    for c in cases:
        out[c.outcome.value] = out.get(c.outcome.value, 0) + 1
    return out


def scores(report: Report) -> list[Score]:
    """The score of each profile the run checked (in the spec's order), then ``all``."""
    return profile_scores(report.cases, set(report.header.profiles))


def profile_scores(cases: list[CaseRecord], profiles: set[str]) -> list[Score]:
    """``scores`` of a run's cases, for ``profiles``."""
    outcomes = rule_outcomes(cases)
    out = []
    for profile in PROFILES:
        if profile not in profiles:
            continue
        decided = [outcomes[r.id] for r in rules().values() if r.profile == profile and outcomes.get(r.id) in SCORED]
        out.append(Score(profile, decided.count(Outcome.PASS.value), len(decided)))
    out.append(Score("all", sum(s.passing for s in out), sum(s.scored for s in out)))
    return out


__all__ = ["Score", "scores", "SCORED", "SCORE", "CITING", "BLAMED", "LEGEND", "RuleCount", "rule_counts",
           "blamed_cases", "profile_scores", "CaseTotals", "case_totals", "outcome_counts", "NO_COUNT"]
