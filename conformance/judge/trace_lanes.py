"""Two traces side by side, as the comparison sees them: lane by lane, row by row.

``conformance.compare`` finds the first divergence; a person reading a failure also wants
to see the two traces around it and whatever else differs. The lanes here are the ones
the comparison walks, in its order: each call's portable observations (an abandoned
approval's answerers in a lane of their own), the session events the profiles speak of
(in a parallel pool, the starts, commits and the rest apart), the final results by call,
and the warnings (reference). Each row pairs the items at one position and says whether
they agree under the profiles, so that every lane's first divergence can be listed, not
only the one the comparison reports. The row names (``observations[c1][3]``,
``events[5]``, ``results[c1]``, ``warnings``) are the comparison's ``where``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsh_conformance.kit.trace import Trace

from dsh_conformance.judge import agreement, compare
from dsh_conformance.judge.lanes import compared_warnings, event_lanes, observation_lanes, result_pairs
from dsh_conformance.judge.masks import masks_for


@dataclass(frozen=True)
class Row:
    where: str
    expected: Any  # None: no item on this side
    actual: Any
    agree: bool


@dataclass(frozen=True)
class Lane:
    name: str
    rows: list[Row]

    @property
    def first_divergence(self) -> Row | None:
        return next((r for r in self.rows if not r.agree), None)


def _paired(name: str, expected: list[Any], actual: list[Any], same: Any) -> Lane:
    rows = []
    for i in range(max(len(expected), len(actual))):
        e = expected[i] if i < len(expected) else None
        a = actual[i] if i < len(actual) else None
        rows.append(Row(f"{name}[{i}]", e, a, e is not None and a is not None and same(e, a)))
    return Lane(name, rows)


def lanes(expected: Trace, actual: Trace, profiles: set[str]) -> list[Lane]:
    """The compared lanes of ``expected`` (the oracle's trace) and ``actual``: the very
    lanes ``judge.compare`` walks, row by row."""
    same = agreement.matcher(profiles)
    outcomes = compare.LoopOutcomes(expected, profiles, masks_for(profiles), same)  # P107's results as the judge reads them
    out = [_paired(name, [i.item for i in es], [i.item for i in acts], same)
           for name, es, acts in observation_lanes(expected, actual)]
    out += [_paired(name, el, al, outcomes.same_event) for name, el, al in event_lanes(expected, actual, profiles)]
    out.append(Lane("results", [Row(f"results[{call}]", e, a, e is not None and a is not None
                                    and outcomes.same_result(call, e, a))
                                for call, e, a in result_pairs(expected, actual)]))
    warned = compared_warnings(expected, actual, profiles)
    if warned is not None:
        out.append(Lane("warnings", [Row("warnings", warned.expected, warned.actual, agreement.warnings_agree(warned.expected, warned.actual))]))
    return [lane for lane in out if lane.rows]


def divergences(all_lanes: list[Lane]) -> list[Row]:
    """Each lane's first divergence, in the comparison's order."""
    return [row for lane in all_lanes if (row := lane.first_divergence) is not None]


__all__ = ["Row", "Lane", "lanes", "divergences"]
