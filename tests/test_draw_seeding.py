"""A generated draw is a function of its seed and the strategies alone: hypothesis' habit of
drawing, now and then, a constant it read out of the process's "local" modules (whose set
depends on whether the suite is an editable checkout or an installed wheel, and on what is
imported) is off for the suite's independent draws (``strategies.draws._seeded_provider``)."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from dsh_conformance.strategies.draws import attempt_seeds, draw_attempt

WIDE = st.lists(st.integers(0, 10**9), min_size=20, max_size=20)


def _local_integers() -> set[int]:
    """The integers hypothesis would take from this process's local modules, in WIDE's range,
    less those it also keeps among its own and those a random draw hits by itself (hypothesis
    favours small magnitudes: 100 or 512 come up without any constant)."""
    from hypothesis.internal.conjecture.providers import GLOBAL_CONSTANTS, _get_local_constants

    return {n for n in _get_local_constants().integers if 10**5 <= n <= 10**9} - set(GLOBAL_CONSTANTS.integers)


def test_a_draw_never_takes_a_constant_of_the_local_sources():
    local = _local_integers()
    if not local:  # an installed wheel: hypothesis finds no local module, nothing to keep out
        pytest.skip("no local module in this process: the suite is installed, not a checkout")
    drawn = [n for sub_seed, _ in zip(attempt_seeds(0), range(200)) for n in draw_attempt(WIDE, sub_seed)[0]]
    assert len(drawn) == 4000
    # hypothesis' own provider picks a constant for 1 in 20 integers, from the local pool
    # half of those times: with it, these 4,000 hold one of ``local`` (the coverage seed
    # 20240601 of strategies/draws.py, at the time of writing).
    assert not local & set(drawn), sorted(local & set(drawn))[:10]


def test_the_same_sub_seed_draws_the_same():
    assert [draw_attempt(WIDE, s)[1] for s in (1, 2, 3)] == [draw_attempt(WIDE, s)[1] for s in (1, 2, 3)]
