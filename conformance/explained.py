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

from .compare import first_divergence
from .expectations import Expectations
from .masks import within

Laws = Callable[[Scenario, Trace], list[dict[str, str]]]


def explained(expectations: Expectations, scenario: Scenario, actual: Trace, checked: set[str],
              failing: list[str], violations: list[dict[str, Any]], laws: Laws) -> str | None:
    """Why the failure of ``actual`` is expected after all, or None: the listed departures
    the oracle can compute, when the reference computed with them is the answer. The reason
    names only the departures the answer needs (each one without which the reference no
    longer gives it), not every one the implementation lists."""
    departures = departures_of(expectations.rules)
    if not departures or not _gives(scenario, departures, actual, checked, violations, laws):
        return None
    needed = set(departures)
    for rule in sorted(departures, key=lambda r: int(r[1:])):
        if len(needed) > 1 and _gives(scenario, frozenset(needed - {rule}), actual, checked, violations, laws):
            needed.discard(rule)
    listed = sorted(needed, key=lambda r: int(r[1:]))
    why = "; ".join(dict.fromkeys(expectations.rules[r] for r in listed))
    extra = [r for r in failing if r not in expectations.rules]
    follows = f"{', '.join(extra)} follow{'s' if len(extra) == 1 else ''} from it: " if extra else ""
    return (f"{why} ({follows}the reference computed with the listed departure{'s' if len(listed) > 1 else ''} "
            f"{', '.join(listed)}, {'; '.join(KNOWN[r] for r in listed)}, gives this answer)")


def _gives(scenario: Scenario, departures: frozenset[str], actual: Trace, checked: set[str],
           violations: list[dict[str, Any]], laws: Laws) -> bool:
    """Whether the reference computed with ``departures`` is ``actual`` under ``checked``,
    and ``actual`` breaks no law there that this variant reference does not break as well."""
    try:
        variant = run_scenario(scenario, departures)
    except Exception:  # noqa: BLE001 - a variant the oracle cannot compute explains nothing
        return False
    if first_divergence(variant, actual, checked) is not None:
        return False
    allowed = {v["rule"] for v in laws(scenario, variant)}
    return not any(v["rule"] not in allowed for v in violations if within([v["rule"]], checked))
