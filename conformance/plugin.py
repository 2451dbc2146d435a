"""The pytest plugin: ``pytest --dsh-impl CMD`` checks an implementation under test.

With ``--dsh-impl`` the session collects the suite (``conformance/suite_tests.py``): one
test per corpus case, marked with the rules it cites, and one property test (the default
run's draws); with ``--dsh-fuzz`` also ``test_property``, the generated property as an
ordinary hypothesis test that HypoFuzz (``hypothesis fuzz``) can drive. Outcomes map
onto pytest's: pass; fail; expected failures and errors (``--dsh-expectations``) as xfail;
a skipped scenario or a profile the IUT does not support as skip; a broken IUT as an error.

Under pytest-xdist (``-n auto``, or ``--tx`` execnet gateways on other hosts) each worker
process configures and starts its own implementation: the cases and seeds are tests, and
xdist deals them.

Only the suite is collected, unless test paths are given on the command line: run from a
project's root, ``pytest --dsh-impl CMD`` must not also run that project's own tests (its
``testpaths``).

Imports: pytest loads this plugin in every session where the package is installed (its
``pytest11`` entry point), the project's own tests and any other project's included, and
most of those sessions never use the suite. So the module imports pytest alone, and each
hook imports what it needs when it runs (``lazy (start-up)`` at each such import).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).with_name("suite_tests.py")
FUZZ = Path(__file__).with_name("fuzz_tests.py")  # test_property, with --dsh-fuzz only
XDIST_FRAMES = 1000  # room for the frames an xdist worker's loop holds under each test


def pytest_addoption(parser: pytest.Parser) -> None:
    from dsh_conformance import argtypes  # the command line's own option types: one definition of each

    group = parser.getgroup("dsh-conformance")
    group.addoption("--dsh-impl", help="the implementation under test: oracle, dsh, py:MODULE or a command line")
    group.addoption("--dsh-profile", action="append", choices=["core", "reference", "loop", "code-mode"],
                    help="profiles to check (repeatable; default core, reference, loop)")
    group.addoption("--dsh-expectations", help="a YAML file of expected failures and errors, or the name of one "
                    "the suite ships (dsh-tools-0.1.0-rc.8)")
    group.addoption("--dsh-examples", type=argtypes.count(0), default=100, help="generated scenarios (default 100)")
    group.addoption("--dsh-seed", type=argtypes.whole, default=0, help="seed of the generated scenarios (default 0)")
    group.addoption("--dsh-seeds", type=argtypes.seed_range, metavar="A-B", help="a sweep: one test of generated "
                    "scenarios per seed from A to B, dealt to the workers under pytest-xdist (-n auto)")
    group.addoption("--dsh-timeout", type=argtypes.seconds, default=30.0,
                    help="seconds an IUT may take per scenario (default 30)")
    group.addoption("--dsh-give-up-after", type=argtypes.count(0), default=5,
                    help="declare the IUT broken after N consecutive timeouts or crashes (default 5; 0: never)")
    group.addoption("--dsh-validate", action="store_true", help="check every IUT message against the protocol "
                    "schemas, as run --validate does (default: as run does without it)")
    group.addoption("--dsh-fuzz", action="store_true", help="also collect the generated property as a hypothesis "
                    "test (test_property), for HypoFuzz: hypothesis fuzz -- --dsh-impl CMD --dsh-fuzz")
    group.addoption("--dsh-failures", default="dsh-failures",
                    help="where test_property saves a failing scenario as a case file (default dsh-failures)")


# What pytest_configure made of the options, for the suite's session fixture.
IUT_KEY = pytest.StashKey[object]()
EXPECTATIONS_KEY = pytest.StashKey[object]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rules(*ids): the spec rules (P1..Pn) a test checks")
    # lazy (start-up): see the module's docstring, "Imports"
    from dsh_conformance import worker_exit

    if worker_exit.is_worker(config):  # no KeyboardInterrupt traceback as an xdist worker exits
        config.pluginmanager.register(worker_exit, "dsh-conformance-worker-exit")
    if config.getoption("--dsh-impl"):
        _check_options(config)
        if hasattr(config, "workerinput"):
            # An xdist worker runs the tests below execnet's and xdist's own frames: the
            # deepest scenarios the input limits allow (P13) are judged with that much more.
            sys.setrecursionlimit(sys.getrecursionlimit() + XDIST_FRAMES)
        if config.getoption("--dsh-fuzz"):
            _fuzz_profile()
        _one_collection(config)
        suite = [str(SUITE)] + ([str(FUZZ)] if config.getoption("--dsh-fuzz") else [])
        if config.args_source == pytest.Config.ArgsSource.ARGS:
            config.args.extend(suite)  # paths the user named, and the suite
        else:
            config.args[:] = suite  # not the testpaths of the project it is run from


def _one_collection(config: pytest.Config) -> None:
    """pytest collects garbage five times as it ends, to surface exceptions raised in
    ``__del__``; with the suite's corpus and traces on the heap that is most of a second. One
    pass finds them as well (pytest's own pytester sets none)."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key  # pytest's, not public
    except ImportError:
        return
    config.stash[gc_collect_iterations_key] = 1


def _fuzz_profile() -> None:
    """HypoFuzz needs an example database and random search: hypothesis' "ci" profile (loaded
    when CI is set) has neither, so a fuzz session loads a profile of its own on top of the
    current one, with the default database in the current directory."""
    # lazy (start-up): hypothesis only in a fuzz session
    from hypothesis import settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    settings.register_profile("dsh-fuzz", parent=settings(), derandomize=False,
                              database=DirectoryBasedExampleDatabase(".hypothesis/examples"))
    settings.load_profile("dsh-fuzz")


def _check_options(config: pytest.Config) -> None:
    """What ``run`` refuses before any work, refused here as one usage error (option types
    are checked by argparse already): a profile the oracle lacks, an expectations file that
    is missing or wrong, an implementation spec that names none."""
    # lazy (start-up): only a session given --dsh-impl
    from dsh_conformance.argtypes import UsageError
    from dsh_conformance.running.expectations import load_named
    from dsh_conformance.iut.connect import make_iut
    from dsh_conformance.running.expectations import ExpectationsError
    from dsh_conformance.iut.connection import IUTFailure
    from dsh_conformance.spec.rules import ORACLE_PROFILES

    opt = config.getoption
    for p in opt("--dsh-profile") or []:
        if p not in ORACLE_PROFILES:
            raise pytest.UsageError(f"--dsh-profile {p}: the oracle does not implement this profile yet")
    try:
        config.stash[EXPECTATIONS_KEY] = load_named(opt("--dsh-expectations"))
    except ExpectationsError as e:
        raise pytest.UsageError(f"--dsh-expectations: {e}") from None
    try:
        # Validation as run's: only when asked (it was always on here, the pytest path's largest
        # cost against run's, issue 44).
        config.stash[IUT_KEY] = make_iut(opt("--dsh-impl"), opt("--dsh-timeout"), validate=opt("--dsh-validate"))
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None
    except IUTFailure as e:  # cannot be driven: each case is an error, as run's exit 3
        config.stash[IUT_KEY] = e


@pytest.fixture(scope="session")
def dsh_runner(request: pytest.FixtureRequest):
    """The session's runner on the implementation under test, shared by the suite's tests
    (``suite_tests.py``, ``fuzz_tests.py``)."""
    # lazy (start-up): the runner, the judge and the oracle only in a session of the suite
    from dsh_conformance.iut.connection import IUTFailure, NotAnImplementation
    from dsh_conformance.spec.rules import ORACLE_PROFILES
    from dsh_conformance.running.ending import EXIT_BROKEN
    from dsh_conformance.running.runner import Runner
    from dsh_conformance.textio.terminal import one_line, visible

    opt = request.config.getoption
    if not opt("--dsh-impl"):
        pytest.skip("no --dsh-impl given")
    iut = request.config.stash[IUT_KEY]
    try:
        if isinstance(iut, Exception):  # configure found it cannot be driven (_check_options)
            raise iut
        iut.start()
    except NotAnImplementation as e:  # found by the worker process that imports it: one usage error
        pytest.exit(str(e), returncode=pytest.ExitCode.USAGE_ERROR)
    except IUTFailure as e:
        # As run says it, in one line with its exit 3: the session stops here, not with the
        # same start failure (and its traceback) raised again for each of its tests.
        pytest.exit(visible(one_line(f"the implementation is broken: {e.message}")), returncode=EXIT_BROKEN)
    runner = Runner(iut, set(opt("--dsh-profile") or ORACLE_PROFILES), request.config.stash[EXPECTATIONS_KEY],
                    give_up_after=opt("--dsh-give-up-after"))
    yield runner
    iut.close()


@pytest.hookimpl(tryfirst=True)  # before pytest's own -k deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each corpus case carries the rule ids it cites as keywords and as its ``rules`` marker,
    so that pytest's ``-k P125`` (and ``-m``-style reports) select the cases citing P125, as
    ``run -k P125`` does. pytest matches a keyword by substring: ``-k P1`` also takes the
    cases citing P10..P19 and P100..P128 (``run -k P1`` does not)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        module = getattr(item, "module", None)  # the suite's file, whatever name pytest imported it by
        if callspec is None or getattr(item, "originalname", None) != "test_case" or module is None or \
                Path(module.__file__) != SUITE:
            continue
        rules = list(callspec.params["item"][1].get("rules", []))
        item.extra_keyword_matches.update(rules)
        item.add_marker(pytest.mark.rules(*rules))


_HOME: list = []  # the session's hypothesis home, while it lasts


def pytest_sessionstart(session: pytest.Session) -> None:
    """Hypothesis caches what it reads of a test's modules (``.hypothesis/constants``) once a
    @given test is collected: a session of the suite keeps that in a temporary directory, as
    ``run`` does, except with ``--dsh-fuzz``, whose example database in the current
    directory is the point (HypoFuzz's dashboard and later runs share it)."""
    config = session.config
    if config.getoption("--dsh-impl") and not config.getoption("--dsh-fuzz"):
        # lazy (start-up): only a session of the suite
        from dsh_conformance.running.properties import hypothesis_home

        home = hypothesis_home()
        home.__enter__()
        _HOME.append(home)


def pytest_sessionfinish(session: pytest.Session) -> None:
    while _HOME:
        _HOME.pop().__exit__(None, None, None)
