"""Failures that the listed departures of an implementation explain.

An expectations file lists the rules an implementation departs from. A failing case whose
every failing rule is listed is expected (``Expectations.reason``). A case may also fail on
rules that are not listed and that follow from a listed departure: the same departure shows
through later stages (P119's reused sub-call id through P98, P121, P19). Such a consequence
is not listed by hand: for the departures the oracle can compute (``oracle.departures``), the
reference is computed again *with* them, and the failure is explained when the answer then
agrees with it under the checked profiles, and the answer breaks no law that the variant
reference does not break as well. Anything else the implementation does differently still
shows, so an unlisted fault beside a listed departure stays unexpected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsh_conformance.oracle import Scenario, run_scenario
from dsh_conformance.oracle.departures import KNOWN, departures_of
from dsh_conformance.kit.trace import Trace

from dsh_conformance.judge.compare import first_divergence
from dsh_conformance.running.expectations import Expectations
from dsh_conformance.judge.masks import within

Laws = Callable[[Scenario, Trace], list[dict[str, str]]]


def explained(expectations: Expectations, scenario: Scenario, actual: Trace, checked: set[str],
              failing: list[str], violations: list[dict[str, Any]], laws: Laws) -> str | None:
    """Why the failure of ``actual`` is expected after all, or None: the listed departures
    the oracle can compute, when the reference computed with them is the answer."""
    departures = departures_of(expectations.rules)
    if not departures:
        return None
    try:
        variant = run_scenario(scenario, departures)
    except Exception:  # noqa: BLE001 - a variant the oracle cannot compute explains nothing
        return None
    if first_divergence(variant, actual, checked) is not None:
        return None
    allowed = {v["rule"] for v in laws(scenario, variant)}
    if any(v["rule"] not in allowed for v in violations if within([v["rule"]], checked)):
        return None
    listed = sorted(departures, key=lambda r: int(r[1:]))
    why = "; ".join(dict.fromkeys(expectations.rules[r] for r in listed))
    extra = [r for r in failing if r not in expectations.rules]
    follows = f"{', '.join(extra)} follow{'s' if len(extra) == 1 else ''} from it: " if extra else ""
    return (f"{why} ({follows}the reference computed with the listed departure{'s' if len(listed) > 1 else ''} "
            f"{', '.join(listed)}, {'; '.join(KNOWN[r] for r in listed)}, gives this answer)")
