"""Oracle-independent laws that hold for every trace of every scenario.

``check(scenario, trace)`` returns the violations of the laws listed in ``LAWS``. The
framework (``View``, ``Violation``, ``law``) is ``laws.framework``; the laws are one module
per theme: ``ordering`` (stage order), ``gate`` (the ways through pre-execute, approval and
the guards), ``outcomes`` (final results and their notification), ``immutability``
(protected writes, identity, frozen results), ``adjacency`` (the agent loop) and
``code_mode`` (``run_code``'s runs and its sub-calls) with ``code_mode_results`` (what a run
comes to). A law a module marks with ``@law`` runs only
once it is listed here (tests/test_layers.py holds the list against the marked functions).
"""

from __future__ import annotations

from dsh_conformance.kit.scenario import Scenario
from dsh_conformance.kit.trace import Trace

from dsh_conformance.laws import adjacency, code_mode, code_mode_results, gate, immutability, ordering, outcomes
from dsh_conformance.laws.framework import Law, View, Violation, law, view

LAWS: tuple[Law, ...] = (
    ordering.stage_order,
    ordering.stages_once,
    ordering.stage_brackets,
    ordering.output_projections,
    gate.gate_transitions,
    gate.guards_before_dispatch,
    outcomes.final_results,
    outcomes.one_notification,
    gate.denials_fail,
    outcomes.finalize_content_only,
    immutability.no_protected_write_succeeds,
    immutability.identity_is_the_calls_own,
    immutability.handed_results_frozen,
    ordering.ui_projections_outside,
    ordering.body_work_within_body,
    adjacency.direct_runs_inject_nothing,
    gate.approval_audit_pairs,
    adjacency.loop_calls_and_results,
    adjacency.contexts_after_the_batch,
    adjacency.barriers_and_pools,
    adjacency.ordered_stages_in_model_order,
    code_mode.sub_call_numbering,
    code_mode.sub_calls_stay_off_the_model_log,
    code_mode.dispatch_logging,
    code_mode.sub_call_identity,
    code_mode.one_ordered_lane,
    code_mode.exclusive_and_pooled_sub_calls,
    code_mode_results.bindings_settle_with_the_outcome,
    code_mode_results.run_lifetime,
    code_mode_results.contexts_ride_on_the_parent,
    code_mode_results.turn_conclusion_from_sub_calls,
    code_mode_results.run_value_and_content,
)
"""Every law that runs, in the order their violations are reported (the order the suite
has always reported them in, so that a divergence's blame stays comparable across runs)."""

THEMES = (ordering, gate, outcomes, immutability, adjacency, code_mode, code_mode_results)


def check(scenario: Scenario, trace: Trace) -> list[Violation]:
    """Every violation of the laws by ``trace``, a trace of ``scenario`` (oracle or IUT)."""
    v = view(scenario, trace)
    return [violation for fn in LAWS for violation in fn(v)]


__all__ = ["LAWS", "THEMES", "Law", "View", "Violation", "check", "law", "view"]
