"""The pytest plugin: ``pytest --dsh-impl CMD`` checks an implementation under test.

With ``--dsh-impl`` the session collects the suite (``conformance/suite_tests.py``): one
test per corpus case, marked with the rules it cites, and one property test. Outcomes map
onto pytest's: pass; fail; expected failures (``--dsh-expectations``) as xfail; a skipped
scenario or a profile the IUT does not support as skip; a broken IUT as an error.
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
    group.addoption("--dsh-expectations", help="a YAML file of expected failures")
    group.addoption("--dsh-examples", type=int, default=100, help="generated scenarios (default 100)")
    group.addoption("--dsh-seed", type=int, default=0)
    group.addoption("--dsh-timeout", type=float, default=30.0)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rules(*ids): the spec rules (P1..Pn) a test checks")
    if config.getoption("--dsh-impl"):
        config.args.append(str(SUITE))
