"""What reports keep of failures and how they name cases: portably, never with a path of
the machine that produced them; and the HTML report's content, read as text (the browser
test, ``test_report_browser.py``, looks at it as a person does)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest

from dsh_conformance.cli import main
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.reporting.evidence import document_digest, trace_digest
from dsh_conformance.iut.process import ProcessIUT
from dsh_conformance.textio.portable import BUILTIN_CORPUS, portable_command, portable_path, scrub
from dsh_conformance.reporting.report import Outcome, ReportWriter, new_header, read_report, report_schemas
from dsh_conformance.reporting.case_html import case_view, replay_command
from dsh_conformance.reporting.report_html import render
from dsh_conformance.spec.rule_text import STATEMENTS, dumps_statements, statements, statements_from_spec
from dsh_conformance.spec.rules import rules
from dsh_conformance.running.runner import Runner
from dsh_conformance.oracle import parse_scenario, run_scenario
from dsh_conformance.kit.trace import parse_trace

from .conftest import FAKE, ROOT, corpus_subset

BYPASS = f"{sys.executable} {FAKE} guard-bypass"
PICK = ["guard-denies-with-number", "pre-deny-skips-body", "guard-falsy-returns-deny"]


def _generated_failure(tmp_path: Path) -> Path:
    """A report holding a failure of a generated case, as ``run_properties`` records its
    shrunk counterexample (a guard denial the fake ignores), saved under an absolute path."""
    doc = json.loads((CASES / "guard-denies-with-number.json").read_text())
    doc = {**doc, "id": "prop-0123456789ab", "title": "shrunk counterexample of a property run", "seed": 7}
    iut = ProcessIUT(BYPASS.split(), 30.0, False)
    started = iut.start()
    try:
        path = tmp_path / "report-generated.jsonl"
        writer = ReportWriter(path)
        writer.write(new_header(started.implementation.model_dump(), ["core", "loop", "reference"], 7, 10))
        runner = Runner(iut, {"core", "loop", "reference"}, writer=writer, failures_dir=tmp_path / "failures")
        saved = runner.save(doc["id"], doc)
        runner.record(runner.decide(doc["id"], doc, "property", saved))
        runner.finish()
    finally:
        iut.close()
    return path


def test_no_report_holds_a_path_of_the_machine(tmp_path, monkeypatch):
    """JSONL, Markdown, HTML, JSON and JUnit of runs whose corpus, failures and outputs lie
    outside the working directory name none of them absolutely."""
    cases = corpus_subset(tmp_path, PICK)
    jsonl, junit = tmp_path / "run.jsonl", tmp_path / "run.xml"
    assert main(["run", "--impl", BYPASS, "--cases", str(cases), "--examples", "0", "--report", str(jsonl),
                 "--junit", str(junit), "--failures", str(tmp_path / "failures")]) == 1
    generated = _generated_failure(tmp_path)
    outputs = [jsonl.read_text(), junit.read_text(), generated.read_text()]
    for fmt in ("md", "html", "json"):
        out = tmp_path / f"matrix.{fmt}"
        assert main(["report", str(jsonl), str(generated), "--format", fmt, "-o", str(out)]) == 0
        outputs.append(out.read_text())
    machine = [str(tmp_path), str(ROOT), str(Path.cwd()), str(Path(sys.executable).parent)]
    for text in outputs:
        for path in machine:
            assert path not in text
    header = read_report(jsonl).header
    assert header.corpus == "cases"  # outside the working directory: its name
    assert header.options == {"impl": portable_command(BYPASS)}
    rec = next(c for c in read_report(generated).cases)
    assert rec.case_file == "prop-0123456789ab.json" and rec.scenario["id"] == "prop-0123456789ab"


def test_failing_cases_carry_their_evidence(tmp_path):
    """Only non-passing cases carry the IUT's trace and the digests; they validate against
    the record schema, and a view recomputes the oracle's trace to the same digest."""
    report = tmp_path / "bi.jsonl"
    assert main(["run", "--impl", BYPASS, "--examples", "0", "--report", str(report)]) == 1
    validator = jsonschema.Draft202012Validator(report_schemas()["report-record.schema.json"])
    for line in report.read_text().splitlines():
        validator.validate(json.loads(line))
    rep = read_report(report)
    assert rep.header.corpus == BUILTIN_CORPUS
    failing = [c for c in rep.cases if c.outcome == Outcome.FAIL]
    assert failing and all(c.trace and c.expected_sha256 and c.scenario_sha256 and c.profiles for c in failing)
    assert all(c.trace is None and c.scenario is None and c.scenario_sha256 is None
               for c in rep.cases if c.outcome == Outcome.PASS)
    for c in failing:
        assert c.case_file == f"{c.id}.json"
        doc = json.loads((CASES / c.case_file).read_text())
        assert document_digest(doc) == c.scenario_sha256
        assert trace_digest(run_scenario(parse_scenario(doc))) == c.expected_sha256
        parse_trace(c.trace)
        view = case_view(rep, c)
        assert view.notes == [] and view.lanes
        first = [row for lane in view.lanes for row in lane.rows if row.where == c.divergence["where"]]
        assert len(first) == 1 and not first[0].agree
    c = failing[0]
    assert replay_command(rep, c) == f"dsh-conformance replay {c.id} --impl '{portable_command(BYPASS)}'"


