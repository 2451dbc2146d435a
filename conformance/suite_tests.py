"""The conformance suite as pytest tests (collected by the plugin with ``--dsh-impl``). It
imports nothing of hypothesis or the strategies: the generated property, which needs them, is
``fuzz_tests.py``, collected with ``--dsh-fuzz`` only (issue 44: the pytest path's start-up)."""

from __future__ import annotations

import pytest

from dsh_conformance.spec.corpus import CASES
from dsh_conformance.reporting.report import Outcome
from dsh_conformance.running.references import corpus_items, expected_traces
from dsh_conformance.textio.terminal import visible

ITEMS = corpus_items(CASES)


def _verdict(rec):
    # The reasons and messages come from the implementation or an expectations file: pytest
    # prints them to the terminal, escaped like every other print of the suite's.
    if rec.outcome == Outcome.PASS:
        return
    if rec.outcome in (Outcome.XFAIL, Outcome.XERROR):
        pytest.xfail(visible(rec.expected_reason or "expected failure"))
    if rec.outcome in (Outcome.SKIP, Outcome.NOT_SCORED):
        pytest.skip(visible(rec.message or rec.outcome.value))
    pytest.fail(visible(f"{rec.outcome.value}: {rec.message}"), pytrace=False)


@pytest.mark.parametrize("item", [pytest.param(i, id=i[0]) for i in ITEMS])
def test_case(item, dsh_runner):
    case_id, doc, path = item  # its rules are its keywords and marker (plugin.pytest_collection_modifyitems)
    # The oracle's trace as run reads it: from the reference cache when it holds the case.
    expected = expected_traces([item], CASES)[case_id]
    _verdict(dsh_runner.decide(case_id, doc, "corpus", path, expected=expected))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test of generated scenarios per seed of ``--dsh-seeds A-B`` (else ``--dsh-seed``):
    under pytest-xdist the seeds are dealt to the workers like the corpus cases."""
    if "seed" in metafunc.fixturenames:
        opt = metafunc.config.getoption
        seeds = opt("--dsh-seeds") or [opt("--dsh-seed")]
        metafunc.parametrize("seed", seeds, ids=[f"seed-{s}" for s in seeds])


def test_generated_scenarios(dsh_runner, request, seed):
    opt = request.config.getoption
    if opt("--dsh-examples") == 0:
        pytest.skip("--dsh-examples 0: the corpus only")
    rec = dsh_runner.run_properties(opt("--dsh-examples"), seed, frozenset(dsh_runner.iut_profiles))
    if rec is not None:
        _verdict(rec)
