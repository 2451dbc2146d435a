"""Running cases against an implementation under test and deciding their outcomes.

For each case the runner computes the oracle's trace in-process, asks the IUT for its
own, compares the two under the case's profiles (``conformance.compare``), checks the
oracle-independent invariants on the IUT's trace (``conformance.laws``), and applies
the expectations. Every decided case is written to the report at once. A crashed or hung
IUT is restarted and the run goes on, until ``give_up_after`` consecutive timeouts or
crashes declare it broken: the cases left are then recorded as ``not-run``.

Property runs generate scenarios with hypothesis; the first unexpected failure (a
divergence or a broken invariant) is shrunk to a minimal case and saved as a replayable
case file. Timeouts, crashes and errors are never shrunk: each generated scenario that
met one is recorded and saved as it was drawn.
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_conformance.oracle import Scenario, parse_scenario

from dsh_conformance.kit import jsontext
from dsh_conformance.kit.trace import Trace

from dsh_conformance.defaults import DEFAULT_GIVE_UP_AFTER
from dsh_conformance.iut.connection import HARD_FAILURES, IUTFailure
from dsh_conformance.iut.protocol import Errored, Skipped
from dsh_conformance.judge.compare import judge
from dsh_conformance.judge.masks import within
from dsh_conformance.laws import check
from dsh_conformance.reporting.evidence import evidence, kept_divergence, kept_message
from dsh_conformance.reporting.report import BROKEN, CaseRecord, Outcome, ReportWriter
from dsh_conformance.running import interrupts
from dsh_conformance.running.ending import RunEnd
from dsh_conformance.running.expectations import Expectations
from dsh_conformance.running.explained import explained, explained_error
from dsh_conformance.running.progress import Progress
from dsh_conformance.running.properties import run_properties
from dsh_conformance.running.references import KeptReference, document_text, kept, key_of, parsed_reference
from dsh_conformance.spec.situations import needs
from dsh_conformance.textio.outputs import Ledger, OutputWriteError, holds, write_atomic
from dsh_conformance.textio.portable import portable_path, scrub

if TYPE_CHECKING:
    from dsh_conformance.iut.connect import IUT

_IUT_KIND = {"timeout": Outcome.TIMEOUT, "invalid": Outcome.INVALID}
UNEXPECTED = frozenset({Outcome.FAIL, *BROKEN})  # what --max-fail counts


def _invariants(scenario: Scenario, trace: Trace) -> list[dict[str, str]]:
    return [{"rule": v.rule, "message": v.message} for v in check(scenario, trace)]


@dataclass
class _Case:
    """A case between asking the IUT and judging its answer."""
    id: str
    doc: dict[str, Any]
    source: str
    scenario: Scenario
    expected: Trace
    needed: set[str]
    base: dict[str, Any]
    t0: float
    seq: int | None = None  # the run it was sent as (None: not sent yet, or the send failed)
    generation: int = 0  # of the IUT process it was sent to
    failure: IUTFailure | None = None  # sending it failed, and the failure is its own
    size: int = 0  # bytes of the document's JSON text (the reference's key is made from the same text)
    text: str = ""  # the document's JSON text: the run message is spliced from it, not encoded again

    @property
    def small(self) -> bool:
        """Whether its run message surely fits in the IUT's input pipe beside others."""
        return self.size < _AHEAD_BYTES


# A case sent ahead waits in the IUT's input pipe while the IUT answers the ones before: only
# when all their messages surely fit (a pipe holds 64 KiB on Linux; a bigger one is sent when
# its turn comes, so that a write never waits on an answer before it). Up to _AHEAD cases
# wait beside the one being judged: the IUT has work queued while the suite judges a case
# that costs more than most (evidence of a divergence), and the suite has answers queued while
# the IUT runs a long case, so that a run goes at the pace of the slower side's mean, not of
# its worst cases (issue 25).
_AHEAD_BYTES = 16 * 1024  # one message
_AHEAD_TOTAL = 32 * 1024  # all the messages sent and not answered
_AHEAD = 2


