"""How many cases the implementation answered ``skipped``, per profile, and whether that is
too many (``run --max-skipped FRACTION``).

A skip is the implementation's honest answer for a feature it cannot express, but a run
that skipped most of what it was sent says little: a port that skipped 68 of 100 generated
scenarios once passed with nothing said. The summary, the report's footer, the Markdown and
HTML views show the skips of each profile (a case counts for each profile of the rules it
cites; a generated draw likewise, folded into its run's case), and a run whose skipped share
of what was asked exceeds ``--max-skipped`` fails (exit 1).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from dsh_conformance.defaults import DEFAULT_MAX_SKIPPED
from dsh_conformance.spec.rules import PROFILES, rules
_NOT_ASKED = frozenset({"not-scored", "not-run"})


def _profiles_of(rule_ids: Iterable[str]) -> set[str]:
    index = rules()
    return {"core"} | {index[r].profile for r in rule_ids if r in index}


def skip_counts(records: Iterable[Any]) -> tuple[dict[str, int], int, int]:
    """(skipped per profile in the spec's order, skipped in all, asked in all): corpus and
    shrunk cases one each, a folded generated case by its draws (``skipped_draws``)."""
    per: Counter[str] = Counter()
    skipped = asked = 0
    for r in records:
        outcome = r.outcome.value
        if r.draws is not None and r.source == "property" and r.id.startswith("generated-seed-"):
            by = r.skipped_draws or {}
            per.update({p: n for p, n in by.items() if p != "all"})
            skipped += by.get("all", 0)
            asked += r.draws
            continue
        if outcome in _NOT_ASKED:
            continue
        asked += 1
        if outcome == "skip":
            skipped += 1
            per.update(_profiles_of(r.rules))
    return {p: per[p] for p in PROFILES if per[p]}, skipped, asked


def footer_skips(records: Iterable[Any]) -> dict[str, int]:
    """A footer's ``skipped``: per profile, ``all`` and ``asked`` (a run's and a merge's alike)."""
    per, skipped, asked = skip_counts(records)
    return {**per, "all": skipped, "asked": asked}


def skipped_fraction(records: Iterable[Any]) -> float:
    _, skipped, asked = skip_counts(records)
    return skipped / asked if asked else 0.0


def too_many_skipped(records: Iterable[Any], limit: float | None) -> str | None:
    """Why the run skipped too much, or None (``limit`` None: no limit)."""
    if limit is None:
        return None
    _, skipped, asked = skip_counts(records)
    if asked and skipped / asked > limit:
        return (f"the implementation skipped {skipped} of the {asked} scenarios it was asked "
                f"({skipped / asked:.0%}), more than --max-skipped {limit:g}")
    return None


def describe(records: Iterable[Any]) -> str:
    """One line: the skips per profile, or an empty string when nothing was skipped."""
    per, skipped, asked = skip_counts(records)
    if not skipped:
        return ""
    return (f"skipped {skipped} of {asked} scenarios asked ({skipped / asked:.0%}): "
            + ", ".join(f"{p} {n}" for p, n in per.items()))


def draw_skips(docs: Iterable[dict[str, Any]]) -> dict[str, int]:
    """``skipped_draws`` of a folded generated case: its skipped draws per profile of their
    cited rules, and ``all``."""
    docs = list(docs)
    out: Counter[str] = Counter()
    for d in docs:
        out.update(_profiles_of(d.get("rules") or []))
    return {**{p: out[p] for p in PROFILES if out[p]}, "all": len(docs)}


__all__ = ["DEFAULT_MAX_SKIPPED", "skip_counts", "footer_skips", "skipped_fraction", "too_many_skipped", "describe", "draw_skips"]
