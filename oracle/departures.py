"""The reference's departures from the spec, as variants of the oracle.

Where the reference release does something else than the spec requires, and what it does
is known precisely (P119: the spec's clarification; P11 and P24: rc.8's own code, the
package tools/dsh-adapter installs, lib/index.js createExecution, notifyResult,
materializeFinalResult and toolErrorResult), the oracle can compute the reference *with*
that departure. The suite uses it to tell which divergences a listed departure explains
(``conformance.explained``): a failure is a consequence of the departures an implementation
is expected to have when the trace computed with those departures is the implementation's
answer, so no consequence is listed by hand.

Each key is the rule the departure breaks, each value says what the variant does. A write
whose consequences the oracle does not compute raises ``NotComputable``: it explains nothing.
"""
from __future__ import annotations

from ..kit.jsvalue import UNDEFINED, JsValue, clone, is_undefined
from ..kit.record import Record
from ..kit.scenario_checks import ScenarioError

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
    # P24: rc.8's record (createExecution) is a plain object until Object.freeze(exec) in
    # notifyResult: a write of an identity field applies, and every later stage reads the field
    # off the record (resolution and dispatch by exec.name, scopes by exec.agent, the body's
    # exec.arguments, run_code's sub-call ids from exec.callId and exec.rootCallId, its
    # sub-calls' parent exec.token, the canonical mark by exec.token).
    "P24": "the record a plain object until the freeze before tools/result: identity writes apply and later "
           "stages read what was written (a forged agent is no scope's, and run_code's bridge stalls on it)",
}


class NotComputable(ScenarioError):
    """A write whose consequences under a departure the oracle does not compute: the variant
    reference explains nothing then (``conformance.explained``)."""


def write_identity(rec: Record, key: str, op: str, value: JsValue, agents: frozenset[str]) -> None:
    """Carry out a participant's write of ``rec``'s identity field ``key`` as rc.8's plain
    record does (P24 departure). Only values whose reading later stages agree on are computed:
    a string where a string was (name, callId, rootCallId, token, parent), any value but
    undefined as the arguments (the adapter's body is handed no arguments then), and the
    removal of agent and parent (undefined, as for a record without them). A string written as
    the agent is no agent object of the scenario (``agents``, by id) but a forged key: no
    scope's (``World.forged``); a run_code body whose bridge then dispatches stalls
    (``code_mode``: rc.8's lane reads the forged agent's session). Where a forged agent meets
    an approval or a session, the oracle does not compute it."""
    v = UNDEFINED if op == "delete" else clone(value)
    if key == "arguments" and not is_undefined(v):
        rec.arguments = v  # not a snapshot and not frozen: what the body and render are handed now
    elif key in ("agent", "parent") and is_undefined(v):
        setattr(rec, key, None)  # `!== undefined` is how rc.8 reads both
    elif key == "agent" and isinstance(v, str) and v not in agents:
        rec.agent = v  # a forged key, not the scenario's agent of that id (World.forged)
    elif isinstance(v, str) and key in ("name", "rootCallId", "token", "parent"):
        setattr(rec, key, v)
    elif isinstance(v, str) and key == "callId":
        rec.written_call_id = v
    else:
        raise NotComputable(f"record.{key}", f"the reference's P24 departure with {op} of this value is not computed")


def departures_of(rules: object) -> frozenset[str]:
    """The rules among ``rules`` (ids) that the oracle can depart on."""
    return frozenset(r for r in rules if isinstance(r, str) and r in KNOWN)  # type: ignore[attr-defined]
