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

from oracle.trace import Trace

from . import compare


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


def _paired(name: str, expected: list[Any], actual: list[Any], exact: bool) -> Lane:
    rows = []
    for i in range(max(len(expected), len(actual))):
        e = expected[i] if i < len(expected) else None
        a = actual[i] if i < len(actual) else None
        rows.append(Row(f"{name}[{i}]", e, a, e is not None and a is not None and compare.agree(e, a, exact)))
    return Lane(name, rows)


def lanes(expected: Trace, actual: Trace, profiles: set[str]) -> list[Lane]:
    """The compared lanes of ``expected`` (the oracle's trace) and ``actual``."""
    exact = "reference" in profiles
    exp_obs, act_obs = compare.observations_by_call(expected), compare.observations_by_call(actual)
    for call in compare._abandoned_answers(expected):
        exp_obs, act_obs = compare._answerer_lane(exp_obs, call), compare._answerer_lane(act_obs, call)
    out = []
    for call in list(exp_obs) + [c for c in act_obs if c not in exp_obs]:
        out.append(_paired(f"observations[{call}]", [i[0] for i in exp_obs.get(call, [])],
                           [i[0] for i in act_obs.get(call, [])], exact))
    ee, ae = compare.events_for(expected, profiles), compare.events_for(actual, profiles)
    if compare._pooled(expected):
        for name, keep in compare.LANES:
            out.append(_paired(name, [ev for ev in compare._lane_view(ee) if keep(ev)],
                               [ev for ev in compare._lane_view(ae) if keep(ev)], exact))
    else:
        out.append(_paired("events", ee, ae, exact))
    exp_res = {r.callId: r.model_dump(mode="json") for r in expected.results}
    act_res = {r.callId: r.model_dump(mode="json") for r in actual.results}
    rows = []
    for call in list(exp_res) + [c for c in act_res if c not in exp_res]:
        e, a = exp_res.get(call), act_res.get(call)
        rows.append(Row(f"results[{call}]", e, a, e is not None and a is not None and compare.agree(e, a, exact)))
    out.append(Lane("results", rows))
    if exact:
        out.append(Lane("warnings", [Row("warnings", expected.warnings, actual.warnings,
                                         compare._warnings_agree(expected.warnings, actual.warnings))]))
    return [lane for lane in out if lane.rows]


def divergences(all_lanes: list[Lane]) -> list[Row]:
    """Each lane's first divergence, in the comparison's order."""
    return [row for lane in all_lanes if (row := lane.first_divergence) is not None]


__all__ = ["Row", "Lane", "lanes", "divergences"]
