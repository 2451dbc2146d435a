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
import gc
import hashlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_conformance.oracle import Scenario, ScenarioRunError, parse_scenario, run_scenario

from dsh_conformance.kit import jsontext
from dsh_conformance.kit.trace import Trace

from . import interrupts, reference_cache
from .compare import judge
from .evidence import evidence, kept_divergence, kept_message
from .expectations import Expectations
from .explained import explained, explained_error
from .iut import HARD_FAILURES, IUTFailure
from .masks import within
from .outputs import Ledger, OutputWriteError, holds, write_atomic
from .portable import portable_path, scrub
from .progress import Progress
from .defaults import DEFAULT_GIVE_UP_AFTER
from .protocol import Errored, Skipped
from .report import BROKEN, CaseRecord, Footer, Outcome, ReportWriter, now, rule_outcomes
from .situations import needs
from .skips import draw_skips, footer_skips, too_many_skipped

if TYPE_CHECKING:
    from .connect import IUT

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_BROKEN, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
_IUT_KIND = {"timeout": Outcome.TIMEOUT, "invalid": Outcome.INVALID}
JUDGED = frozenset({Outcome.PASS, Outcome.FAIL, Outcome.XFAIL})
UNEXPECTED = frozenset({Outcome.FAIL, *BROKEN})  # what --max-fail counts


def _invariants(scenario: Scenario, trace: Trace) -> list[dict[str, str]]:
    from .laws import check

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


class _GiveUp(BaseException):
    """Ends a property run at once (hypothesis re-raises a BaseException without shrinking)."""


def content_id(doc: dict[str, Any]) -> str:
    """The id of a generated case: a hash of its content, stable across runs and machines."""
    return "prop-" + hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]


class Runner:
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
            text = _document_text(doc)
        if scenario is None:
            # Parsed once, with its reference trace (expected_traces keeps both).
            kept = _REFERENCES.get(key or _key_of(text))
            scenario, expected = (kept[0], expected or kept[1]) if kept is not None else (parse_scenario(doc), expected)
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

    # ------------------------------------------------------------------ properties

    def run_properties(self, examples: int, seed: int, profiles: frozenset[str],
                       progress: Progress | None = None, draws: Iterable[Any] | None = None) -> CaseRecord | None:
        """Generate ``examples`` scenarios; shrink the first unexpected failure and record it.
        A generated scenario the IUT timed out, crashed or errored on is recorded unshrunk.
        ``draws``: the (example, choices) pairs to judge instead of the seed's own draws (a
        worker of ``run --jobs`` shrinks the one failing draw it is handed this way)."""
        from hypothesis import HealthCheck, settings
        from hypothesis.errors import NoSuchExample

        from .strategies.citation import Example
        from .strategies.scenarios import examples as drawn

        if self.gave_up:
            return self.record(CaseRecord(id=f"generated-seed-{seed}", source="property", rules=[],
                                          outcome=Outcome.NOT_RUN, message=self.gave_up, draws=0))
        count = 0  # scenarios drawn until the first failure
        attempts = 0  # shrinking attempts after it
        # The rules the passing draws exercised (each draw's cited rules): a run of generated
        # scenarios that all pass is evidence for them, as a passing corpus case is for the
        # rules it cites, so that a sweep without the corpus scores what it checked.
        reached: set[str] = set()
        outcomes: collections.Counter[Outcome] = collections.Counter()
        skipped: list[dict[str, Any]] = []  # the draws the IUT answered skipped
        best: tuple[dict[str, Any], CaseRecord] | None = None  # the smallest failing scenario so far

        def fails(example: Example) -> bool:
            nonlocal count, attempts, best
            interrupts.check()
            if self.gave_up:
                raise _GiveUp()
            if best is None:
                count += 1
            else:
                attempts += 1
            if progress:
                progress.begin(f"generated scenario {count}" if best is None else f"shrinking: attempt {attempts}")
            rec = self.decide(content_id(example.doc), example.doc, "property", scenario=example.scenario,
                              expected=example.trace)
            if progress:
                progress.done(rec.outcome)
            if rec.outcome == Outcome.FAIL:  # only a divergence is shrunk
                best = (example.doc, rec)
                return True
            if best is None:
                outcomes[rec.outcome] += 1
                if rec.outcome == Outcome.SKIP:
                    skipped.append(example.doc)
                if rec.outcome == Outcome.PASS:
                    reached.update(example.doc.get("rules", ()))
            if rec.outcome in (*BROKEN, Outcome.XERROR) and best is None:
                self.record_drawn(example.doc, rec, seed)
            if self.gave_up:
                raise _GiveUp()
            return False

        cfg = settings(max_examples=examples, database=None, deadline=None,
                       suppress_health_check=list(HealthCheck))
        t0 = time.monotonic()
        with hypothesis_home():
            try:
                minimal = _search(drawn(profiles, features=self.iut_features), fails, cfg, examples, seed, profiles,
                                  self.iut_features, draws)
            except NoSuchExample:
                return self.record(folded(seed, count, outcomes, reached, _ms(t0), draw_skips(skipped)))
            except _GiveUp:
                if best is None:
                    return self.record(CaseRecord(
                        id=f"generated-seed-{seed}", source="property", rules=[], outcome=Outcome.NOT_RUN,
                        message=f"stopped after {count} generated scenarios; {self.gave_up}", duration_ms=_ms(t0),
                        draws=count, skipped_draws=draw_skips(skipped)))
                minimal = None
        if minimal is not None:
            doc = minimal.doc
        else:
            assert best is not None
            doc = best[0]
        case_id = content_id(doc)
        doc = {**doc, "id": case_id, "title": "shrunk counterexample of a property run", "seed": seed}
        path = self._save(case_id, doc, "shrunk counterexample")
        if minimal is None and best is not None:  # the IUT was declared broken while shrinking
            return self.record(best[1].model_copy(update={"id": case_id, "case_file": path, "draws": count}))
        rec = self.decide(case_id, doc, "property", path).model_copy(update={"draws": count})
        return self.record(rec)


    def record_drawn(self, doc: dict[str, Any], rec: CaseRecord, seed: int) -> None:
        """Record a generated scenario the IUT could not answer, as drawn (never shrunk)."""
        case_id = rec.id
        if any(r.id == case_id for r in self.records):
            return  # drawn again
        doc = {**doc, "id": case_id, "title": f"generated scenario that ended in {rec.outcome.value}", "seed": seed}
        path = self._save(case_id, doc, f"generated scenario ({rec.outcome.value})")
        self.record(rec.model_copy(update={"case_file": path}))

    def _save(self, case_id: str, doc: dict[str, Any], what: str = "shrunk counterexample") -> str | None:
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

    # ------------------------------------------------------------------ the end

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
        from .rules import rules
        from .scores import SCORED

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