def test_replay_takes_a_corpus_case_by_id(capsys):
    assert main(["replay", "guard-denies-with-number", "--impl", BYPASS]) == 1
    assert capsys.readouterr().out.startswith("fail: guard-denies-with-number")


def test_changed_corpus_case_is_noted_not_shown(tmp_path, monkeypatch):
    """A corpus case is shown from this suite's own corpus, by id and only when the digest
    says it is the case the run used: a run on a corpus whose case differs says so instead
    of showing an expected trace of another case."""
    monkeypatch.chdir(tmp_path)
    cases = corpus_subset(tmp_path, PICK[:1])
    assert main(["run", "--impl", BYPASS, "--cases", "cases", "--examples", "0", "--report", "r.jsonl"]) == 1
    rep = read_report("r.jsonl")
    assert rep.header.corpus == "cases"
    assert case_view(rep, rep.cases[0]).lanes  # the same case as the suite's own: shown
    f = cases / f"{PICK[0]}.json"
    f.write_text(f.read_text().replace('"title": "', '"title": "changed: '))
    assert main(["run", "--impl", BYPASS, "--cases", "cases", "--examples", "0", "--report", "r2.jsonl"]) == 1
    rep = read_report("r2.jsonl")
    view = case_view(rep, rep.cases[0])
    assert view.lanes == [] and "another version of this case" in view.notes[0]
    assert "another version of this case" in render([rep])


def test_html_is_self_contained_and_holds_the_failure(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    corpus_subset(tmp_path, PICK)
    assert main(["run", "--impl", BYPASS, "--cases", "cases", "--examples", "0", "--report", "r.jsonl"]) == 1
    generated = _generated_failure(tmp_path)
    reps = [read_report("r.jsonl"), read_report(generated)]
    page = render(reps, "t")
    # Nothing fetched: no external script, style, image, font or frame.
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page)
    assert "@import" not in page and "url(" not in page
    # The detail of P46's failing cell for the corpus run, with the case's traces.
    rec = next(c for c in reps[0].cases if "P46" in c.failing_rules)
    template = re.search(r'<template id="d-0-P46".*?</template>', page, re.S).group(0)
    assert rec.id in template and 'class="first"' in template and "expected (oracle)" in template
    assert f"dsh-conformance replay cases/{rec.case_file}" in template
    # The generated failure: the shrunk case inline, and downloadable.
    gen = re.search(r'<template id="d-1-P46".*?</template>', page, re.S).group(0)
    assert "The shrunk case" in gen and 'download="prop-0123456789ab.json"' in gen
    assert "dsh-conformance replay failures/prop-0123456789ab.json --impl IMPL" in gen  # saved under the run
    # Every rule's statement is in the page.
    assert all(f'id="rule-{r}"' in page for r in rules())


def test_statements_copy_matches_the_spec(shared):
    assert STATEMENTS.read_text(encoding="utf-8") == dumps_statements(
        statements_from_spec(shared / "spec" / "pipeline.md"))


def test_every_rule_has_a_statement_and_a_section():
    st = statements()
    assert list(st) == list(rules())
    assert all(s.text.strip() and re.match(r"5\.\d+ ", s.section) for s in st.values())


@pytest.mark.parametrize("path,expected", [
    ("relative/x.json", "relative/x.json"),
    (str(ROOT / "conformance" / "cases" / "a.json"), "conformance/cases/a.json"),
    ("/nowhere/else/b.json", "b.json"),
])
def test_portable_path(path, expected):
    assert portable_path(path) == expected


def test_scrub_takes_the_machine_out_of_free_text():
    assert scrub(f'File "{ROOT}/tests/fakes/fake_iut.py", line 3') == 'File "tests/fakes/fake_iut.py", line 3'


# ----------------------------------------------------------------------------- issue 26, item 7


