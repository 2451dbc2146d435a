"""Issue 38: the Python kit and the JavaScript kit give a scenario one meaning. The starter
example written on each (examples/core_pipeline.py, examples/core_pipeline.mjs) is run over
the corpus and a few generated draws of every profile, and their answers must be identical
(``dsh-conformance kit agree`` runs the wide version: 5 seeds x 500 draws per profile set).
Code Mode is compared, not skipped: both examples run ``run_code`` (the Python kit's
``kit.program`` and the JS kit's ``program.mjs`` interpret its programs)."""

from __future__ import annotations

import itertools
import re
import shutil
from typing import Any

import pytest

from dsh_conformance.kit import KIT_VERSION
from dsh_conformance.measuring.kit_agreement import (
    JS_EXAMPLE,
    PROFILE_SETS,
    PYTHON_EXAMPLE,
    compare,
    corpus_scenarios,
    dispatch_log_apart,
    drawn_scenarios,
)
from dsh_conformance.resources import ADAPTER, EXAMPLES, KIT

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="the JS kit needs Node")


def test_both_examples_give_identical_answers_on_the_corpus_and_draws() -> None:
    scenarios = itertools.chain(corpus_scenarios(), drawn_scenarios([7], 6, PROFILE_SETS))
    found = compare(scenarios)
    assert not found.differences, "\n".join(f"{label}: {what}" for label, what in found.differences)
    assert found.scenarios >= 292 + 25 and found.traced >= 150, found.summary()


def _runs_code(doc: dict[str, Any]) -> bool:
    run = doc["run"]
    return any(c.get("name") == "run_code" for c in run.get("calls", run.get("blocks", [])))


def test_code_mode_is_compared_and_not_skipped() -> None:
    """The corpus's run_code scenarios and generated code-mode draws: both examples answer
    traces (not skips), and the same ones."""
    code = [(label, doc) for label, doc in corpus_scenarios() if _runs_code(doc) and doc["run"]["kind"] == "direct"]
    code += list(drawn_scenarios([11], 8, [frozenset({"code-mode"})]))
    found = compare(code)
    assert not found.differences, "\n".join(f"{label}: {what}" for label, what in found.differences)
    assert len(code) >= 40 and found.traced == found.scenarios, found.summary()


def test_the_dispatch_logs_are_compared_by_sub_call() -> None:
    """P122: where a sub-call's tool/code-dispatch falls against the next sub-call's start is
    microtask order (the suite compares the logs in a lane of their own): one order or the
    other is the same answer, a different log is not."""
    def log(n: int, text: str = "1") -> dict[str, Any]:
        return {"agent": "a", "type": "tool/code-dispatch", "data": {"subCallId": f"c1:code:{n}", "content": text}}

    def start(n: int) -> dict[str, Any]:
        return {"agent": "a", "type": "tool/code-dispatch-start", "data": {"subCallId": f"c1:code:{n}"}}
    one = [start(1), log(1), start(2), log(2)]
    other = [start(1), start(2), log(2), log(1)]
    numbered = lambda events: [{**e, "seq": i + 1} for i, e in enumerate(events)]  # noqa: E731
    assert dispatch_log_apart(numbered(one)) == dispatch_log_apart(numbered(other))
    assert dispatch_log_apart(numbered(one)) != dispatch_log_apart(numbered([start(1), log(1), start(2), log(2, "2")]))


def test_the_examples_are_package_data_beside_each_other() -> None:
    assert PYTHON_EXAMPLE.parent == JS_EXAMPLE.parent == EXAMPLES and JS_EXAMPLE.is_file()
    # the JS example finds the JS kit where a clone and an installed package both have it
    assert (EXAMPLES.parent / "tools" / "dsh-adapter" / "kit" / "protocol.mjs").is_file()


def test_both_kits_carry_one_version_with_its_changelog_line() -> None:
    js = (ADAPTER / "kit" / "version.mjs").read_text(encoding="utf-8")
    assert re.search(r"KIT_VERSION = '([0-9.]+)'", js).group(1) == KIT_VERSION  # type: ignore[union-attr]
    changelog = (KIT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.findall(r"^- \*\*([0-9.]+)\*\*", changelog, re.M)[0] == KIT_VERSION


def test_run_codes_output_contract_is_worded_alike() -> None:
    """A post-execute listener replaces run_code's value (P81): the value goes through
    run_code's output contract (P128: ``{logs, result?}``, no other property), and both
    examples word its violations alike (found by the wide ``kit agree``, seed 4)."""
    doc = {"mode": "both", "programs": [{"id": "p1", "steps": [{"do": "return", "value": 1}]}],
           "listeners": [{"id": "L1", "event": "tools/post-execute", "script": [
               {"do": "return", "value": {"kind": "accept", "value": {"b": 1, "a": [2]}}}]}],
           "run": {"kind": "direct", "calls": [
               {"callId": "c1", "name": "run_code", "arguments": {"code": "p1", "description": "d"}}]}}
    one = {**doc, "listeners": [{"id": "L1", "event": "tools/post-execute", "script": [
        {"do": "return", "value": {"kind": "accept", "value": {"logs": ["x", 3], "z": True}}}]}]}
    found = compare([("two extras", doc), ("one extra, a bad log line", one)])
    assert not found.differences and found.traced == 2, "\n".join(f"{label}: {what}" for label, what in found.differences)
