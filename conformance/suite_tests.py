"""The conformance suite as pytest tests (collected by the plugin with ``--dsh-impl``)."""

from __future__ import annotations

import pytest

from dsh_conformance.corpus import CASES
from dsh_conformance.iut import IUTFailure, NotAnImplementation
from dsh_conformance.plugin import EXPECTATIONS_KEY, IUT_KEY
from dsh_conformance.report import Outcome
from dsh_conformance.rules import ORACLE_PROFILES
from dsh_conformance.runner import Runner, corpus_items
from dsh_conformance.terminal import visible

ITEMS = corpus_items(CASES)


@pytest.fixture(scope="session")
def dsh_runner(request: pytest.FixtureRequest):
    opt = request.config.getoption
    if not opt("--dsh-impl"):
        pytest.skip("no --dsh-impl given")
    iut = request.config.stash[IUT_KEY]
    if isinstance(iut, IUTFailure):
        raise iut
    try:
        iut.start()
    except NotAnImplementation as e:  # found by the worker process that imports it: one usage error
        pytest.exit(str(e), returncode=pytest.ExitCode.USAGE_ERROR)
    runner = Runner(iut, set(opt("--dsh-profile") or ORACLE_PROFILES), request.config.stash[EXPECTATIONS_KEY],
                    give_up_after=opt("--dsh-give-up-after"))
    yield runner
    iut.close()


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
def test_case(item, dsh_runner, request):
    case_id, doc, path = item
    for r in doc.get("rules", []):
        request.node.add_marker(pytest.mark.rules(r))
    _verdict(dsh_runner.decide(case_id, doc, "corpus", path))


def test_generated_scenarios(dsh_runner, request):
    opt = request.config.getoption
    if opt("--dsh-examples") == 0:
        pytest.skip("--dsh-examples 0: the corpus only")
    rec = dsh_runner.run_properties(opt("--dsh-examples"), opt("--dsh-seed"), frozenset(dsh_runner.iut_profiles))
    if rec is not None:
        _verdict(rec)
