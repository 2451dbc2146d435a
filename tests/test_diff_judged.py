"""``diff rc7 rc8`` (issue 44, item 8): a case or rule that the old run did not judge (not
scored, skipped, not run) and the new one fails as its expectations say is a change, not a
regression: nothing passed before. An unexpected failure there stays a regression."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dsh_conformance.reporting.run_diff import kind

from .test_run_diff import case, write

pytestmark = pytest.mark.rules("P1")


@pytest.mark.parametrize("old", ["not-scored", "skip", "not-run", "inconclusive", "no case"])
@pytest.mark.parametrize("new", ["expected-fail", "expected-error"])
def test_newly_judged_as_expected_is_a_change_either_way(old, new):
    assert kind(old, new) == kind(new, old) == "change"


def test_the_rest_of_the_ranking_holds():
    assert kind("not-scored", "fail") == kind("pass", "expected-fail") == kind("skip", "error") == "regression"
    assert kind("not-scored", "pass") == kind("expected-fail", "pass") == "improvement"


def test_diff_of_a_release_that_gained_a_feature_exits_0(tmp_path):
    old = write(tmp_path / "rc7.jsonl", [case("a", "pass", ["P1"]),
                                         case("t", "not-scored", ["P70"], digest=None, message="needs feature x")])
    new = write(tmp_path / "rc8.jsonl", [case("a", "pass", ["P1"]),
                                         case("t", "expected-fail", ["P70"], expected_reason="known")], version="2")
    done = subprocess.run([sys.executable, "-m", "dsh_conformance", "diff", str(old), str(new)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("0 regressions") or "\n0 regressions" in done.stdout, done.stdout
    assert "not-scored -> expected-fail" in done.stdout
