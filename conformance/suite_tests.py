"""The conformance suite as pytest tests (collected by the plugin with ``--dsh-impl``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from dsh_conformance.corpus import CASES
from dsh_conformance.iut import IUTFailure, NotAnImplementation
from dsh_conformance.plugin import EXPECTATIONS_KEY, IUT_KEY
from dsh_conformance.report import Outcome
from dsh_conformance.rules import ORACLE_PROFILES
from dsh_conformance.kit import jsontext
from dsh_conformance.outputs import write_atomic
from dsh_conformance.runner import Runner, content_id, corpus_items
from dsh_conformance.strategies.citation import observation_kinds
from dsh_conformance.strategies.scenarios import examples
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
def test_case(item, dsh_runner):
    case_id, doc, path = item  # its rules are its keywords and marker (plugin.pytest_collection_modifyitems)
    _verdict(dsh_runner.decide(case_id, doc, "corpus", path))


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
    write_atomic(path, jsontext.dumps({**doc, "id": case_id, "title": "failing scenario of test_property"},
                                      indent=1) + "\n")
    for earlier in _SAVED:
        if earlier != path:
            earlier.unlink(missing_ok=True)
    _SAVED[:] = [path]
    return path


@pytest.mark.skipif("not config.getoption('--dsh-fuzz')", reason="the generated property as a hypothesis test: "
                    "--dsh-fuzz (for hypothesis fuzz); test_generated_scenarios runs the default draws")
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
