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
    # P11: rc.8 deep-freezes only what createSuccessResult and materializeFinalResult build
    # (a success, a denial, the final outcome); toolErrorResult, the abort results, the
    # results rebuilt around deferred contexts or a wrapper's authored one, and whatever
    # next() resolves to in tools/execute are plain objects, and a write into one applies.
    "P11": "only successes, denials and final outcomes deep-frozen: failures, aborts, rebuilt results and "
           "what next() resolves to reach wrappers and post-execute listeners writable, and writes apply",
    # P119 clarification (CM:330, 344): the reference counts sub-calls per run of run_code's
    # body, so a tools/execute wrapper's retry (P69) numbers its sub-calls from 1 again.
    "P119": "sub-calls numbered per run of run_code's body: a retry through next() reuses the ids",
}


def departures_of(rules: object) -> frozenset[str]:
    """The rules among ``rules`` (ids) that the oracle can depart on."""
    return frozenset(r for r in rules if isinstance(r, str) and r in KNOWN)  # type: ignore[attr-defined]