def folded(seed: int, count: int, outcomes: collections.Counter[Outcome] | dict[Outcome, int], reached: set[str],
           duration_ms: int, skipped_draws: dict[str, int] | None = None) -> CaseRecord:
    """The one case ``generated-seed-N`` that ``count`` draws without a divergence fold into
    (``outcomes``: what the draws came to, kept in the record for ``merge``; ``reached``: the
    rules the passing ones cite)."""
    from .strategies.citation import sort_rules

    outcomes = collections.Counter({o: n for o, n in outcomes.items() if n})
    base = {"id": f"generated-seed-{seed}", "source": "property", "duration_ms": duration_ms, "draws": count,
            "draw_outcomes": {o.value: n for o, n in sorted(outcomes.items(), key=lambda kv: kv[0].value)},
            "skipped_draws": skipped_draws}
    if outcomes[Outcome.NOT_SCORED] == count:  # nothing was judged: no evidence for any rule
        return CaseRecord(**base, rules=[], outcome=Outcome.NOT_SCORED,
                          message=f"none of the {count} generated scenarios could be scored (each needs a profile "
                                  f"the run does not check)")
    others = ", ".join(f"{n} {o.value}" for o, n in sorted(outcomes.items(), key=lambda kv: kv[0].value)
                       if o != Outcome.PASS)
    if not outcomes[Outcome.PASS]:
        # Not one draw passed (each errored, timed out or was skipped: those that errored
        # are cases of their own): the folded case is no evidence, not a pass.
        return CaseRecord(**base, rules=[], outcome=Outcome.NOT_SCORED,
                          message=f"none of the {count} generated scenarios passed ({others})")
    return CaseRecord(**base, rules=sort_rules(reached), outcome=Outcome.PASS,
                      message=f"{count} generated scenarios, no unexpected failure" + (f" ({others})" if others else ""))


_EVIDENCE = ("trace", "scenario")


