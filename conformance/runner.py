"""Running cases against an implementation under test and deciding their outcomes.

For each case the runner computes the oracle's trace in-process, asks the IUT for its
own, compares the two under the case's profiles (``conformance.compare``), checks the
oracle-independent invariants on the IUT's trace (``conformance.invariants``), and applies
the expectations. Every decided case is written to the report at once. A crashed or hung
IUT is restarted and the run goes on.

Property runs generate scenarios with hypothesis; the first failing one is shrunk to a
minimal case and saved as a replayable case file.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracle import Scenario, jsontext, parse_scenario, run_scenario
from oracle.trace import Trace

from .compare import digest, first_divergence
from .expectations import Expectations
from .iut import InProcessIUT, IUTFailure, ProcessIUT
from .protocol import Errored, Skipped
from .report import BROKEN, CaseRecord, Footer, Outcome, ReportWriter, now, rule_outcomes
from .rules import profiles_needed

IUT = ProcessIUT | InProcessIUT

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_BROKEN = 0, 1, 2, 3
_IUT_KIND = {"timeout": Outcome.TIMEOUT, "invalid": Outcome.INVALID}


def _invariants(scenario: Scenario, trace: Trace) -> list[dict[str, str]]:
    try:
        from .invariants import check
    except ImportError:  # the invariants module is optional while it is being written
        return []
    return [{"rule": v.rule, "message": v.message} for v in check(scenario, trace)]


@dataclass
class Progress:
    """A one-line progress display on a terminal; silent otherwise."""

    total: int
    stream: Any = sys.stderr
    done: int = 0
    enabled: bool = field(default=False)

    def __post_init__(self) -> None:
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())

    def step(self, label: str, outcome: Outcome) -> None:
        self.done += 1
        if self.enabled:
            self.stream.write(f"\r\x1b[K[{self.done}/{self.total}] {outcome.value:<13} {label[:60]}")
            self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


class Runner:
    def __init__(self, iut: IUT, profiles: set[str], expectations: Expectations | None = None,
                 writer: ReportWriter | None = None, failures_dir: Path | None = None) -> None:
        self.iut = iut
        started = iut.started
        assert started is not None, "start the IUT first"
        self.iut_profiles = set(started.profiles) & profiles
        self.expectations = expectations or Expectations()
        self.writer = writer or ReportWriter(None)
        self.failures_dir = failures_dir
        self.records: list[CaseRecord] = []
        self.seq = 0
        self.broken = False  # the IUT crashed, hung or broke the protocol at least once
        self.last: tuple[Trace, Trace, set[str]] | None = None  # (oracle's, IUT's, profiles) of the latest trace

    # ------------------------------------------------------------------ one case

    def decide(self, case_id: str, doc: dict[str, Any], source: str, case_file: str | None = None,
               scenario: Scenario | None = None) -> CaseRecord:
        """Run one scenario document against the IUT and decide its outcome (not recorded)."""
        t0 = time.monotonic()
        scenario = scenario or parse_scenario(doc)
        rules = list(scenario.rules)
        needed = profiles_needed(rules) if rules else {"core"}
        base = {"id": case_id, "source": source, "rules": rules, "case_file": case_file}
        if not needed <= self.iut_profiles:
            missing = ", ".join(sorted(needed - self.iut_profiles))
            return CaseRecord(**base, outcome=Outcome.NOT_SCORED, message=f"needs profile {missing}")
        expected = run_scenario(scenario)
        self.seq += 1
        try:
            answer = self.iut.run(self.seq, doc)
        except IUTFailure as e:
            self.broken = True
            outcome = _IUT_KIND.get(e.kind, Outcome.ERROR)
            if e.restart:
                self._restart()
            message = f"{e.kind}: {e.message}" + (f"\nstderr:\n{e.stderr}" if e.stderr else "")
            return CaseRecord(**base, outcome=outcome, message=message, duration_ms=_ms(t0))
        if isinstance(answer, Skipped):
            return CaseRecord(**base, outcome=Outcome.SKIP, message=answer.reason, duration_ms=_ms(t0))
        if isinstance(answer, Errored):
            return CaseRecord(**base, outcome=Outcome.ERROR, message=answer.message, duration_ms=_ms(t0))
        self.last = (expected, answer.trace, needed)
        base["trace_digest"] = digest(answer.trace)
        divergence = first_divergence(expected, answer.trace, needed)
        violations = _invariants(scenario, answer.trace)
        if divergence is None and not violations:
            return CaseRecord(**base, outcome=Outcome.PASS, duration_ms=_ms(t0))
        # A divergence without rules of its own (a different final outcome) is put down to the
        # rules the case cites; broken invariants name theirs.
        blamed = (divergence.rules or rules) if divergence else []
        failing = list(dict.fromkeys([*blamed, *(v["rule"] for v in violations)])) or rules
        reason = self.expectations.reason(case_id, failing)
        return CaseRecord(**base, outcome=Outcome.XFAIL if reason else Outcome.FAIL, failing_rules=failing,
                          divergence=divergence.to_json() if divergence else None, violations=violations,
                          expected_reason=reason, duration_ms=_ms(t0),
                          message=divergence.describe() if divergence else violations[0]["message"])

    def record(self, rec: CaseRecord) -> CaseRecord:
        self.records.append(rec)
        self.writer.write(rec)
        return rec

    def _restart(self) -> None:
        try:
            self.iut.restart()
        except IUTFailure:
            pass  # the next run tries again; each case that cannot run is recorded as such

    # ------------------------------------------------------------------ the corpus

    def run_cases(self, cases: Iterable[tuple[str, dict[str, Any], str | None]], progress: Progress | None = None) -> None:
        for case_id, doc, path in cases:
            rec = self.record(self.decide(case_id, doc, "corpus", path))
            if progress:
                progress.step(case_id, rec.outcome)

    # ------------------------------------------------------------------ properties

    def run_properties(self, examples: int, seed: int, profiles: frozenset[str],
                       progress: Callable[[int], None] | None = None) -> CaseRecord | None:
        """Generate ``examples`` scenarios; shrink the first unexpected failure and record it."""
        from hypothesis import HealthCheck, find, settings
        from hypothesis.errors import NoSuchExample
        import random

        from .strategies import scenarios

        count = 0

        def fails(doc: dict[str, Any]) -> bool:
            nonlocal count
            count += 1
            if progress:
                progress(count)
            rec = self.decide("generated", doc, "property")
            return rec.outcome in (Outcome.FAIL, *BROKEN)

        cfg = settings(max_examples=examples, database=None, deadline=None,
                       suppress_health_check=list(HealthCheck))
        t0 = time.monotonic()
        try:
            minimal = find(scenarios(profiles), fails, settings=cfg, random=random.Random(seed))
        except NoSuchExample:
            return self.record(CaseRecord(
                id=f"generated-seed-{seed}", source="property", rules=[], outcome=Outcome.PASS,
                message=f"{count} generated scenarios, no unexpected failure", duration_ms=_ms(t0)))
        case_id = "prop-" + hashlib.sha256(json.dumps(minimal, sort_keys=True).encode()).hexdigest()[:12]
        doc = {**minimal, "id": case_id, "title": "shrunk counterexample of a property run", "seed": seed}
        path = self._save(case_id, doc)
        return self.record(self.decide(case_id, doc, "property", path))

    def _save(self, case_id: str, doc: dict[str, Any]) -> str | None:
        """Write a failing example as a case file that ``dsh-conformance replay`` re-runs."""
        if self.failures_dir is None:
            return None
        self.failures_dir.mkdir(parents=True, exist_ok=True)
        path = self.failures_dir / f"{case_id}.json"
        path.write_text(jsontext.dumps(doc, indent=1) + "\n", encoding="utf-8")
        return str(path)

    # ------------------------------------------------------------------ the end

    def finish(self) -> Footer:
        counts: dict[str, int] = {}
        for r in self.records:
            counts[r.outcome.value] = counts.get(r.outcome.value, 0) + 1
        stale = self.expectations.stale(self.records)
        failed = any(r.outcome == Outcome.FAIL for r in self.records) or bool(stale)
        code = EXIT_BROKEN if self.broken else (EXIT_FAIL if failed else EXIT_OK)
        footer = Footer(counts=counts, rules=rule_outcomes(self.records),
                        stale=stale, exit=code, finished=now())
        self.writer.write(footer)
        return footer


def _ms(t0: float) -> int:
    return int((time.monotonic() - t0) * 1000)


def corpus_items(directory: Path) -> list[tuple[str, dict[str, Any], str]]:
    """The corpus as (id, document, path) for the runner."""
    from .corpus import load_case

    items = []
    for path in sorted(directory.glob("*.json")):
        case = load_case(path)  # validates the id, the rules and the scenario
        items.append((case.id, json.loads(path.read_text(encoding="utf-8")), str(path)))
    return items


__all__ = ["Runner", "Progress", "corpus_items", "EXIT_OK", "EXIT_FAIL", "EXIT_USAGE", "EXIT_BROKEN"]
