"""Issue 38: the Python kit and the JavaScript kit give a scenario one meaning. The starter
example written on each (examples/core_pipeline.py, examples/core_pipeline.mjs) is run over
the corpus and a few generated draws of every profile, and their answers must be identical
(``dsh-conformance kit agree`` runs the wide version: 5 seeds x 500 draws per profile set)."""

from __future__ import annotations

import itertools
import re
import shutil

import pytest

from dsh_conformance.kit import KIT_VERSION
from dsh_conformance.measuring.kit_agreement import (
    JS_EXAMPLE,
    PROFILE_SETS,
    PYTHON_EXAMPLE,
    compare,
    corpus_scenarios,
    drawn_scenarios,
)
from dsh_conformance.resources import ADAPTER, EXAMPLES, KIT

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="the JS kit needs Node")


def test_both_examples_give_identical_answers_on_the_corpus_and_draws() -> None:
    scenarios = itertools.chain(corpus_scenarios(), drawn_scenarios([7], 6, PROFILE_SETS))
    found = compare(scenarios)
    assert not found.differences, "\n".join(f"{label}: {what}" for label, what in found.differences)
    assert found.scenarios >= 292 + 25 and found.traced >= 150, found.summary()


def test_the_examples_are_package_data_beside_each_other() -> None:
    assert PYTHON_EXAMPLE.parent == JS_EXAMPLE.parent == EXAMPLES and JS_EXAMPLE.is_file()
    # the JS example finds the JS kit where a clone and an installed package both have it
    assert (EXAMPLES.parent / "tools" / "dsh-adapter" / "kit" / "protocol.mjs").is_file()


def test_both_kits_carry_one_version_with_its_changelog_line() -> None:
    js = (ADAPTER / "kit" / "version.mjs").read_text(encoding="utf-8")
    assert re.search(r"KIT_VERSION = '([0-9.]+)'", js).group(1) == KIT_VERSION  # type: ignore[union-attr]
    changelog = (KIT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.findall(r"^- \*\*([0-9.]+)\*\*", changelog, re.M)[0] == KIT_VERSION
