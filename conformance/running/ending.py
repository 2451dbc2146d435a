"""The end of a run: its exit code, what its footer says (counts, rule outcomes, skips,
stale expectations, unscored profiles), and the exit codes themselves.

``RunEnd`` is a part of ``running.runner.Runner``: it reads the runner's state (the records,
whether the IUT broke or was given up on, the expectations) and decides nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_conformance.reporting.report import CaseRecord, Footer, Outcome, ReportWriter, now, rule_outcomes
from dsh_conformance.reporting.scores import SCORED
from dsh_conformance.reporting.skips import footer_skips, too_many_skipped
from dsh_conformance.running.expectations import Expectations
from dsh_conformance.spec.rules import rules

if TYPE_CHECKING:
    from dsh_conformance.iut.connect import IUT

# 0: every case as expected; 1: an unexpected failure or error, stale expectations, or a
# profile the run was asked to score and did not; 2: a usage error; 3: the implementation is
# broken; 130: interrupted (Ctrl-C, SIGTERM).
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_BROKEN, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class RunEnd:
    """The end of a ``Runner``'s run (see the module's docstring)."""
    iut: IUT
    records: list[CaseRecord]
    expectations: Expectations
    writer: ReportWriter
    broken: bool
    gave_up: str | None
    max_failed: bool
    errors: int
    judged: int
    shard: bool
    left_out: frozenset[str]
    max_skipped: float | None
    required: set[str]
    finished: bool

    def exit_code(self) -> int:
        """3: the IUT is broken (crashed, hung, broke the protocol, was given up on, or
        errored on every case it was asked); 1: unexpected failures or errors, or stale
        expectations; 0 otherwise."""
        if self.broken or (self.gave_up and not self.max_failed) or (self.errors and not self.judged
                                           and any(r.outcome == Outcome.ERROR for r in self.records)):
            return EXIT_BROKEN
        unexpected = any(r.outcome in (Outcome.FAIL, Outcome.ERROR) for r in self.records)
        stale = self.stale(rules=not self.shard)
        # What only the whole run can say (a shard's cases may leave a profile unscored, or skip
        # more than its share) is merge's.
        whole = not self.shard and (self.unscored_profiles() or self.nothing_scored() or self.too_many_skipped())
        return EXIT_FAIL if unexpected or stale or whole else EXIT_OK

    def stale(self, rules: bool = True) -> list[str]:
        """The listed entries this run shows gone (``Expectations.stale``), judged only where
        its selection covered them (``left_out``)."""
        return self.expectations.stale(self.records, rules, self.left_out)

    def too_many_skipped(self) -> str | None:
        """Why the run skipped more than ``--max-skipped`` allows, or None."""
        return too_many_skipped(self.records, self.max_skipped)

    def nothing_scored(self) -> bool:
        """Whether every case was left unscored (each needs a profile the run does not
        check): such a run checked nothing, and does not exit 0 (pytest's "no tests ran").
        A case the implementation skipped is its answer, and counts as one."""
        return bool(self.records) and all(r.outcome == Outcome.NOT_SCORED for r in self.records)

    def unscored_profiles(self) -> dict[str, str]:
        """Each profile the run was asked to score and scored no rule of, with why."""
        outcomes = rule_outcomes(self.records)
        supported = self.iut.started.profiles if self.iut.started else []
        out = {}
        for profile in sorted(self.required):
            if any(outcomes.get(r.id) in SCORED for r in rules().values() if r.profile == profile):
                continue
            out[profile] = (f"the implementation does not support it (it supports {', '.join(supported)})"
                            if profile not in supported else "no case of the run decided one (skipped, or no case)")
        return out

    def finish(self, code: int | None = None, stopped: str | None = None) -> Footer:
        counts: dict[str, int] = {}
        for r in self.records:
            counts[r.outcome.value] = counts.get(r.outcome.value, 0) + 1
        footer = Footer(counts=counts, rules=rule_outcomes(self.records), skipped=footer_skips(self.records),
                        too_many_skipped=None if self.shard else self.too_many_skipped(),
                        stale=self.stale(), unscored=sorted(self.unscored_profiles()),
                        exit=self.exit_code() if code is None else code, finished=now(),
                        stopped=stopped or self.gave_up, listed=self.expectations.listed() if self.shard else None)
        self.writer.write(footer)
        self.finished = True
        return footer
