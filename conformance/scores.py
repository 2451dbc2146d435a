"""A report's score per profile: how many of the profile's scored rules pass.

A rule is *scored* when the run decided it: its outcome (``report.rule_outcomes``) is a
pass, a failure (expected or not) or a broken case. Rules without a case, skipped, not
scored (a profile the implementation does not support) or inconclusive (every case citing
them failed first on another rule) are left out. An expected failure or error does not
pass, nor does a rule whose cases were not run (the run stopped early): it was meant to be
decided.
"""

from __future__ import annotations

from dataclasses import dataclass

from .report import INCONCLUSIVE, Outcome, Report, rule_outcomes
from .rules import PROFILES, rules

SCORED = frozenset({Outcome.PASS.value, Outcome.FAIL.value, Outcome.XFAIL.value, Outcome.ERROR.value,
                    Outcome.TIMEOUT.value, Outcome.INVALID.value, Outcome.XERROR.value, Outcome.NOT_RUN.value})
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


def scores(report: Report) -> list[Score]:
    """The score of each profile the run checked (in the spec's order), then ``all``."""
    outcomes = rule_outcomes(report.cases)
    out = []
    for profile in PROFILES:
        if profile not in report.header.profiles:
            continue
        decided = [outcomes[r.id] for r in rules().values() if r.profile == profile and outcomes.get(r.id) in SCORED]
        out.append(Score(profile, decided.count(Outcome.PASS.value), len(decided)))
    out.append(Score("all", sum(s.passing for s in out), sum(s.scored for s in out)))
    return out


__all__ = ["Score", "scores", "SCORED"]
