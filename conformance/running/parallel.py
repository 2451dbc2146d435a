"""Going wide: ``run --jobs N`` runs N instances of the implementation at once.

Each instance lives in a worker process of its own, forked once the corpus and its oracle
traces are ready (as pytest-xdist's workers each hold their own fixtures): the worker
makes the implementation (a process IUT, the embedded oracle on a thread, or a ``py:``
host process), starts it and judges what it is dealt with a ``Runner`` of its own. The
parent deals work and nothing else, as xdist's load scheduling does: corpus cases and
generated attempts (``strategies.draws.attempt_seeds``: attempt i is drawn by whoever holds it)
in small batches, to whichever worker is free. It takes the answers back in the order a
``--jobs 1`` run decides them and records them through its own ``Runner``, so the report,
the console, the footer and the exit code are those of a ``--jobs 1`` run: the same
outcomes and trace digests, only durations differ. Where ``--jobs 1`` would stop (the first
divergence of the generated draws, ``--max-fail``, an implementation declared broken)
the parent stops dealing and records what ``--jobs 1`` would have recorded: the one
failing draw is shrunk by a worker, exactly as ``--jobs 1`` shrinks it, and what was dealt
past the stop is dropped, or recorded ``not-run``.

``--give-up-after`` counts the timeouts and crashes in a row of each worker's instance.
``fork`` is how the workers are made, here and in ``mutate`` (a worker a mutant).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from dsh_conformance.iut.connection import IUTFailure, NotAnImplementation
from dsh_conformance.iut.protocol import Started
from dsh_conformance.iut.reaper import PR_SET_PDEATHSIG, prctl
from dsh_conformance.reporting.report import CaseRecord, Outcome, ReportWriter
from dsh_conformance.running.progress import Progress
from dsh_conformance.running.properties import DrawTally, content_id, draws_in, not_run
from dsh_conformance.running.references import parsed_reference
from dsh_conformance.running.runner import Runner
from dsh_conformance.running.shards import attempts_of
from dsh_conformance.strategies.draws import attempt_seeds, draw_attempt
from dsh_conformance.strategies.scenarios import examples

BATCH_MAX = 8  # cases dealt at once: few enough that the workers end together, enough to keep one ahead
STOP_SECONDS = 10.0  # a worker's time to stop its implementation and exit, past which it is killed


class _Collect(ReportWriter):
    """A worker's report: the records its runner decided, handed back to the parent."""

    def __init__(self) -> None:
        super().__init__(None)
        self.taken: list[CaseRecord] = []

    def write(self, record: Any) -> None:
        if isinstance(record, CaseRecord):
            self.taken.append(record)


@dataclass
class Tally:
    """What a worker's runner wrote beside its records: the case files it saved."""
    saved: list[tuple[str, str]] = field(default_factory=list)
    unsaved: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Settings:
    """How each worker judges: what its ``Runner`` is given."""
    profiles: set[str]
    expectations: Any
    give_up_after: int
    failures: Path | None


# ------------------------------------------------------------------------- the worker

def _serve(conn: Connection, make: Callable[[], Any], cfg: Settings, items: list[Any],
           expected: dict[str, Any]) -> None:

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles a Ctrl-C and ends the workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):

        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # a SIGKILLed parent leaves no worker behind
    try:
        iut = make()
        started = iut.start()
    except (IUTFailure, NotAnImplementation) as e:
        conn.send(("failed", e))
        os._exit(0)
    conn.send(("started", started))
    writer = _Collect()
    runner = Runner(iut, cfg.profiles, cfg.expectations, writer, cfg.failures, cfg.give_up_after)
    draws: _Draws | None = None
    try:
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                break
            before = (len(runner.saved), len(runner.unsaved))
            if msg[0] == "cases":
                runner.run_cases([items[i] for i in msg[1]], None, expected)
                answers: list[Any] = list(zip(msg[1], writer.taken))
            elif msg[0] == "draws":
                _, seed, profiles, attempts = msg
                if draws is None or draws.seed != seed:
                    draws = _Draws(seed, profiles, runner.iut_features)
                answers = [(a, *_attempt(runner, draws, a)) for a in attempts]
            else:  # ("shrink", seed, profiles, attempt): the first failing draw, shrunk as --jobs 1 shrinks it
                _, seed, profiles, attempt = msg
                draws = draws if draws is not None and draws.seed == seed else _Draws(seed, profiles, runner.iut_features)
                runner.run_properties(1, seed, profiles, draws=[draws.at(attempt)])
                answers = list(writer.taken)
            writer.taken = []
            conn.send(("done", answers, Tally(runner.saved[before[0]:], runner.unsaved[before[1]:])))
    finally:
        iut.close(graceful=True)
        conn.close()
    os._exit(0)  # no clean-up of what an in-process implementation left behind