def _comparison(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list, str]:
    """The oracle and the guard-bypassing fake on a few cases, one page."""
    monkeypatch.chdir(tmp_path)
    corpus_subset(tmp_path, PICK)
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    assert main(["run", "--cases", "cases", "--examples", "0", "--report", str(good), "-q"]) == 0
    assert main(["run", "--impl", BYPASS, "--cases", "cases", "--examples", "0", "--report", str(bad), "-q"]) == 1
    reps = [read_report(good), read_report(bad)]
    return reps, render(reps, "t")


def _options(page: str) -> list[str]:
    select = re.search(r'<select id="f-outcome">(.*?)</select>', page, re.S).group(1)
    return re.findall(r'<option value="([^"]+)"', select)


def test_every_rule_is_reachable_through_the_outcome_filter(tmp_path, monkeypatch, capsys):
    reps, page = _comparison(tmp_path, monkeypatch)
    options = set(_options(page))
    assert "differs" in options  # several reports
    rows = re.findall(r'<tr class="rule" [^>]*data-outcomes="([^"]+)"', page)
    assert len(rows) == len(rules())
    assert all(set(outcomes.split()) <= options for outcomes in rows)
    differing = re.findall(r'<tr class="rule" id="m-(P\d+)"[^>]*data-differs="1"', page)
    assert "P46" in differing and len(differing) < len(rules())
    assert "differs" not in _options(render(reps[:1], "t"))  # one report: nothing to compare


def test_expected_errors_and_every_rule_outcome_have_an_option():
    from dsh_conformance.reporting.report import CaseRecord, Footer, Report

    header = new_header({"name": "x", "version": "1", "language": "python", "packages": {"a": "1.0", "b": "2.0"}},
                        ["core", "reference", "loop", "code-mode"], 0, 0)
    cases = [CaseRecord(id="e", source="corpus", rules=["P11"], outcome=Outcome.XERROR, expected_reason="why"),
             CaseRecord(id="p", source="corpus", rules=["P12"], outcome=Outcome.PASS)]
    rep = Report("r.jsonl", header, cases, Footer(counts={}, rules={}, exit=0, finished="2026-12-01T00:00:00Z"))
    page = render([rep], "t")
    assert {"expected-error", "expected", "pass", "no-case"} <= set(_options(page))
    # packages as a table of name and version, not a Python dict
    assert "{&#x27;" not in page and "<tr><th>a</th><td>1.0</td></tr>" in page
    # the summary lists the rules that did not pass, each opening its detail view
    failing = re.search(r'<p class="failing-rules">.*?</p>', page, re.S).group(0)
    assert 'data-detail="d-0-P11"' in failing and "P12" not in failing


def test_a_reason_with_consequences_is_shown_once():
    from dsh_conformance.reporting.report_html import merged_reasons

    why = "only successes are frozen"
    cell = {"cases": [{"reason": f"{why} (and, as a consequence, P4)"}, {"reason": f"{why} (and, as a consequence, P12, P87)"},
                      {"reason": why}, {"reason": "another"}, {"reason": None}]}
    assert merged_reasons(cell) == [f"{why} (and, as a consequence, P4, P12, P87)", "another"]


def test_a_reason_with_derived_consequences_is_shown_once():
    """conformance.explained's reasons: the consequences of one departure, derived in several
    cases, are listed together under it."""
    from dsh_conformance.reporting.report_html import merged_reasons

    why = "only successes are frozen"
    how = "the reference computed with the listed departure P11, writable results, gives this answer"
    cell = {"cases": [{"reason": f"{why} (P4 follows from it: {how})"}, {"reason": f"{why} (P12, P87 follow from it: {how})"},
                      {"reason": why}, {"reason": "another"}]}
    assert merged_reasons(cell) == [f"{why} (P4, P12, P87 follow from it: {how})", "another"]


def test_case_index_and_replay_at_the_top_of_a_case(tmp_path, monkeypatch, capsys):
    reps, page = _comparison(tmp_path, monkeypatch)
    index = re.search(r'<section id="cases">.*?</section>', page, re.S).group(0)
    failing = [c for c in reps[1].cases if c.outcome == Outcome.FAIL]
    assert failing
    for rec in failing:
        row = re.search(rf'<tr data-case="{re.escape(rec.id)}">.*?</tr>', index, re.S).group(0)
        for rule in rec.failing_rules:
            assert f'data-detail="d-1-{rule}"' in row and f'data-focus="d-1-{rule}-c' in row
    template = re.search(r'<template id="d-1-P46".*?</template>', page, re.S).group(0)
    first_case = template[template.index('<details class="case"'):]
    assert first_case.index('<pre class="cmd">') < first_case.index('<details class="lane"')
