"""``run --shard K/M``: one of M parts of a run, for the M machines of a CI matrix.

The partition is wptrunner's ``--this-chunk/--total-chunks`` without a hash: shard K of M
holds the K-th of M contiguous, near-equal slices of the corpus cases the selection keeps
(in the run's order) and of the generated attempts (``strategies.draws.attempt_seeds``:
attempts ``(K-1)*N//M`` to ``K*N//M`` of ``--examples N``). Both depend only on the
selection, ``--seed`` and ``--examples``, so M machines given the same command line each
run a different part and together the whole; ``dsh-conformance merge`` puts their reports
back together as the one an unsharded run writes (``conformance.merge``).
"""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple





class Shard(NamedTuple):
    """Shard K of M. (A named tuple: the command line's grammar imports this module, and
    ``dataclasses`` would bring ``inspect`` and ``ast`` into every ``--help``.)"""

    k: int
    m: int

    def __str__(self) -> str:
        return f"{self.k}/{self.m}"

    def part(self, n: int) -> range:
        """The K-th of M contiguous slices of ``range(n)``."""
        return range((self.k - 1) * n // self.m, self.k * n // self.m)


def shard(text: str) -> Shard:
    """An argparse type: ``K/M``, whole numbers with 1 <= K <= M."""
    k, sep, m = text.partition("/")
    try:
        got = Shard(int(k), int(m))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not K/M (shard K of M, as 2/3): {text!r}") from None
    if not sep or got.m < 1 or not 1 <= got.k <= got.m:
        raise argparse.ArgumentTypeError(f"not K/M with 1 <= K <= M: {text!r}")
    return got


shard.__name__ = "shard"


def cases_of(part: Shard | None, items: list[Any]) -> list[Any]:
    """The corpus cases of the shard (all of them without one)."""
    return items if part is None else [items[i] for i in part.part(len(items))]


def attempts_of(part: Shard | None, examples: int) -> tuple[range, int]:
    """The generated attempts the shard may draw, and how many draws it judges: without a
    shard, the first ``examples`` draws of up to ``4 * examples`` attempts (a draw too large
    is skipped, ``independent_draws``); a shard judges the draws of its own attempts."""
    if part is None:
        return range(0, 4 * examples), examples
    mine = part.part(examples)
    return mine, len(mine)


__all__ = ["Shard", "shard", "cases_of", "attempts_of"]