class _Draws:
    """The attempts of one seed, drawn on demand (``strategies.draw_attempt``)."""

    def __init__(self, seed: int, profiles: frozenset[str], features: frozenset[str] | None = None) -> None:
        self.seed = seed
        self.strategy = examples(frozenset(profiles), features=features)
        self.seeds = attempt_seeds(seed)
        self.known: list[int] = []

    def at(self, attempt: int) -> Any:
        while len(self.known) <= attempt:
            self.known.append(next(self.seeds))
        return draw_attempt(self.strategy, self.known[attempt])


def _attempt(runner: Any, draws: _Draws, attempt: int) -> tuple[CaseRecord | None, dict[str, Any] | None]:
    """One attempt judged: its record (None: the draw was too large, skipped) and the
    drawn scenario where the parent keeps it (saved as drawn)."""
    got = draws.at(attempt)
    if got is None:
        return None, None
    example = got[0]
    rec = runner.decide(content_id(example.doc), example.doc, "property", scenario=example.scenario,
                        expected=example.trace)
    keep = rec.outcome in (Outcome.ERROR, Outcome.TIMEOUT, Outcome.INVALID, Outcome.XERROR, Outcome.PASS, Outcome.SKIP)
    return rec, ({"doc": example.doc} if keep else None)


# ------------------------------------------------------------------------- the pool

@dataclass
class Worker:
    """A worker process forked from this one, with a pipe to it (``fork``)."""
    process: Any
    conn: Connection
    busy: Any = None  # what it was dealt and has not answered
    since: float = 0.0  # when it was forked

    def kill(self) -> None:
        """End it at once (an implementation's keeper ends the implementation's tree with it)."""
        self.process.kill()
        self.process.join(5)
        self.conn.close()


def fork(target: Callable[..., None], *args: Any) -> Worker:
    """Fork a worker that runs ``target(conn, *args)``, ``conn`` its end of the pipe: what
    ``run --jobs`` and ``mutate`` run their workers in. Forked, so that it shares what this
    process has ready (the corpus, its oracle traces, the drawn scenarios) without pickling."""
    ctx = multiprocessing.get_context("fork")
    parent_end, child_end = ctx.Pipe()
    p = ctx.Process(target=target, args=(child_end, *args), daemon=True, name="dsh-conformance worker")
    p.start()
    child_end.close()
    return Worker(p, parent_end, since=time.monotonic())


