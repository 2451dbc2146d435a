"""Independent draws of the scenario strategy, the same for the same seed, and the rule
coverage they measure (``measure_coverage``)."""

from __future__ import annotations

import functools
import itertools
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed as seed_, settings
from hypothesis.control import BuildContext
from hypothesis.errors import StopTest
from hypothesis.internal.conjecture.data import ConjectureData
from hypothesis.internal.conjecture.providers import HypothesisProvider
from hypothesis.internal.constants_ast import Constants

from dsh_conformance.spec.rules import rules_of
from dsh_conformance.strategies.basics import S
from dsh_conformance.strategies.citation import ALL_PROFILES, Example, exercised_rules, observation_kinds, sort_rules
from dsh_conformance.strategies.scenarios import examples


DEFAULT_EXAMPLES = 300  # the default example budget of the coverage measurement
DEFAULT_SEED = 20240601

def draw_examples(n_examples: int, seed: int, profiles: frozenset[str] = ALL_PROFILES,
                  features: frozenset[str] | None = None) -> Iterator[Example]:
    """``n_examples`` independent draws of ``examples(profiles)``, the same for the same
    seed.

    Hypothesis' own generate phase mutates each novel example several times, so 300 of its
    examples hold only some 45 independent draws; a measurement of what the strategies
    reach wants independent ones. They come from hypothesis' choice sequence driven by a
    seeded ``random.Random`` (an internal API of the pinned hypothesis release); should
    that API move, the draws fall back to a ``@given`` run with the same seed."""
    draws = independent_draws(n_examples, seed, profiles, features)
    if draws is None:
        yield from _given_examples(examples(frozenset(profiles), features=features), n_examples, seed)
        return
    for example, _choices in draws:
        yield example


def independent_draws(n_examples: int, seed: int, profiles: frozenset[str] = ALL_PROFILES,
                      features: frozenset[str] | None = None) -> Iterator[tuple[Example, tuple[Any, ...]]] | None:
    """``draw_examples`` with each draw's hypothesis choice sequence, from which
    hypothesis can replay and shrink it; None where the internal API is not there.
    ``features``: the optional features the implementation declares (None: all). The draws are
    the attempts of ``attempt_seeds`` that did not run out of choices, in order
    (``draw_attempt``), so a worker of ``run --jobs`` draws attempt i by itself."""
    strategy = examples(frozenset(profiles), features=features)
    try:
        draw_attempt(strategy, seed)
    except (ImportError, TypeError, AttributeError):
        return None

    def draws() -> Iterator[tuple[Example, tuple[Any, ...]]]:
        drawn = 0
        for sub_seed in itertools.islice(attempt_seeds(seed), 4 * n_examples):
            if drawn >= n_examples:
                return
            got = draw_attempt(strategy, sub_seed)
            if got is not None:
                drawn += 1
                yield got
    return draws()


def attempt_seeds(seed: int) -> Iterator[int]:
    """The seed of each attempt of a generated run, in order: attempt i is drawn from the
    i-th, whatever the attempts before it came to."""
    rnd = random.Random(seed)
    while True:
        yield rnd.getrandbits(64)


def draw_attempt(strategy: S, sub_seed: int) -> tuple[Example, tuple[Any, ...]] | None:
    """One draw of ``strategy`` from ``sub_seed`` with its choice sequence, or None for a
    draw too large (it ran out of choices, and is skipped)."""

    data = ConjectureData(random=random.Random(sub_seed), max_choices=8192, provider=_seeded_provider())
    try:
        with BuildContext(data, is_final=False, wrapped_test=draw_examples):
            return data.draw(strategy), tuple(data.choices)
    except StopTest:
        return None


@functools.cache
def _seeded_provider() -> type:
    """Hypothesis' own provider, less the constants it reads out of the source of every
    module it deems local (a string or a number of 100 or more found in the code, drawn now
    and then in place of a random one).

    Which modules count as local depends on where the suite is installed (an editable
    checkout: all of them; a wheel in site-packages: none) and on what else the process has
    imported, and any edit of a literal anywhere changes the set: a draw that took one would
    differ between a clone and an installed wheel for the same seed, and between two commits
    that touch no strategy. The draws must be a function of the seed and the strategies
    alone (shards, --jobs workers and a replay on another machine draw the same). Today's
    strategies draw no value such a constant could replace (seeds 0-8, 100 draws each, are
    the same with and without them); this keeps it so, and spares each run the scan of the
    suite's own sources (hypothesis' cache of it lives in the run's temporary home)."""

    none = Constants()

    class SeededProvider(HypothesisProvider):
        @property
        def _local_constants(self) -> Constants:
            return none

    return SeededProvider


def _given_examples(strategy: S, n_examples: int, seed: int) -> Iterator[Example]:
    out: list[Example] = []

    @settings(max_examples=n_examples, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @seed_(seed)
    @given(strategy)
    def collect(example: Example) -> None:
        out.append(example)

    collect()
    yield from out


def measure_coverage(n_examples: int = DEFAULT_EXAMPLES, seed: int = DEFAULT_SEED,
                     profiles: frozenset[str] = ALL_PROFILES) -> dict[str, Any]:
    """Draw ``n_examples`` scenarios (``draw_examples``: deterministic for a given
    ``seed``) and count, for each rule of ``profiles`` and each observation kind
    ``stage/what``, how many of the examples' oracle traces exercised it.

    Returns ``{"examples", "seed", "profiles", "rules": {id: n}, "kinds": {kind: n},
    "missing": [rule ids never exercised]}``; ``rules`` lists every rule of the profiles,
    zero counts included, in rule order."""
    profiles = frozenset(profiles)
    wanted = sort_rules(r.id for r in rules_of(*profiles))
    rule_counts: Counter[str] = Counter()
    kind_counts: Counter[str] = Counter()
    drawn = 0
    for example in draw_examples(n_examples, seed, profiles):
        drawn += 1
        rule_counts.update(exercised_rules(example.scenario, example.trace))
        kind_counts.update(observation_kinds(example.trace))
    return {
        "examples": drawn,
        "seed": seed,
        "profiles": sorted(profiles),
        "rules": {r: rule_counts.get(r, 0) for r in wanted},
        "kinds": dict(sorted(kind_counts.items())),
        "missing": [r for r in wanted if not rule_counts.get(r)],
    }

