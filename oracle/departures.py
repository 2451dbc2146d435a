"""The reference's stated departures from the spec, as variants of the oracle.

Where the spec states what the reference release does and requires something else (P119's
clarification: the reference numbers sub-calls per run of the body), the oracle can compute
the reference *with* that departure. The suite uses it to tell which divergences a listed
departure explains: a failure is a consequence of the departures an implementation is
expected to have exactly when the trace computed with those departures agrees with the
implementation's answer (nothing else differs), so no consequence is listed by hand.

Only a departure the spec words precisely enough to compute is here; each key is the rule
the departure breaks, each value says what the variant does.
"""

from __future__ import annotations

KNOWN: dict[str, str] = {
    # P119 clarification (CM:330, 344): the reference counts sub-calls per run of run_code's
    # body, so a tools/execute wrapper's retry (P69) numbers its sub-calls from 1 again.
    "P119": "sub-calls numbered per run of run_code's body: a retry through next() reuses the ids",
}


def departures_of(rules: object) -> frozenset[str]:
    """The rules among ``rules`` (ids) that the oracle can depart on."""
    return frozenset(r for r in rules if isinstance(r, str) and r in KNOWN)  # type: ignore[attr-defined]