class Pool:
    """N workers, each with an instance of the implementation: an IUT for the ``Runner``
    of the parent (``start``, ``started``, ``close``), which deals and records."""

    def __init__(self, jobs: int, make: Callable[[], Any], cfg: Settings, items: list[Any],
                 expected: dict[str, Any], generated: bool = False) -> None:
        self.jobs, self.make, self.cfg, self.items, self.expected = jobs, make, cfg, items, expected
        self.generated = generated  # the run draws scenarios: the workers are forked with the strategies loaded
        self.workers: list[Worker] = []
        self.started: Started | None = None
        self.pid = None

    def start(self) -> Started:
        """Fork the workers and wait for each to start its instance; the first that cannot
        is the run's failure to start (exit 3), as with one instance."""
        if self.generated:
            # Imported once here, not once in each worker after the fork: some 0.5 s of CPU
            # that every worker would spend at the same moment, the run's serial part (issue 25).
            for name in ("draws", "scenarios"):
                importlib.import_module(f"dsh_conformance.strategies.{name}")
        # What is alive now lives as long as the workers: frozen, so that a worker's full
        # collections do not walk it (and copy the pages its fork shares with this process).
        gc.freeze()
        for _ in range(self.jobs):
            self.workers.append(fork(_serve, self.make, self.cfg, self.items, self.expected))
        for w in self.workers:
            kind, value = self._recv(w)
            if kind == "failed":
                raise value
            self.started = self.started or value
        assert self.started is not None
        return self.started

    @property
    def pipeline(self) -> None:
        return None  # the parent sends no runs: it deals them (run_cases, run_properties below)

    def run(self, seq: int, scenario: dict[str, Any]) -> Any:
        raise IUTFailure("protocol", "the workers of --jobs are dealt work, not sent runs", restart=False)

    def restart(self) -> Started:
        assert self.started is not None
        return self.started  # each worker restarts its own instance

    def _recv(self, w: Worker) -> Any:
        try:
            return w.conn.recv()
        except (EOFError, OSError):
            w.process.join(1)
            raise IUTFailure("crash", f"a worker of --jobs died (exit {w.process.exitcode})", restart=False) from None

    def deal(self, next_piece: Callable[[], Any]) -> Iterator[tuple[Any, Any, Tally]]:
        """Give each free worker ``next_piece()`` (None: nothing to give now); yield (piece,
        answers, tally) as they come back, in no fixed order, until no worker has work.
        Closing the iterator stops the dealing; pieces in flight are waited for and dropped."""
        try:
            for w in self.workers:
                self._give(w, next_piece)
            while any(w.busy is not None for w in self.workers):
                ready = wait([w.conn for w in self.workers if w.busy is not None])
                for w in self.workers:
                    if w.conn in ready and w.busy is not None:
                        _, answers, tally = self._recv(w)
                        piece, w.busy = w.busy, None
                        yield piece, answers, tally
                        for idle in self.workers:
                            if idle.busy is None:
                                self._give(idle, next_piece)
        except GeneratorExit:  # the dealing was stopped: what is in flight is waited for, and dropped
            self._drain()
            raise

    def _give(self, w: Worker, next_piece: Callable[[], Any]) -> None:
        piece = next_piece()
        if piece is not None:
            w.busy = piece
            w.conn.send(piece)

    def _drain(self) -> None:
        for w in self.workers:
            if w.busy is not None:
                with contextlib.suppress(IUTFailure):
                    self._recv(w)
                w.busy = None

    def ask(self, piece: Any) -> tuple[Any, Tally]:
        """One piece of work to the first worker, waited for."""
        pieces = [piece]
        for _, answers, tally in self.deal(lambda: pieces.pop() if pieces else None):
            return answers, tally
        raise AssertionError("unreachable")

    def close(self, graceful: bool = True) -> None:
        """Stop every worker (each stops its instance); past ``STOP_SECONDS``, or when not
        graceful, kill it (its instance's keeper ends the instance's tree)."""
        for w in self.workers:
            if graceful and w.busy is None:
                with contextlib.suppress(OSError, ValueError):
                    w.conn.send(("stop",))
            else:
                w.process.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for w in self.workers:
            w.process.join(max(0.0, deadline - time.monotonic()))
            if w.process.is_alive():
                w.process.kill()
                w.process.join(1)
            w.conn.close()
        self.workers = []


# ------------------------------------------------------------------------- the run

