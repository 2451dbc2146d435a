"""The generated property as a hypothesis test, ``test_property``: collected by the plugin with
``--dsh-impl`` and ``--dsh-fuzz`` only, for HypoFuzz (``hypothesis fuzz -- --dsh-impl CMD
--dsh-fuzz``); a session without ``--dsh-fuzz`` does not import it, nor hypothesis' engine
and the strategies it draws from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from dsh_conformance.kit import jsontext
from dsh_conformance.textio.outputs import write_atomic
from dsh_conformance.reporting.report import Outcome
from dsh_conformance.running.properties import content_id
from dsh_conformance.strategies.citation import observation_kinds
from dsh_conformance.strategies.scenarios import examples
from dsh_conformance.textio.terminal import visible

# Outcomes of a drawn scenario that are no failure of the implementation.
_ACCEPTED = (Outcome.PASS, Outcome.XFAIL, Outcome.XERROR, Outcome.SKIP, Outcome.NOT_SCORED)
_SAVED: list[Path] = []  # the failing scenarios this process saved; only the latest is kept


def _save_failure(directory: Path, doc: dict[str, Any]) -> Path:
    """Save a failing scenario as a case file ``dsh-conformance replay`` re-runs. Shrinking
    (hypothesis' or HypoFuzz's) fails on ever smaller scenarios and re-runs the smallest
    last: an earlier file of this process is removed, so the one left is the shrunk one."""
    case_id = content_id(doc)
    path = directory / f"{case_id}.json"
    directory.mkdir(parents=True, exist_ok=True)
    try:
        write_atomic(path, jsontext.dumps({**doc, "id": case_id, "title": "failing scenario of test_property"},
                                          indent=1) + "\n")
    finally:  # even when interrupted (a fuzzer stopped mid-save): one file is left, not two
        if path.exists():
            for earlier in _SAVED:
                if earlier != path:
                    earlier.unlink(missing_ok=True)
            _SAVED[:] = [path]
    return path


# derandomize=False: a fuzzer's search is random by nature, and hypothesis' "ci" profile (chosen
# when CI is set) derandomizes, which HypoFuzz refuses ("sets_derandomize").
@settings(deadline=None, derandomize=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.large_base_example, HealthCheck.filter_too_much])
@given(data=st.data())
def test_property(dsh_runner, pytestconfig, data):
    """One drawn scenario against the IUT: an ordinary hypothesis test (the default
    database, no seed), so that HypoFuzz's coverage-guided search, dashboard and shared
    example database drive it. Hypothesis' targeting steers toward draws that exercise
    many rules and many kinds of observation (the oracle's stage boundaries and steps). It
    draws the wide strategy (``strategies.scenarios.WIDE_ONLY``: foci the default run leaves out).
    Only fixtures HypoFuzz can supply (``request`` is not one: ``pytestconfig`` is)."""
    example = data.draw(examples(frozenset(dsh_runner.iut_profiles), wide=True, features=dsh_runner.iut_features),
                        label="scenario")
    target(float(len(example.doc.get("rules", ()))), label="distinct rules exercised")
    target(float(len(observation_kinds(example.trace))), label="distinct observations")
    rec = dsh_runner.decide(content_id(example.doc), example.doc, "property", scenario=example.scenario,
                            expected=example.trace)
    if rec.outcome in _ACCEPTED:
        return
    path = _save_failure(Path(pytestconfig.getoption("--dsh-failures")), example.doc)
    pytest.fail(visible(f"{rec.outcome.value}: {rec.message}") + f"\nsaved: {path}; replay: dsh-conformance replay {path} "
                f"--impl {pytestconfig.getoption('--dsh-impl')!r}", pytrace=False)
