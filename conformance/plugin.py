"""The pytest plugin: ``pytest --dsh-impl CMD`` checks an implementation under test.

With ``--dsh-impl`` the session collects the suite (``conformance/suite_tests.py``): one
test per corpus case, marked with the rules it cites, and one property test (the default
run's draws); with ``--dsh-fuzz`` also ``test_property``, the generated property as an
ordinary hypothesis test that HypoFuzz (``hypothesis fuzz``) can drive. Outcomes map
onto pytest's: pass; fail; expected failures and errors (``--dsh-expectations``) as xfail;
a skipped scenario or a profile the IUT does not support as skip; a broken IUT as an error.

Only the suite is collected, unless test paths are given on the command line: run from a
project's root, ``pytest --dsh-impl CMD`` must not also run that project's own tests (its
``testpaths``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

SUITE = Path(__file__).with_name("suite_tests.py")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dsh-conformance")
    group.addoption("--dsh-impl", help="the implementation under test: oracle, dsh, py:MODULE or a command line")
    group.addoption("--dsh-profile", action="append", choices=["core", "reference", "loop", "code-mode"],
                    help="profiles to check (repeatable; default core, reference, loop)")
    group.addoption("--dsh-expectations", help="a YAML file of expected failures and errors")
    group.addoption("--dsh-examples", type=int, default=100, help="generated scenarios (default 100)")
    group.addoption("--dsh-seed", type=int, default=0, help="seed of the generated scenarios (default 0)")
    group.addoption("--dsh-timeout", type=float, default=30.0, help="seconds an IUT may take per scenario (default 30)")
    group.addoption("--dsh-give-up-after", type=int, default=5,
                    help="declare the IUT broken after N consecutive timeouts or crashes (default 5; 0: never)")
    group.addoption("--dsh-fuzz", action="store_true", help="also collect the generated property as a hypothesis "
                    "test (test_property), for HypoFuzz: hypothesis fuzz -- --dsh-impl CMD --dsh-fuzz")
    group.addoption("--dsh-failures", default="dsh-failures",
                    help="where test_property saves a failing scenario as a case file (default dsh-failures)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rules(*ids): the spec rules (P1..Pn) a test checks")
    if config.getoption("--dsh-impl"):
        from .rules import ORACLE_PROFILES

        for p in config.getoption("--dsh-profile") or []:
            if p not in ORACLE_PROFILES:
                raise pytest.UsageError(f"--dsh-profile {p}: the oracle does not implement this profile yet")
        if config.getoption("--dsh-examples") < 0 or config.getoption("--dsh-timeout") <= 0:
            raise pytest.UsageError("--dsh-examples must be at least 0 and --dsh-timeout positive")
        if config.args_source == pytest.Config.ArgsSource.ARGS:
            config.args.append(str(SUITE))  # paths the user named, and the suite
        else:
            config.args[:] = [str(SUITE)]  # not the testpaths of the project it is run from


_HOME: list = []  # the session's hypothesis home, while it lasts


def pytest_sessionstart(session: pytest.Session) -> None:
    """Hypothesis caches what it reads of a test's modules (``.hypothesis/constants``) once a
    @given test is collected: a session of the suite keeps that in a temporary directory, as
    ``run`` does, except with ``--dsh-fuzz``, whose example database in the current
    directory is the point (HypoFuzz's dashboard and later runs share it)."""
    config = session.config
    if config.getoption("--dsh-impl") and not config.getoption("--dsh-fuzz"):
        from .runner import hypothesis_home

        home = hypothesis_home()
        home.__enter__()
        _HOME.append(home)


def pytest_sessionfinish(session: pytest.Session) -> None:
    while _HOME:
        _HOME.pop().__exit__(None, None, None)
