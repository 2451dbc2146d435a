"""The Code Mode laws (conformance.laws.code_mode) catch real wrong implementations: each
fake of tests/fakes/code_mode_fake.py breaks one law on a corpus case that exercises it,
and the suite fails that case with the law's rule among its broken invariants."""

from __future__ import annotations

import json  # noqa: F401  (the names a wrong render's body reads, as code_mode has them)
import sys
from pathlib import Path

import pytest

from dsh_conformance.cli import main
from dsh_conformance.oracle import code_mode
from dsh_conformance.oracle.code_mode import render_json  # noqa: F401
from dsh_conformance.reporting.report import read_report

from .conftest import corpus_subset

FAKE = Path(__file__).parent / "fakes" / "code_mode_fake.py"

# mode, the case that shows it, the law's rule
BREAKS = [
    ("rejected-calls-take-numbers", "code-binding-arguments-not-lossless", "P118"),
    ("nested-calls-compute-meta", "code-sub-calls-go-through-the-pipeline", "P120"),
    ("start-logged-late", "code-dispatch-logged-with-an-agent", "P122"),
    ("sub-calls-root-themselves", "code-sub-call-identity", "P119"),
    ("commits-as-they-land", "code-sub-calls-overlap-up-to-the-limit", "P121"),
    ("exclusive-runs-in-parallel", "code-exclusive-sub-call-runs-alone", "P121"),
    ("no-overlap-cap", "code-sub-calls-overlap-up-to-the-limit", "P121"),
    ("bindings-get-content", "code-sub-call-identity", "P124"),
    ("returns-before-commits", "code-run-waits-for-every-log", "P125"),
    ("contexts-stay-on-sub-calls", "code-sub-call-contexts-ride-on-run-code", "P126"),
    ("conclusion-not-forwarded", "code-sub-call-concludes-the-turn", "P127"),
    ("compact-rendering", "code-run-value-and-its-text", "P128"),
]


@pytest.mark.parametrize("mode,case,rule", BREAKS, ids=[b[0] for b in BREAKS])
def test_a_code_mode_law_catches_the_fake(tmp_path, mode, case, rule):
    cases = corpus_subset(tmp_path, [case])
    report = tmp_path / "report.jsonl"
    code = main(["run", "--impl", f"{sys.executable} {FAKE} {mode}", "--cases", str(cases), "--examples", "0",
                 "--report", str(report), "--timeout", "30", "--failures", str(tmp_path / "failures")])
    assert code == 1
    rec = next(c for c in read_report(report).cases if c.id == case)
    assert rec.outcome.value == "fail"
    broken = {v["rule"] for v in rec.violations}
    assert rule in broken, (rec.violations, rec.divergence)


@pytest.mark.parametrize("case", sorted({b[1] for b in BREAKS}))
def test_the_oracle_breaks_no_code_mode_law_there(case):
    from dsh_conformance.spec.corpus import CASES, load_case
    from dsh_conformance.laws import check
    from dsh_conformance.oracle import run_scenario

    c = load_case(CASES / f"{case}.json")
    assert check(c.scenario, run_scenario(c.scenario)) == []


# A wrong render in the oracle's own source, one per clause of P128's content, and the case
# that shows it. Each replaces the code of code_mode.render itself (its __code__), so every
# holder of the function runs the wrong code, as when the source is wrong: a law that
# checked with the oracle's render would agree with it. The P128 law writes the content from
# the rule's statement, so it catches the oracle's own trace. (Each body runs with
# code_mode's globals: it uses only what that module has, json and render_json.)
def _no_compaction(value):
    result = value.get("result")
    shown = (result if isinstance(result, str) else json.dumps(result, indent=2, ensure_ascii=False)) if "result" in value else ""
    text = "\n".join(p for p in ["\n".join(value["logs"]), shown] if p)
    return [{"type": "text", "text": text or "(run_code completed with no output)"}]


def _parts_joined_by_blank_line(value):
    result = value.get("result")
    shown = (result if isinstance(result, str) else render_json(result)) if "result" in value else ""
    text = "\n\n".join(p for p in ["\n".join(value["logs"]), shown] if p)
    return [{"type": "text", "text": text or "(run_code completed with no output)"}]


def _empty_text_for_no_output(value):
    result = value.get("result")
    shown = (result if isinstance(result, str) else render_json(result)) if "result" in value else ""
    return [{"type": "text", "text": "\n".join(p for p in ["\n".join(value["logs"]), shown] if p)}]


def _string_result_quoted(value):
    shown = render_json(value["result"]) if "result" in value else ""
    text = "\n".join(p for p in ["\n".join(value["logs"]), shown] if p)
    return [{"type": "text", "text": text or "(run_code completed with no output)"}]


WRONG_RENDERS = [
    ("no-compaction", _no_compaction, "code-run-text-compacts-deep-nesting"),
    ("parts-joined-by-a-blank-line", _parts_joined_by_blank_line, "code-run-value-and-its-text"),
    ("empty-text-for-no-output", _empty_text_for_no_output, "code-run-value-and-its-text"),
    ("string-result-quoted", _string_result_quoted, "code-run-value-and-its-text"),
]


@pytest.mark.rules("P128")
@pytest.mark.parametrize("name,wrong,case", WRONG_RENDERS, ids=[w[0] for w in WRONG_RENDERS])
def test_the_p128_law_catches_a_wrong_render_in_the_oracle(monkeypatch, name, wrong, case):
    from dsh_conformance.spec.corpus import CASES, load_case
    from dsh_conformance.laws import check
    from dsh_conformance.oracle import run_scenario

    c = load_case(CASES / f"{case}.json")
    before = {v.rule for v in check(c.scenario, run_scenario(c.scenario))}
    monkeypatch.setattr(code_mode.render, "__code__", wrong.__code__)
    trace = run_scenario(c.scenario)
    assert trace.results[0].result["content"] != [], "the wrong render ran"
    broken = {v.rule for v in check(c.scenario, trace)}
    assert "P128" not in before and "P128" in broken