class Runner(RunEnd):
    """Runs cases and generated scenarios against one implementation under test, records
    each decided case, and ends the run (``RunEnd``)."""

    def __init__(self, iut: IUT, profiles: set[str], expectations: Expectations | None = None,
                 writer: ReportWriter | None = None, failures_dir: Path | None = None,
                 give_up_after: int = DEFAULT_GIVE_UP_AFTER, required: set[str] | None = None,
                 max_fail: int = 0, max_skipped: float | None = None, shard: bool = False) -> None:
        self.iut = iut
        started = iut.started
        assert started is not None, "start the IUT first"
        self.iut_profiles = set(started.profiles) & profiles
        self.iut_features = frozenset(started.features)  # optional features it declares: what is drawn
        self.required = set(required or ())  # profiles the run must score (--profiles)
        self.expectations = expectations or Expectations()
        self.writer = writer or ReportWriter(None)
        self.failures_dir = failures_dir
        self.give_up_after = give_up_after
        self.max_fail = max_fail  # --max-fail: stop after this many unexpected failures (0: never)
        self.max_skipped = max_skipped  # --max-skipped: the share of skipped scenarios that fails the run
        self.shard = shard  # a shard of a run (--shard): a listed rule's staleness is merge's to say
        self.unexpected = 0  # unexpected failures and errors recorded
        self.max_failed = False  # the run stopped at --max-fail (a failure's exit, not a broken IUT's)
        self.records: list[CaseRecord] = []
        self.saved: list[tuple[str, str]] = []  # (what, path) of every case file written
        self.unsaved: list[str] = []  # why a case file could not be written (a full disk)
        self.ledger: Ledger | None = None  # the run's outputs, checked at its end (outputs.Ledger)
        self.left_out: frozenset[str] = frozenset()  # rules cited by corpus cases the selection left out
        self.seq = 0
        self.broken = False  # the IUT crashed, hung or broke the protocol at least once
        self.consecutive = 0  # timeouts and crashes in a row
        self.gave_up: str | None = None  # why the remaining cases are not run
        self.judged = 0  # cases whose answer was judged (pass or fail)
        self.errors = 0  # cases the IUT answered with an error
        self.last: tuple[Trace, Trace, set[str]] | None = None  # (oracle's, IUT's, profiles) of the latest trace
        self.finished = False  # the footer is written

    # ------------------------------------------------------------------ one case

    def decide(self, case_id: str, doc: dict[str, Any], source: str, case_file: str | None = None,
               scenario: Scenario | None = None, expected: "Trace | KeptReference | None" = None) -> CaseRecord:
        """Run one scenario document against the IUT and decide its outcome (not recorded).
        Raises ScenarioRunError when the oracle cannot run the scenario to an end."""
        case = self._prepare(case_id, doc, source, case_file, scenario, expected)
        return case if isinstance(case, CaseRecord) else self._answer(case)

    def _prepare(self, case_id: str, doc: dict[str, Any], source: str, case_file: str | None,
                 scenario: Scenario | None, expected: "Trace | KeptReference | None") -> "_Case | CaseRecord":
        """What the case needs before the IUT is asked, or its record when it is decided
        without asking (not run, not scored)."""
        interrupts.check()  # a safe point: a signal whose exception was swallowed ends the run here
        t0 = time.monotonic()
        # The document's text is encoded once a case: the reference's key and the message's
        # size (a kept reference holds both, made by expected_traces).
        key: str | None = None
        if isinstance(expected, KeptReference):  # read now, while the IUT works on the case before
            text, key = expected.text, expected.key
            expected = expected.resolve()
        else:
            text = document_text(doc)
        if scenario is None:
            # Parsed once, with its reference trace (expected_traces keeps both).
            held = kept(key or key_of(text))
            scenario, expected = (held[0], expected or held[1]) if held is not None else (parse_scenario(doc), expected)
        rules = list(scenario.rules)
        # The profiles of the rules it cites and of the situations it sets up (section 2):
        # a case aborting its caller is not scored for a core-only implementation.
        needed, features = needs({**doc, "rules": rules})
        base = {"id": case_id, "source": source, "rules": rules, "case_file": case_file}
        if self.gave_up:
            return CaseRecord(**base, outcome=Outcome.NOT_RUN, message=self.gave_up)
        if not needed <= self.iut_profiles:
            missing = ", ".join(sorted(needed - self.iut_profiles))
            return CaseRecord(**base, outcome=Outcome.NOT_SCORED, message=f"needs profile {missing}")
        if lacking := features - self.iut_features:
            # an optional feature the handshake does not declare: not sent, rather than skipped
            return CaseRecord(**base, outcome=Outcome.NOT_SCORED, message=f"needs feature {', '.join(sorted(lacking))}")
        if expected is None:
            expected = parsed_reference(doc, scenario, text)[1]
        return _Case(case_id, doc, source, scenario, expected, needed, base, t0, size=len(text.encode("utf-8")),
                     text=text)

    def _send(self, case: _Case) -> None:
        """Ask the IUT for the case's answer without waiting (a ProcessIUT reads it later, see
        run_cases). A failure to send is left to ``_answer``, which asks again."""
        pipeline = self.iut.pipeline
        assert pipeline is not None, "runs are sent ahead only to an IUT that takes them"
        self.seq += 1
        case.seq = self.seq
        first = not pipeline.pending
        try:
            pipeline.submit(case.seq, case.doc, case.text)
        except IUTFailure as e:
            case.seq = None
            if first:  # nothing was waiting before it: the failure is its own
                case.failure = e
            return
        case.generation = pipeline.generation

    def _fits_ahead(self, waiting: collections.deque[_Case], case: _Case) -> bool:
        """Whether ``case`` may be sent before the answers to ``waiting`` are judged: each of
        those went to the process running now (the IUT answers in the order it was sent
        runs), and all their messages with its own surely fit in the IUT's input pipe."""
        if not waiting:
            return True
        return (case.small and all(w.small and self._in_flight(w) for w in waiting)
                and sum(w.size for w in waiting) + case.size < _AHEAD_TOTAL)

    def _in_flight(self, case: _Case) -> bool:
        """Whether the case was sent to the IUT process running now (its answer is coming)."""
        pipeline = self.iut.pipeline
        return case.seq is not None and pipeline is not None and case.generation == pipeline.generation

    def _answer(self, case: _Case) -> CaseRecord:
        """The IUT's answer to the case, judged. A case sent ahead to a process that has been
        replaced since (another case's failure restarted it) is asked again."""
        base, t0, doc = case.base, case.t0, case.doc
        if self.gave_up:
            return CaseRecord(**base, outcome=Outcome.NOT_RUN, message=self.gave_up)
        if case.failure is not None:
            return self._iut_failed(case.failure, base, t0, doc)
        try:
            pipeline = self.iut.pipeline
            if self._in_flight(case):
                assert pipeline is not None and case.seq is not None
                answer = pipeline.collect(case.seq)
            else:
                self.seq += 1
                answer = self.iut.run(self.seq, doc)
        except IUTFailure as e:
            return self._iut_failed(e, base, t0, doc)
        self.consecutive = 0
        if isinstance(answer, Skipped):
            return CaseRecord(**base, outcome=Outcome.SKIP, message=kept_message(answer.reason), duration_ms=_ms(t0))
        if isinstance(answer, Errored):
            self.errors += 1
            reason = self.expectations.error_reason(case.id) or explained_error(
                self.expectations, case.scenario, answer.message)
            return CaseRecord(**base, outcome=Outcome.XERROR if reason else Outcome.ERROR,
                              message=kept_message(answer.message),
                              expected_reason=reason, duration_ms=_ms(t0), **evidence(doc, case.source))
        # Compared under the run's checked profiles, not the case's (spec section 2): what only
        # a checked profile's rule fixes is compared in every scored case, the rest is masked.
        expected, checked, rules = case.expected, set(self.iut_profiles), base["rules"]
        try:
            divergence, trace_digest = judge(expected, answer.trace, checked)
            # Laws of an unchecked profile's rules have no say in this verdict either.
            violations = [v for v in _invariants(case.scenario, answer.trace) if within([v["rule"]], checked)]
        except Exception as e:  # noqa: BLE001 - an answer the comparison cannot take is not judged
            self.errors += 1
            return CaseRecord(**base, outcome=Outcome.ERROR, duration_ms=_ms(t0),
                              message=f"cannot judge the answer: {type(e).__name__}: {e}", **evidence(doc, case.source))
        self.judged += 1
        self.last = (expected, answer.trace, checked)
        base["trace_digest"] = trace_digest
        if divergence is None and not violations:
            return CaseRecord(**base, outcome=Outcome.PASS, duration_ms=_ms(t0))
        if divergence is not None and divergence.contract is not None:
            # The answer breaks the observation catalog: the IUT sent data the contract does
            # not allow, which no pipeline rule is to blame for (exit 3, as with --validate).
            self.broken = True
            return CaseRecord(**base, outcome=Outcome.INVALID, divergence=divergence.to_json(), duration_ms=_ms(t0),
                              message=divergence.describe(), **evidence(doc, case.source, checked, expected, answer.trace))
        # A divergence without rules of its own (a different final outcome) is put down to the
        # rules the case cites; broken invariants name theirs.
        blamed = (divergence.rules or rules) if divergence else []
        failing = list(dict.fromkeys([*blamed, *(v["rule"] for v in violations)])) or rules
        reason = self.expectations.reason(case.id, failing) or explained(
            self.expectations, case.scenario, answer.trace, checked, failing, violations, _invariants)
        return CaseRecord(**base, outcome=Outcome.XFAIL if reason else Outcome.FAIL, failing_rules=failing,
                          divergence=kept_divergence(divergence.to_json()) if divergence else None, violations=violations,
                          expected_reason=reason, duration_ms=_ms(t0),
                          message=divergence.describe() if divergence else violations[0]["message"],
                          **evidence(doc, case.source, checked, expected, answer.trace))

    def _iut_failed(self, e: IUTFailure, base: dict[str, Any], t0: float, doc: dict[str, Any]) -> CaseRecord:
        self.broken = True
        outcome = _IUT_KIND.get(e.kind, Outcome.ERROR)
        if e.kind in HARD_FAILURES:
            self.consecutive += 1
        else:
            self.consecutive = 0  # it answered, wrongly: it is not hung or gone
        if self.give_up_after and self.consecutive >= self.give_up_after:
            self.gave_up = (f"not run: the implementation was declared broken after {self.consecutive} "
                            "consecutive timeouts or crashes (--give-up-after)")
            self.iut.close(graceful=False)
        elif e.restart and e.kind != "start":  # a failed start is tried again by the next case, not twice
            self._restart()
        message = scrub(f"{e.kind}: {e.message}" + (f"\nstderr:\n{e.stderr}" if e.stderr else ""))
        return CaseRecord(**base, outcome=outcome, message=message, iut_failure=e.kind, duration_ms=_ms(t0),
                          **evidence(doc, base["source"]))

    def record(self, rec: CaseRecord) -> CaseRecord:
        """Write the case to the report whole, and keep what the summary, the footer and the
        JUnit file need of it: not its evidence (the IUT's trace, a generated scenario, the
        divergence a message already describes), so that memory does not grow with the
        traces of every case of a run."""
        self.writer.write(rec)
        self.records.append(_summary_of(rec))
        if rec.outcome in UNEXPECTED:
            self.unexpected += 1
            if self.max_fail and self.unexpected >= self.max_fail and not self.gave_up:
                self.max_failed = True  # the cases left are not run, as after an early stop
                self.gave_up = (f"not run: the run stopped after {self.unexpected} unexpected failure"
                                f"{'s' if self.unexpected != 1 else ''} (--max-fail {self.max_fail})")
        return rec

    def _restart(self) -> None:
        try:
            self.iut.restart()
        except IUTFailure:
            pass  # the next run tries again; each case that cannot run is recorded as such

    # ------------------------------------------------------------------ the corpus

    def run_cases(self, cases: Iterable[tuple[str, dict[str, Any], str | None]], progress: Progress | None = None,
                  expected: dict[str, Trace | KeptReference] | None = None) -> None:
        """Decide each case and record it, in order. A process IUT is sent the next cases
        before the answer to the one before is judged (up to ``_AHEAD`` cases ahead: it works
        while the suite judges), when their messages are small enough to wait in the pipe."""
        ahead = self.iut.pipeline is not None
        waiting: collections.deque[_Case] = collections.deque()  # sent, answer not judged yet

        def finish(case: _Case) -> None:
            if progress:
                progress.begin(case.id)
            rec = self.record(self._answer(case))
            if progress:
                progress.done(rec.outcome)

        for case_id, doc, path in cases:
            case = self._prepare(case_id, doc, "corpus", path, None, (expected or {}).get(case_id))
            if isinstance(case, CaseRecord):  # decided without the IUT: after those before it
                while waiting:
                    finish(waiting.popleft())
                if progress:
                    progress.begin(case_id)
                self.record(case)
                if progress:
                    progress.done(case.outcome)
                continue
            while waiting and not self._in_flight(waiting[0]):  # its process is gone: asked again first
                finish(waiting.popleft())
            if ahead and not self.gave_up and self._fits_ahead(waiting, case):
                self._send(case)
            waiting.append(case)
            while len(waiting) > _AHEAD or (waiting and not self._in_flight(waiting[0])):
                finish(waiting.popleft())
        while waiting:
            finish(waiting.popleft())

    def run_properties(self, examples: int, seed: int, profiles: frozenset[str],
                       progress: Progress | None = None, draws: Iterable[Any] | None = None) -> CaseRecord:
        """The generated draws of a seed (``running.properties.run_properties``)."""
        return run_properties(self, examples, seed, profiles, progress, draws)

    def record_drawn(self, doc: dict[str, Any], rec: CaseRecord, seed: int) -> None:
        """Record a generated scenario the IUT could not answer, as drawn (never shrunk)."""
        case_id = rec.id
        if any(r.id == case_id for r in self.records):
            return  # drawn again
        doc = {**doc, "id": case_id, "title": f"generated scenario that ended in {rec.outcome.value}", "seed": seed}
        path = self.save(case_id, doc, f"generated scenario ({rec.outcome.value})")
        self.record(rec.model_copy(update={"case_file": path}))

    def save(self, case_id: str, doc: dict[str, Any], what: str = "shrunk counterexample") -> str | None:
        """Write a generated case as a case file that ``dsh-conformance replay`` re-runs."""
        if self.failures_dir is None:
            return None
        text = jsontext.dumps(doc, indent=1) + "\n"
        path = self.failures_dir / f"{case_id}.json"
        try:
            self.failures_dir.mkdir(parents=True, exist_ok=True)
            n = 1
            # another run's (or a link, a pipe planted there): never overwritten, never read through
            while os.path.lexists(path) and not holds(path, text):
                n += 1
                path = self.failures_dir / f"{case_id}-{n}.json"
            write_atomic(path, text, self.ledger)
        except (OSError, OutputWriteError) as e:  # a full disk: said at the end (cli, exit 4), the run goes on
            self.unsaved.append(f"--failures: the {what} {path} could not be saved: {e}")
            return None
        self.saved.append((what, str(path)))
        return portable_path(path)

_EVIDENCE = ("trace", "scenario")


def _summary_of(rec: CaseRecord) -> CaseRecord:
    """What a kept record holds: everything but its evidence (``record``)."""
    drop = {k: None for k in _EVIDENCE if getattr(rec, k) is not None}
    if rec.divergence is not None and rec.message:
        drop["divergence"] = None
    return rec.model_copy(update=drop) if drop else rec


def _ms(t0: float) -> int:
    return int((time.monotonic() - t0) * 1000)


__all__ = ["Runner"]
