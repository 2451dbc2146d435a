"""Lone surrogates are lossless (spec 3.10, 3.11) on every path the suite has: the oracle's
command line, replay, the protocol in both directions, reports and saved case files, and
the default render writes them as JavaScript's JSON.stringify does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dsh_conformance.cli import main
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.iut.process import ProcessIUT
from dsh_conformance.reporting.report import CaseRecord, Outcome, ReportWriter, new_header, read_report
from dsh_conformance.reporting.report_formats import render_json, render_junit, render_markdown
from dsh_conformance.reporting.report_html import render_html
from dsh_conformance.running.runner import Runner
from dsh_conformance.oracle import load_scenario, run_scenario
from dsh_conformance.kit import jsontext
from dsh_conformance.kit.jsvalue import json_text

from .conftest import FAKE, ROOT
from .hang_guards import hang_guard

CASE = CASES / "lone-surrogates-lossless-direct.json"
LOOP_CASE = CASES / "lone-surrogates-lossless-loop.json"

pytestmark = pytest.mark.rules("P12", "P13")


def test_dumps_escapes_only_lone_surrogates():
    text = jsontext.dumps({"\ud800": "a\udc00b \u00e9 \U0001f600 \n"})
    assert text == '{"\\ud800": "a\\udc00b \u00e9 \U0001f600 \\n"}'
    assert text.encode("utf-8")  # valid UTF-8 now
    assert json.loads(text) == {"\ud800": "a\udc00b \u00e9 \U0001f600 \n"}


def test_json_stringify_of_lone_surrogates_is_javascripts():
    # JSON.stringify("\udc00x") === '"\\udc00x"'; a well-formed pair stays as it is.
    assert json_text("\udc00x") == '"\\udc00x"'
    assert json_text({"k\ud800": ["\U0001f600"]}) == '{"k\\ud800":["\U0001f600"]}'


def test_same_units_joins_pairs():
    assert jsontext.same_units("\ud83d\ude00", "\U0001f600")
    assert not jsontext.same_units("\ud83d", "\ude00")


def test_oracle_command_line_prints_them_escaped():
    out = subprocess.run([sys.executable, "-m", "dsh_conformance.oracle", "run", str(CASE)], cwd=ROOT, capture_output=True)
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout.decode("utf-8"))  # strict UTF-8: nothing raw
    trace = run_scenario(load_scenario(CASE))
    assert printed == json.loads(trace.dumps())
    assert printed["results"][0]["result"]["value"]["\udc00k"] == "\ud800"


@pytest.mark.parametrize("case", [CASE, LOOP_CASE], ids=["direct", "loop"])
def test_protocol_carries_them_both_ways(case):
    # The oracle's server computes its trace from the scenario it received: equal traces
    # mean the scenario arrived intact and the trace came back intact.
    doc = json.loads(case.read_text(encoding="utf-8"))
    with ProcessIUT([sys.executable, "-m", "dsh_conformance.oracle", "serve"], timeout=hang_guard(30)) as iut:
        answer = iut.run(1, doc)
    assert answer.trace.dumps() == run_scenario(load_scenario(case)).dumps()


def test_raw_wtf8_from_an_implementation_reads_back(tmp_path):
    doc = json.loads(CASE.read_text(encoding="utf-8"))
    with ProcessIUT([sys.executable, str(FAKE), "wtf8-out"], timeout=hang_guard(30)) as iut:
        answer = iut.run(1, doc)
    assert answer.trace.dumps() == run_scenario(load_scenario(CASE)).dumps()


def test_replay_and_report(tmp_path, capsys):
    assert main(["replay", str(CASE)]) == 0
    assert "pass: lone-surrogates-lossless-direct" in capsys.readouterr().out
    report = tmp_path / "run.jsonl"
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / CASE.name).write_text(CASE.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["run", "--cases", str(cases), "--examples", "0", "--report", str(report)]) == 0
    assert read_report(report).cases[0].outcome == Outcome.PASS


def test_report_records_and_views_keep_them(tmp_path):
    path = tmp_path / "r.jsonl"
    writer = ReportWriter(path)
    header = new_header({"name": "x\udc00", "version": "1"}, ["core"], 0, 0)
    writer.write(header)
    rec = CaseRecord(id="c", source="corpus", rules=["P12"], outcome=Outcome.FAIL, failing_rules=["P12"],
                     message="expected \ud800", divergence={"where": "results[c1]", "expected": "\udc00",
                                                            "actual": "?", "rules": ["P12"]})
    writer.write(rec)
    writer.flush()
    back = read_report(path)
    assert back.cases[0].message == "expected \ud800"
    assert back.cases[0].divergence["expected"] == "\udc00"
    for text in (render_markdown([back]), render_html([back]), render_json([back]), render_junit(back)):
        text.encode("utf-8")  # every view is writable as UTF-8
    assert "\\udc00" in render_markdown([back])


def test_saved_counterexample_keeps_them(tmp_path):
    from dsh_conformance.iut.in_process import embedded_oracle

    iut = embedded_oracle()
    iut.start()
    runner = Runner(iut, {"core"}, failures_dir=tmp_path)
    saved = runner.save("prop-x", {"run": {"kind": "direct", "calls": [{"callId": "c\udc00", "name": "t"}]}})
    assert saved is not None  # a portable name: the file is in the failures directory
    assert json.loads((tmp_path / "prop-x.json").read_text(encoding="utf-8"))["run"]["calls"][0]["callId"] == "c\udc00"