def _summary_of(rec: CaseRecord) -> CaseRecord:
    """What a kept record holds: everything but its evidence (``record``)."""
    drop = {k: None for k in _EVIDENCE if getattr(rec, k) is not None}
    if rec.divergence is not None and rec.message:
        drop["divergence"] = None
    return rec.model_copy(update=drop) if drop else rec


def _search(strategy: Any, fails: Any, cfg: Any, examples: int, seed: int, profiles: frozenset[str],
            features: frozenset[str] | None = None, given: Iterable[Any] | None = None) -> Any:
    """The first of ``examples`` independent draws that ``fails``, shrunk by hypothesis.

    Independent draws (``strategies.draws.independent_draws``) spread a run over the scenario
    language: hypothesis' own generate phase mutates each novel example several times, so
    its first 100 examples hold some 20 independent scenarios. The failing draw's choice
    sequence is handed to hypothesis through an in-memory example database, which replays
    it and shrinks it. Without the internal API, hypothesis' ``find`` draws as before."""
    import random

    from hypothesis import Phase, find, settings
    from hypothesis.database import InMemoryExampleDatabase, choices_to_bytes
    from hypothesis.errors import NoSuchExample

    from .strategies.draws import independent_draws

    draws = independent_draws(examples, seed, profiles, features) if given is None else given
    if draws is None:
        return find(strategy, fails, settings=cfg, random=random.Random(seed))
    for example, choices in draws:
        if fails(example):
            break
    else:
        raise NoSuchExample("no generated scenario fails")
    key = b"dsh-conformance-shrink"
    db = InMemoryExampleDatabase()
    db.save(key, choices_to_bytes(choices))
    shrink = settings(cfg, database=db, phases=[Phase.reuse, Phase.shrink])
    try:
        return find(strategy, fails, settings=shrink, database_key=key)
    except NoSuchExample:  # hypothesis could not replay it: the failing draw as it was
        return example


class hypothesis_home:
    """Hypothesis keeps caches in ``.hypothesis/`` of the current directory; a run of the
    suite must not leave one wherever it is started: point it at a temporary directory
    (unless HYPOTHESIS_STORAGE_DIRECTORY says where)."""

    def __enter__(self) -> None:
        import os
        import tempfile

        from hypothesis import configuration

        self.tmp = None if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") else tempfile.TemporaryDirectory(
            prefix="dsh-conformance-hypothesis-")
        if self.tmp is not None:
            configuration.set_hypothesis_home_dir(self.tmp.name)

    def __exit__(self, *exc: object) -> None:
        from hypothesis import configuration

        if self.tmp is not None:
            configuration.set_hypothesis_home_dir(None)
            self.tmp.cleanup()


def _ms(t0: float) -> int:
    return int((time.monotonic() - t0) * 1000)


def corpus_items(directory: Path) -> list[tuple[str, dict[str, Any], str]]:
    """The corpus as (id, document, path relative to the corpus) for the runner."""
    from .corpus import load_case

    items = []
    for path in sorted(directory.glob("*.json")):
        case = load_case(path)  # validates the id, the rules and the scenario, within the input limits
        items.append((case.id, case.document, path.name))
    return items


def expected_traces(items: list[tuple[str, dict[str, Any], str]],
                    directory: Path) -> dict[str, Trace | KeptReference]:
    """The oracle's trace of every case, before any work: a case that cannot run to an end
    is a bad input file (ScenarioFileError), not a verdict on the implementation. A trace
    the reference cache holds is not read here but when its case is prepared
    (``KeptReference``): the file shows that the oracle ran the case to an end with this
    code, and reading it while the implementation works on the case before keeps it off the
    run's serial start (issue 25: some 0.5 ms a case against rc.8, the implementation idle)."""
    from dsh_conformance.oracle import ScenarioFileError

    out: dict[str, Trace | KeptReference] = {}
    # The references live for the whole run: made (or read back) with the cyclic collector
    # paused, then frozen (gc.freeze), so that it does not walk them again and again while
    # the cases are judged (issue 25: 3.0 against 3.5 ms of CPU a case against rc.8). Called
    # once a run (and by the bench): what is alive now is long-lived anyway. Not collected
    # first (that walk costs more than it saves): the cyclic garbage of the oracle's runs
    # while paused (some 4,000 objects when all 274 are computed) stays, once a run.
    was = gc.isenabled()
    gc.disable()
    try:
        for case_id, doc, path in items:
            where = str(directory / path)
            try:
                out[case_id] = _reference_or_kept(doc, where)
            except ScenarioRunError as e:
                raise ScenarioFileError(where, "$", str(e)) from None
    finally:
        if was:
            gc.enable()
    gc.freeze()
    return out


