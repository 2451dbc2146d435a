"""Failures that the listed departures of an implementation explain.

An expectations file lists the rules an implementation departs from. A failing case whose
every failing rule is listed is expected (``Expectations.reason``). A case may also fail on
rules that are not listed and that follow from a listed departure: the same departure shows
through later stages (P119's reused sub-call id through P98, P121, P19). Such a consequence
is not listed by hand: for the departures the oracle can compute (``oracle.departures``), the
reference is computed again *with* them, and the answer is judged against that variant as the
suite judges it against the reference: the failure is explained when the two agree under the
checked profiles, or first part where a listed departure the oracle does not compute shows
(rc.8's unvalidated post-execute decisions, P78, in another call than a P24 write), and the
answer breaks no law that the variant reference does not break as well. Anything else the
implementation does differently still shows, so an unlisted fault beside a listed departure
stays unexpected. An answer ``errored`` because its run never settles is expected the same way
when the variant reference never settles either (``explained_error``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsh_conformance.kit.driver import ScenarioRunError
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
    the oracle can compute, when the reference computed with them is the answer, or differs
    from it first where another listed departure (one the oracle does not compute) shows. The
    reason names only the departures the answer needs (each one without which the reference
    no longer gives it), not every one the implementation lists."""
    if not expectations.rules:
        return None
    departures = departures_of(expectations.rules)
    shown = _judged(scenario, departures, actual, checked, violations, laws, expectations)
    if shown is None:
        return None
    extra = [r for r in failing if r not in expectations.rules]
    if not departures:  # only listed rules the oracle does not compute: what follows from them
        if not shown or not extra:
            return None
        why = "; ".join(dict.fromkeys(expectations.rules[r] for r in shown))
        return f"{why} ({', '.join(extra)} follow{'s' if len(extra) == 1 else ''} from the routing it breaks)"
    needed = set(departures)
    for rule in sorted(departures, key=lambda r: int(r[1:])):
        if len(needed) > 1:
            without = _judged(scenario, frozenset(needed - {rule}), actual, checked, violations, laws, expectations)
            if without is not None:
                needed.discard(rule)
                shown = without
    computed = sorted(needed, key=lambda r: int(r[1:]))
    why = "; ".join(dict.fromkeys(expectations.rules[r] for r in [*computed, *shown]))
    follows = f"{', '.join(extra)} follow{'s' if len(extra) == 1 else ''} from it: " if extra else ""
    return (f"{why} ({follows}the reference computed with the listed departure{'s' if len(computed) > 1 else ''} "
            f"{', '.join(computed)}, {'; '.join(KNOWN[r] for r in computed)}, gives this answer"
            + (f" up to {', '.join(shown)}" if shown else "") + ")")


def _judged(scenario: Scenario, departures: frozenset[str], actual: Trace, checked: set[str],
            violations: list[dict[str, Any]], laws: Laws, expectations: Expectations) -> list[str] | None:
    """``actual`` judged against the reference computed with ``departures`` as the suite
    judges it against the reference: the listed rules its first divergence there is put down
    to (none when the two agree under ``checked``), or None when the failure is not expected
    then: that divergence is put down to a rule not listed, or ``actual`` breaks a law the
    variant reference does not break as well."""
    try:
        variant = run_scenario(scenario, departures)
    except Exception:  # noqa: BLE001 - a variant the oracle cannot compute explains nothing
        return None
    divergence = first_divergence(variant, actual, checked)
    # A law the answer breaks is explained when the variant breaks it too, when the rule is
    # listed, or when it follows from the divergence's broken routing (Divergence.follows).
    allowed = {v["rule"] for v in laws(scenario, variant)} | set(expectations.rules)
    allowed |= set(divergence.follows) if divergence is not None else set()
    if any(v["rule"] not in allowed for v in violations if within([v["rule"]], checked)):
        return None
    if divergence is None:
        return []
    # A listed departure the oracle does not compute shows first (rc.8's P78 beside a P24
    # write in another call): the answer is the variant's up to it, as the judge reads a
    # failure up to its first divergence.
    # What follows from a broken routing rule (P2's table, the stage that ran instead) is that
    # rule's consequence, as the judge's blame says (``Divergence.follows``).
    cause = [r for r in divergence.rules if r not in divergence.follows]
    if cause and all(r in expectations.rules and r not in departures for r in cause):
        return sorted(cause, key=lambda r: int(r[1:]))
    return None


NEVER_SETTLES = "never settles"
"""What an answer that errored because its run never settled says (the JS kit's NeverSettles,
the Python kit's ScenarioRunError), and what the oracle says of a variant run that does not."""


def explained_error(expectations: Expectations, scenario: Scenario, message: str) -> str | None:
    """Why an errored answer is expected after all, or None: the implementation's run never
    settled, and the reference computed with the listed departures the oracle can compute
    never settles either (rc.8's P24: a participant writes run_code's agent, and its bridge
    stalls on the forged value: case code-forged-agent-stalls-the-bridge). Any other error,
    or a variant that settles, stays unexpected. The reason names the departures needed."""
    departures = departures_of(expectations.rules)
    if not departures or NEVER_SETTLES not in message or not _never_settles(scenario, departures):
        return None
    needed = set(departures)
    for rule in sorted(departures, key=lambda r: int(r[1:])):
        if len(needed) > 1 and _never_settles(scenario, frozenset(needed - {rule})):
            needed.discard(rule)
    listed = sorted(needed, key=lambda r: int(r[1:]))
    return (f"{'; '.join(dict.fromkeys(expectations.rules[r] for r in listed))} (the run never settles: the reference "
            f"computed with the listed departure{'s' if len(listed) > 1 else ''} {', '.join(listed)}, "
            f"{'; '.join(KNOWN[r] for r in listed)}, never settles either)")


def _never_settles(scenario: Scenario, departures: frozenset[str]) -> bool:
    try:
        run_scenario(scenario, departures)
    except ScenarioRunError as e:
        return NEVER_SETTLES in str(e)
    except Exception:  # noqa: BLE001 - a variant the oracle cannot compute explains nothing
        return False
    return False
