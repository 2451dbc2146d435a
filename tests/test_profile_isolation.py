"""Profile isolation, run for real (spec section 2, verdicts per profile; issue 39 B).

Each mode of ``tests/fakes/core_variant.py`` named here is the oracle with one change that
only a `reference` rule fixes: guard order (P45), a cursor per listener (P6), feedback blocks
that do not throw (P84), an empty context list kept on a finalizer failure (P92). Each is a
port the spec allows under ``core``: ``--profiles core`` (corpus and generated draws) passes
it; ``--profiles core,reference`` fails it, and blames the rule that fixes the difference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


from .conftest import run_fake_module

# mode: the reference rule that fixes what the mode changes
VARIANTS = {"guards-reversed": "P45", "cursor-unshared": "P6", "feedback-lenient": "P84",
            "finalizer-contexts": "P92"}


def _run(tmp_path: Path, variant: str, *args: str) -> tuple[int, Any, str]:
    return run_fake_module(tmp_path, "core_variant", {"CORE_VARIANT": variant}, *args)


@pytest.mark.rules("P6", "P45", "P84", "P92")
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_variation_only_reference_fixes_passes_core_and_fails_reference_on_its_rule(tmp_path, variant):
    code, rep, out = _run(tmp_path, variant, "--profiles", "core")
    assert code == 0, out[-3000:]
    assert not [c.id for c in rep.cases if c.outcome.value in ("fail", "skip")]
    code, rep, out = _run(tmp_path, variant, "--profiles", "core,reference", "--examples", "0")
    assert code == 1, out[-3000:]
    failed = {c.id: c.failing_rules for c in rep.cases if c.outcome.value == "fail"}
    assert failed
    rule = VARIANTS[variant]
    # every failure is put down to the rule that fixes the change (blame on the rule concerned)
    assert all(rule in rules for rules in failed.values()), failed