@dataclass(frozen=True)
class KeptReference:
    """A corpus case's reference that the reference cache holds, read when the case is
    prepared (``resolve``). ``where``: the case file, named if the oracle cannot run it
    after all (the file held something else, and it is computed anew)."""
    key: str
    doc: dict[str, Any]
    where: str
    text: str  # the document's JSON text (``_document_text``), its key's source and the run message's body

    def resolve(self) -> Trace:
        from dsh_conformance.oracle import ScenarioFileError

        # Read with the collector paused and then frozen, as expected_traces keeps what it
        # reads: otherwise the collector walks each reference several times as it ages
        # (0.3 ms of CPU a case, more than half of what reading it costs). Freezing keeps the
        # cyclic garbage of the cases before it too: some 200 objects a corpus run.
        was = gc.isenabled()
        gc.disable()
        try:
            return _reference_of(self.key, self.doc)[1]
        except ScenarioRunError as e:
            raise ScenarioFileError(self.where, "$", str(e)) from None
        finally:
            if was:
                gc.enable()
            gc.freeze()


def _reference_or_kept(doc: dict[str, Any], where: str) -> Trace | KeptReference:
    text = _document_text(doc)
    key = _key_of(text)
    kept = _REFERENCES.get(key)
    if kept is not None:
        _REFERENCES.move_to_end(key)
        return kept[1]
    if reference_cache.holds(key):
        return KeptReference(key, doc, where, text)
    return _reference_of(key, doc)[1]


_REFERENCES: collections.OrderedDict[str, tuple[Scenario, Trace]] = collections.OrderedDict()
MAX_REFERENCES = 512  # traces kept (the corpus has a few hundred cases, a trace some tens of KiB)


def reference(scenario: Scenario | None, doc: dict[str, Any]) -> Trace:
    """The oracle's trace of a scenario document (``scenario``: the document parsed, when it
    is at hand), computed once per document: kept by the digest of its JSON text, key order
    included (it decides what a JavaScript program sees), for the latest ``MAX_REFERENCES``
    documents. Judging the same cases again in one process (the bench's rounds, a test
    session, the pytest plugin's cases) does not run the oracle again; the oracle is
    deterministic, so nothing else changes. The traces are shared: read, never changed."""
    return parsed_reference(doc, scenario)[1]


def parsed_reference(doc: dict[str, Any], scenario: Scenario | None = None,
                     text: str | None = None) -> tuple[Scenario, Trace]:
    """``reference`` with the parsed document it was computed from (kept with it and shared
    the same way: a case's scenario is parsed once, for its trace and for its judging).
    ``text``: the document's JSON text (``_document_text``), when it is at hand. Beyond this
    process, a reference is kept on disk for the next run, under the digest of the code that
    computed it (``conformance.reference_cache``)."""
    return _reference_of(_key_of(text if text is not None else _document_text(doc)), doc, scenario)


def _reference_of(key: str, doc: dict[str, Any], scenario: Scenario | None = None) -> tuple[Scenario, Trace]:
    """``parsed_reference`` of the document whose key is ``key``."""
    kept = _REFERENCES.get(key)
    if kept is None:
        kept = reference_cache.load(key)
        if kept is None:
            scenario = scenario or parse_scenario(doc)
            kept = (scenario, run_scenario(scenario))
            reference_cache.store(key, *kept)
        _REFERENCES[key] = kept
        if len(_REFERENCES) > MAX_REFERENCES:
            _REFERENCES.popitem(last=False)
    else:
        _REFERENCES.move_to_end(key)
    return kept


def _document_text(doc: dict[str, Any]) -> str:
    return jsontext.dumps(doc, separators=(",", ":"))


def _key_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def forget_references() -> None:
    """Drop every kept reference trace (the bench measures a first run's cost this way)."""
    _REFERENCES.clear()


__all__ = ["Runner", "Progress", "folded", "corpus_items", "expected_traces", "KeptReference", "reference", "forget_references", "content_id", "DEFAULT_GIVE_UP_AFTER",
           "EXIT_OK", "EXIT_FAIL", "EXIT_USAGE", "EXIT_BROKEN", "EXIT_INTERRUPTED"]
