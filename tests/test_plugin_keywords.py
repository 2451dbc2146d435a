"""pytest's selection of the suite's cases as ``run``'s (issue 44, item 3): each corpus case
carries the rule ids it cites as keywords and as its ``rules`` marker at collection, so that
``-k P125`` selects the cases citing P125 (before, nothing); ``--co`` lists the cases."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from dsh_conformance.spec.corpus import CASES
from dsh_conformance.running.references import corpus_items

pytestmark = pytest.mark.rules("P1")

HANG_GUARD = 120  # seconds on an idle machine, a hang guard (tests/hang_guards.py)


def _collected(tmp_path, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--dsh-impl", "oracle", "--co", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=HANG_GUARD)
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]  # 5: nothing collected
    return re.findall(r"test_case\[([^\]]+)\]", done.stdout)


def citing(rule: str) -> list[str]:
    return sorted(cid for cid, doc, _ in corpus_items(CASES) if rule in doc.get("rules", []))


@pytest.mark.parametrize("rule", ["P125", "P43"])
def test_k_selects_the_cases_citing_a_rule(tmp_path, rule):
    expected = citing(rule)
    assert expected
    assert sorted(_collected(tmp_path, "-k", rule)) == expected


def test_k_combines_a_rule_and_a_case_id(tmp_path):
    got = _collected(tmp_path, "-k", "P125 and not abandon")
    assert sorted(got) == [c for c in citing("P125") if "abandon" not in c]


def test_co_lists_every_case(tmp_path):
    assert sorted(_collected(tmp_path)) == sorted(cid for cid, _, _ in corpus_items(CASES))
