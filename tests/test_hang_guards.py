"""No test's verdict depends on the machine's load (issue 44, item 9; ``tests/hang_guards.py``):
a test module's subprocess timeouts are hang guards, and so are its other wall-clock limits."""

from __future__ import annotations

import re
import subprocess

import pytest

from .conftest import ROOT
from .hang_guards import HANG_FACTOR, guarded, hang_guard

pytestmark = pytest.mark.rules("P1")

TESTS = sorted((ROOT / "tests").glob("*.py"))


def _recorder():
    seen: list[float | None] = []

    def call(*args, timeout=None):
        seen.append(timeout)

    return seen, guarded(call)


def test_a_test_modules_timeout_becomes_a_hang_guard():
    assert HANG_FACTOR >= 10
    seen, call = _recorder()
    call(timeout=30)
    call()
    assert seen == [30 * HANG_FACTOR, None]


def test_the_code_under_test_keeps_its_limits():
    seen, call = _recorder()
    code = compile("call(timeout=30)", "<suite>", "exec")
    exec(code, {"__name__": "dsh_conformance.iut.connection", "call": call})  # a call from the suite's own module
    assert seen == [30]


def test_subprocess_is_guarded_for_every_test():
    for function in (subprocess.run, subprocess.Popen.communicate, subprocess.Popen.wait):
        assert getattr(function, "hang_guarded", False), function


def test_no_test_sets_a_bare_wall_clock_limit():
    """A poll's deadline or an implementation's timeout written as a bare number would be a
    verdict on the machine's speed: each goes through ``hang_guard``."""
    bare = []
    for path in TESTS:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "hang guard" in line or "not a limit" in line:  # said so where it is set
                continue
            if re.search(r"monotonic\(\) \+ (?!hang_guard)", line) or re.search(r"IUT\(.*timeout=\d", line):
                bare.append(f"{path.name}:{n}: {line.strip()}")
            if re.search(r"monotonic\(\) - \w+ < (?!hang_guard)", line):
                bare.append(f"{path.name}:{n}: {line.strip()}")
    assert not bare, "\n".join(bare)
    assert hang_guard(1) == HANG_FACTOR
