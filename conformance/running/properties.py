"""A run's generated half: scenarios drawn for a seed and judged in draw order, the draws
before the first divergence folded into one case ``generated-seed-N``, the first divergence
shrunk by hypothesis and saved as a replayable case file, and a draw the implementation
could not answer (timeout, crash, error) recorded as drawn.

``DrawTally`` is what every way of running the draws shares (``run``: the plain run and a
shard, through ``run_properties``; ``run --jobs N``: ``parallel.run_properties``, which deals
the draws to workers and judges their answers in draw order): each judged draw taken in, and
the records a run of draws ends in.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import os
import random
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, configuration, find, settings
from hypothesis.database import InMemoryExampleDatabase, choices_to_bytes
from hypothesis.errors import NoSuchExample

from dsh_conformance.reporting.report import BROKEN, CaseRecord, Outcome
from dsh_conformance.reporting.skips import draw_skips
from dsh_conformance.running import interrupts
from dsh_conformance.running.progress import Progress
from dsh_conformance.strategies.citation import Example, sort_rules
from dsh_conformance.strategies.draws import attempt_seeds, draw_attempt, independent_draws
from dsh_conformance.strategies.scenarios import examples as drawn


def content_id(doc: dict[str, Any]) -> str:
    """The id of a generated case: a hash of its content, stable across runs and machines."""
    return "prop-" + hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]


class _GiveUp(BaseException):
    """Ends a property run at once (hypothesis re-raises a BaseException without shrinking)."""


@dataclass
class DrawTally:
    """The draws of one seed judged so far, before the first divergence."""
    seed: int
    count: int = 0  # draws judged
    outcomes: collections.Counter[Outcome] = field(default_factory=collections.Counter)
    # The rules the passing draws exercised (each draw's cited rules): a run of generated
    # scenarios that all pass is evidence for them, as a passing corpus case is for the
    # rules it cites, so that a sweep without the corpus scores what it checked.
    reached: set[str] = field(default_factory=set)
    skipped: list[dict[str, Any]] = field(default_factory=list)  # the draws the IUT answered skipped
    t0: float = field(default_factory=time.monotonic)

    def take(self, runner: Any, doc: dict[str, Any], rec: CaseRecord) -> bool:
        """Count one judged draw; True when it is a divergence (the one draw shrunk). A draw
        the implementation could not answer is recorded as drawn."""
        self.count += 1
        if rec.outcome == Outcome.FAIL:
            return True
        self.outcomes[rec.outcome] += 1
        if rec.outcome == Outcome.SKIP:
            self.skipped.append(doc)
        if rec.outcome == Outcome.PASS:
            self.reached.update(doc.get("rules", ()))
        if rec.outcome in (*BROKEN, Outcome.XERROR):
            runner.record_drawn(doc, rec, self.seed)
        return False

    def stopped(self, why: str) -> CaseRecord:
        """The record of draws ended by a broken implementation before any divergence."""
        return CaseRecord(id=f"generated-seed-{self.seed}", source="property", rules=[], outcome=Outcome.NOT_RUN,
                          message=f"stopped after {self.count} generated scenarios; {why}", duration_ms=_ms(self.t0),
                          draws=self.count, skipped_draws=draw_skips(self.skipped))

    def folded(self) -> CaseRecord:
        """The record of draws that all came to an end without a divergence."""
        return folded(self.seed, self.count, self.outcomes, self.reached, _ms(self.t0), draw_skips(self.skipped))


def not_run(seed: int, why: str) -> CaseRecord:
    """The record of a seed whose draws were never started (the IUT was given up on)."""
    return CaseRecord(id=f"generated-seed-{seed}", source="property", rules=[], outcome=Outcome.NOT_RUN,
                      message=why, draws=0)


def run_properties(runner: Any, examples: int, seed: int, profiles: frozenset[str],
                   progress: Progress | None = None, draws: Iterable[Any] | None = None) -> CaseRecord:
    """Generate ``examples`` scenarios for ``runner`` (a ``running.runner.Runner``); shrink the
    first unexpected failure and record it. A generated scenario the IUT timed out, crashed
    or errored on is recorded unshrunk. ``draws``: the (example, choices) pairs to judge
    instead of the seed's own draws (a shard's attempts, or the one failing draw a worker of
    ``run --jobs`` is handed to shrink)."""
    if runner.gave_up:
        return runner.record(not_run(seed, runner.gave_up))
    tally = DrawTally(seed)
    attempts = 0  # shrinking attempts after the first failure
    best: tuple[dict[str, Any], CaseRecord] | None = None  # the smallest failing scenario so far

    def fails(example: Example) -> bool:
        nonlocal attempts, best
        interrupts.check()
        if runner.gave_up:
            raise _GiveUp()
        if best is not None:
            attempts += 1
        if progress:
            progress.begin(f"generated scenario {tally.count + 1}" if best is None else f"shrinking: attempt {attempts}")
        rec = runner.decide(content_id(example.doc), example.doc, "property", scenario=example.scenario,
                            expected=example.trace)
        if progress:
            progress.done(rec.outcome)
        divergence = tally.take(runner, example.doc, rec) if best is None else rec.outcome == Outcome.FAIL
        if divergence:  # only a divergence is shrunk
            best = (example.doc, rec)
            return True
        if runner.gave_up:
            raise _GiveUp()
        return False

    cfg = settings(max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    with hypothesis_home():
        try:
            minimal = _search(drawn(profiles, features=runner.iut_features), fails, cfg, examples, seed, profiles,
                              runner.iut_features, draws)
        except NoSuchExample:
            return runner.record(tally.folded())
        except _GiveUp:
            if best is None:
                return runner.record(tally.stopped(runner.gave_up))
            minimal = None
    if minimal is not None:
        doc = minimal.doc
    else:
        assert best is not None
        doc = best[0]
    case_id = content_id(doc)
    doc = {**doc, "id": case_id, "title": "shrunk counterexample of a property run", "seed": seed}
    path = runner.save(case_id, doc, "shrunk counterexample")
    if minimal is None and best is not None:  # the IUT was declared broken while shrinking
        return runner.record(best[1].model_copy(update={"id": case_id, "case_file": path, "draws": tally.count}))
    rec = runner.decide(case_id, doc, "property", path).model_copy(update={"draws": tally.count})
    return runner.record(rec)


def folded(seed: int, count: int, outcomes: collections.Counter[Outcome] | dict[Outcome, int], reached: set[str],
           duration_ms: int, skipped_draws: dict[str, int] | None = None) -> CaseRecord:
    """The one case ``generated-seed-N`` that ``count`` draws without a divergence fold into
    (``outcomes``: what the draws came to, kept in the record for ``merge``; ``reached``: the
    rules the passing ones cite)."""
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


def _search(strategy: Any, fails: Any, cfg: Any, examples: int, seed: int, profiles: frozenset[str],
            features: frozenset[str] | None = None, given: Iterable[Any] | None = None) -> Any:
    """The first of ``examples`` independent draws that ``fails``, shrunk by hypothesis.

    Independent draws (``strategies.draws.independent_draws``) spread a run over the scenario
    language: hypothesis' own generate phase mutates each novel example several times, so
    its first 100 examples hold some 20 independent scenarios. The failing draw's choice
    sequence is handed to hypothesis through an in-memory example database, which replays
    it and shrinks it. Without the internal API, hypothesis' ``find`` draws as before."""
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
        self.tmp = None if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") else tempfile.TemporaryDirectory(
            prefix="dsh-conformance-hypothesis-")
        if self.tmp is not None:
            configuration.set_hypothesis_home_dir(self.tmp.name)

    def __exit__(self, *exc: object) -> None:
        if self.tmp is not None:
            configuration.set_hypothesis_home_dir(None)
            self.tmp.cleanup()


def _ms(t0: float) -> int:
    return int((time.monotonic() - t0) * 1000)


def draws_in(attempts: range, seed: int, profiles: frozenset[str],
             features: frozenset[str] | None = None) -> Iterator[Any]:
    """The (example, choices) of each attempt in ``attempts`` that is not too large."""
    strategy = drawn(frozenset(profiles), features=features)
    for sub_seed in itertools.islice(attempt_seeds(seed), attempts.start, attempts.stop):
        got = draw_attempt(strategy, sub_seed)
        if got is not None:
            yield got
