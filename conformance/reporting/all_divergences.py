"""Every divergence of one case, printed: what ``replay --all`` and ``mutate --replay``
show (the first divergence is all a run's report keeps)."""

from __future__ import annotations

from typing import Any

from dsh_conformance.judge.compare import divergences
from dsh_conformance.reporting.report import CaseRecord
from dsh_conformance.textio.terminal import say as print  # noqa: A001


def print_all_divergences(expected: Any, actual: Any, profiles: set[str], rec: CaseRecord) -> None:
    """``replay --all``: every divergence of the case, each with its place and rules, then
    the invariants the implementation's trace breaks."""
    found = divergences(expected, actual, profiles)
    print(f"{len(found)} divergence{'s' if len(found) != 1 else ''}, {len(rec.violations)} broken invariant"
          f"{'s' if len(rec.violations) != 1 else ''}")
    for n, d in enumerate(found, 1):
        print(f"\n{n}. " + d.describe().replace("first divergence at ", "at ", 1))
    for v in rec.violations:
        print(f"\ninvariant {v['rule']}: {v['message']}")