def batch_size(left: int, jobs: int) -> int:
    """How many cases or draws to deal at once when ``left`` remain: a quarter of each
    worker's share, at most ``BATCH_MAX``, so that the batches shrink towards the end and
    the workers finish together (the last batch dealt is what one waits on the others for)."""
    return max(1, min(BATCH_MAX, left // (jobs * 4)))


def _batches(indices: list[int], jobs: int) -> Iterator[tuple[str, list[int]]]:
    i = 0
    while i < len(indices):
        size = batch_size(len(indices) - i, jobs)
        yield "cases", indices[i:i + size]
        i += size


def account(runner: Any, rec: CaseRecord) -> None:
    """What ``Runner`` learns as it decides a case, learnt again from the case's record
    (the worker's runner learnt it): an implementation that broke its promises (a failure
    of its own, or an answer outside the contract), a judged answer (it has a digest), an
    answered error (or one that could not be judged)."""
    if rec.iut_failure is not None or rec.outcome == Outcome.INVALID:
        runner.broken = True
    if rec.trace_digest is not None:
        runner.judged += 1
    if rec.outcome in (Outcome.ERROR, Outcome.XERROR) and rec.iut_failure is None:
        runner.errors += 1


def _saved(runner: Any, tally: Tally) -> None:
    runner.saved += tally.saved
    runner.unsaved += tally.unsaved


def _take(runner: Any, rec: CaseRecord) -> CaseRecord:
    """Record one worker's record through the parent's runner, as ``--jobs 1`` would have:
    once the run stopped, what was decided past the stop is recorded ``not-run``. A worker
    that declared its instance broken answers ``not-run``: the run stops there."""
    if runner.gave_up:
        rec = CaseRecord(id=rec.id, source=rec.source, rules=rec.rules, case_file=rec.case_file,
                         outcome=Outcome.NOT_RUN, message=runner.gave_up)
    elif rec.outcome == Outcome.NOT_RUN:
        runner.gave_up = rec.message
    else:
        account(runner, rec)
    return runner.record(rec)


def run_cases(runner: Any, pool: Pool, progress: Progress | None) -> None:
    """The corpus, dealt to the workers, recorded in order."""
    done: dict[int, CaseRecord] = {}
    nxt = 0

    def flush() -> None:
        nonlocal nxt
        while nxt in done:
            rec = done.pop(nxt)
            if progress:
                progress.begin(rec.id)
            _take(runner, rec)
            if progress:
                progress.done(rec.outcome)
            nxt += 1

    batches = _batches(list(range(len(pool.items))), pool.jobs)
    dealing = pool.deal(lambda: None if runner.gave_up else next(batches, None))
    for _, answers, tally in dealing:
        done.update(answers)
        _saved(runner, tally)
        flush()
    dealing.close()
    for i in range(nxt, len(pool.items)):  # never dealt: the run stopped
        if i not in done:
            case_id, doc, path = pool.items[i]
            done[i] = CaseRecord(id=case_id, source="corpus", rules=list(parsed_reference(doc)[0].rules),
                                 case_file=path, outcome=Outcome.NOT_RUN, message=runner.gave_up)
    flush()


def run_properties(runner: Any, pool: Pool, seed: int, profiles: frozenset[str], progress: Progress | None,
                   attempts: range, wanted: int) -> CaseRecord:
    """The generated draws, dealt to the workers by attempt, judged in attempt order as
    ``properties.run_properties`` judges them (one ``DrawTally``): the first ``wanted`` of
    ``attempts`` that are not too large; the first divergence is shrunk by a worker."""
    if runner.gave_up:
        return runner.record(not_run(seed, runner.gave_up))
    tally = DrawTally(seed)
    done: dict[int, tuple[CaseRecord | None, dict[str, Any] | None]] = {}
    dealt = nxt = attempts.start
    failing: int | None = None
    stop = False

    def work() -> Any:
        """The attempts still needed for ``wanted`` draws (more only after a skip)."""
        nonlocal dealt
        drawn = tally.count + sum(1 for r, _ in done.values() if r is not None)
        inflight = sum(len(w.busy[3]) for w in pool.workers if w.busy is not None)
        n = min(batch_size(wanted - drawn - inflight, pool.jobs), attempts.stop - dealt, wanted - drawn - inflight)
        if stop or n <= 0:
            return None
        dealt += n
        return "draws", seed, profiles, list(range(dealt - n, dealt))

    dealing = pool.deal(work)
    for _, answers, tally_of_worker in dealing:
        _saved(runner, tally_of_worker)
        done.update((a, (rec, kept)) for a, rec, kept in answers)
        while nxt in done and not stop:
            rec, kept = done.pop(nxt)
            nxt += 1
            if rec is None:  # a draw too large: skipped, as --jobs 1 skips it
                continue
            if progress:
                progress.begin(f"generated scenario {tally.count + 1}")
                progress.done(rec.outcome)
            if rec.outcome == Outcome.NOT_RUN:  # the worker declared its instance broken
                runner.gave_up = runner.gave_up or rec.message
                stop = True
                break
            account(runner, rec)
            if tally.take(runner, kept["doc"] if kept else {}, rec):  # only a divergence is shrunk
                failing, stop = nxt - 1, True
                break
            if runner.gave_up or tally.count >= wanted:
                stop = True
        if stop:
            break
    dealing.close()
    if failing is None:
        return runner.record(tally.stopped(runner.gave_up) if runner.gave_up else tally.folded())
    answers, tally_of_worker = pool.ask(("shrink", seed, profiles, failing))
    _saved(runner, tally_of_worker)
    out = None
    for rec in answers:  # the shrunk counterexample last
        account(runner, rec)
        out = runner.record(rec.model_copy(update={"draws": tally.count}) if rec.draws is not None else rec)
    assert out is not None
    return out


def run_corpus(runner: Any, items: list[Any], progress: Progress | None, expected: dict[str, Any]) -> None:
    """The corpus cases of a run: dealt to the workers of a ``Pool``, else the runner's own."""
    if isinstance(runner.iut, Pool):
        run_cases(runner, runner.iut, progress)
    else:
        runner.run_cases(items, progress, expected)


def run_generated(runner: Any, examples: int, seed: int, profiles: frozenset[str], progress: Progress | None,
                  part: Any = None) -> CaseRecord | None:
    """The generated draws of a run or of its shard (``shards.attempts_of``)."""
    attempts, wanted = attempts_of(part, examples)
    if not wanted:
        return None
    if progress:
        progress.phase("generated", wanted)
    if isinstance(runner.iut, Pool):
        return run_properties(runner, runner.iut, seed, profiles, progress, attempts, wanted)
    return runner.run_properties(wanted, seed, profiles, progress,
                                 draws=None if part is None else draws_in(attempts, seed, profiles,
                                                                          runner.iut_features))



__all__ = ["Pool", "Worker", "fork", "Settings", "Tally", "account", "run_cases", "run_properties", "run_corpus", "run_generated"]
