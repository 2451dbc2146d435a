"""``replay --all`` lists every divergence of a case, and the report records a digest of
each case's normalized trace (issue 10, part 3)."""

from __future__ import annotations

import copy
import json
import sys

import pytest

from dsh_conformance.cli import main
from dsh_conformance.judge.lanes import digest
from dsh_conformance.judge.compare import divergences, first_divergence
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.reporting.report import read_report
from dsh_conformance.oracle import load_scenario, parse_trace, run_scenario

from .conftest import FAKE, corpus_subset

pytestmark = pytest.mark.rules("P98", "P101")


def _trace(case: str):
    return run_scenario(load_scenario(CASES / f"{case}.json"))


def _changed(trace, edit):
    doc = json.loads(trace.dumps())
    edit(doc)
    return parse_trace(doc)


def test_every_divergence_is_listed_first_one_first():
    expected = _trace("stage-order-full-pipeline")

    def edit(doc):
        portable = [o for o in doc["observations"] if o["who"] is not None]
        portable[0]["value"] = "changed early"
        portable[-1]["value"] = "changed late"
        doc["results"][0]["frozen"] = not doc["results"][0]["frozen"]
    actual = _changed(expected, edit)
    found = divergences(expected, actual, {"core", "reference"})
    assert len(found) == 3
    assert found[0] == first_divergence(expected, actual, {"core", "reference"})
    assert found[-1].where.startswith("results[") and found[-1].rules == ["P11", "P99"]
    assert found[0].where != found[1].where


def test_a_missing_item_does_not_hide_what_follows():
    expected = _trace("stage-order-full-pipeline")

    def edit(doc):
        calls = [n for n, o in enumerate(doc["observations"]) if o["who"] is not None]
        del doc["observations"][calls[1]]  # one step fewer ...
        doc["warnings"] = ["an extra warning"]  # ... and a difference much later
    found = divergences(expected, _changed(expected, edit), {"core", "reference"})
    assert [d.where for d in found][-1] == "warnings"
    assert len(found) == 2  # the lane resynchronizes after the missing item


def test_no_divergence_between_equal_traces():
    trace = _trace("loop-contexts-after-batch")
    assert divergences(trace, copy.deepcopy(trace), {"core", "reference", "loop"}) == []


def test_digest_tells_any_change():
    trace = _trace("result-observer-failures-contained")
    assert digest(trace) == digest(parse_trace(json.loads(trace.dumps())))
    assert digest(trace).startswith("sha256:") and len(digest(trace)) == len("sha256:") + 16
    changed = _changed(trace, lambda doc: doc["warnings"].append("x"))
    assert digest(changed) != digest(trace)


def test_replay_all_on_a_wrong_implementation(tmp_path, capsys):
    state = tmp_path / "state"
    code = main(["replay", str(CASES / "guard-denies-with-number.json"), "--all",
                 "--impl", f"{sys.executable} {FAKE} guard-bypass {state}"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("fail: guard-denies-with-number")
    assert "divergence" in out and "\n1. at observations[" in out


def test_report_records_the_digest(tmp_path):
    cases = corpus_subset(tmp_path, ["pre-deny-skips-body", "loop-contexts-after-batch"])
    report = tmp_path / "r.jsonl"
    assert main(["run", "--cases", str(cases), "--examples", "0", "--report", str(report)]) == 0
    rep = read_report(report)
    by_id = {c.id: c for c in rep.cases}
    assert by_id["pre-deny-skips-body"].trace_digest == digest(_trace("pre-deny-skips-body"))
    report2 = tmp_path / "skips.jsonl"
    assert main(["run", "--cases", str(cases), "--examples", "0", "--report", str(report2),
                 "--impl", f"{sys.executable} {FAKE} skip-all", "--max-skipped", "1"]) == 0
    assert all(c.trace_digest is None for c in read_report(report2).cases)
