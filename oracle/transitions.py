"""P2's table of allowed transitions between the stages of one call, as data.

Each row is the spec's: from a stage, on an outcome, to a stage. "post-execute (denied)" is
post-execute reached by a denial (P3: the body never runs). The outcomes are named as the
flow model names the evidence of its edges (catalogs/tool-execution-pipeline.flow.yaml),
and tests/test_decisions.py holds this table against that model: every row is a drawn
edge, and every drawn edge between these stages is a row.

Beyond the table only the rules of ``BEYOND`` add transitions, each to post-execute or to
final (entry checks, cancellation checkpoints, guard denials that cannot be materialized,
normalization failures). The gate law (conformance/laws/gate.py) reads the table to know
which stages may still run after a transition.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..kit.decisions import GRANTED, OUTCOMES

PRE_EXECUTE, APPROVAL, GUARDS, EXECUTE = "pre-execute", "approval", "guards", "tools/execute"
DENIED, POST_EXECUTE, FINAL, MATERIALIZATION = "post-execute (denied)", "post-execute", "final", "materialization"
STAGES = (PRE_EXECUTE, APPROVAL, GUARDS, EXECUTE, DENIED, POST_EXECUTE, FINAL, MATERIALIZATION)


@dataclass(frozen=True)
class Transition:
    source: str
    outcomes: tuple[str, ...]
    target: str


TRANSITIONS: tuple[Transition, ...] = (
    Transition(PRE_EXECUTE, ("allow",), GUARDS),
    Transition(PRE_EXECUTE, ("deny",), DENIED),
    Transition(PRE_EXECUTE, ("ask",), APPROVAL),
    Transition(PRE_EXECUTE, ("throw", "invalid-decision"), FINAL),  # or a result that is not well formed
    Transition(APPROVAL, (GRANTED,), GUARDS),
    Transition(APPROVAL, (*(o for o in OUTCOMES if o != GRANTED), "no-service", "no-agent"), DENIED),
    Transition(APPROVAL, ("throw", "invalid-outcome"), FINAL),  # or an outcome outside the vocabulary
    Transition(GUARDS, ("abstain",), EXECUTE),  # no denial
    Transition(GUARDS, ("deny",), DENIED),
    Transition(GUARDS, ("throw",), FINAL),
    Transition(EXECUTE, ("returned",), POST_EXECUTE),
    Transition(EXECUTE, ("throw",), FINAL),
    Transition(DENIED, ("decision", "throw"), MATERIALIZATION),  # post-execute, reached by a denial
    Transition(POST_EXECUTE, ("decision", "throw"), MATERIALIZATION),
    Transition(FINAL, ("next",), MATERIALIZATION),
)
"""P2: "The only transitions between stages are these"."""

BEYOND = ("P27", "P28", "P29", "P42", "P53", "P68", "P47", "P64")
"""P2: the only rules that add transitions beyond the table (each to post-execute or final)."""


def after(source: str, outcome: str) -> str:
    """Where ``outcome`` of ``source`` leads (P2); KeyError when the table has no such row."""
    for t in TRANSITIONS:
        if t.source == source and outcome in t.outcomes:
            return t.target
    raise KeyError(f"P2 has no transition from {source} on {outcome}")


@cache
def reachable(stage: str) -> frozenset[str]:
    """The stages a call at ``stage`` may still reach (``stage`` included)."""
    out = {stage}
    for t in TRANSITIONS:
        if t.source == stage:
            out |= reachable(t.target)
    return frozenset(out)


def upstream(stage: str) -> frozenset[str]:
    """The stages a call at ``stage`` may have passed through (``stage`` included)."""
    return frozenset(s for s in STAGES if stage in reachable(s))
