"""The HTML report as a person sees it: rendered in headless Chromium, clicked on.

Skipped, with the reason, where no Chromium is installed (``.ci/run`` installs Debian's).
The first test renders a comparison of the oracle and a fake that ignores guard denials;
the second the real package rc.8 (a fresh run through the Node adapter)."""

from __future__ import annotations

import shutil
import sys

import pytest

from dsh_conformance.cli import main
from dsh_conformance.resources import ADAPTER
from dsh_conformance.reporting.report import read_report
from dsh_conformance.reporting.scores import scores
from dsh_conformance.tools.report_browser import browser_page, open_cell, open_report, why_no_browser

from .conftest import FAKE, ROOT, corpus_subset
from .test_report_narrow import HEIGHTS

pytestmark = [pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser here: {why_no_browser()}"),
              pytest.mark.usefixtures("browser_watchdog")]

BYPASS = f"{sys.executable} {FAKE} guard-bypass"
PICK = ["guard-denies-with-number", "pre-deny-skips-body", "guard-falsy-returns-deny", "approval-shipped-allowed-once"]
EXPECTATIONS = ROOT / "conformance" / "expectations" / "dsh-tools-0.1.0-rc.8.yaml"


def _step(item: dict) -> str:
    """How the page names an observation: stage · what · who."""
    return " · ".join(str(item[k]) for k in ("stage", "what", "who") if item.get(k) is not None)


def _summary_numbers(page, index: int) -> tuple[dict[str, int], dict[str, str]]:
    summary = page.locator(f'section.summary[data-impl="{index}"]')
    counts = {}
    for chip in summary.locator("[data-count]").all():
        counts[chip.get_attribute("data-count")] = int(chip.locator("b").inner_text())
    shown = {row.get_attribute("data-profile"): row.locator("td.score").inner_text()
             for row in summary.locator("table.scores tbody tr").all()}
    return counts, shown


@pytest.mark.rules("P46")
def test_fake_failures_in_the_browser(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    corpus_subset(tmp_path, PICK)
    assert main(["run", "--cases", "cases", "--examples", "0", "--report", "good.jsonl"]) == 0
    assert main(["run", "--impl", BYPASS, "--cases", "cases", "--examples", "0", "--report", "bad.jsonl"]) == 1
    assert main(["report", "good.jsonl", "bad.jsonl", "--format", "html", "-o", "report.html"]) == 0
    reps = [read_report("good.jsonl"), read_report("bad.jsonl")]
    with browser_page(timeout_ms=0) as page:
        open_report(page, tmp_path / "report.html")
        # The summary: counts per outcome and the scores, as the reports have them.
        for i, rep in enumerate(reps):
            counts, shown = _summary_numbers(page, i)
            assert counts == rep.footer.counts
            assert shown == {s.profile: str(s) for s in scores(rep)}
        assert _summary_numbers(page, 1)[0]["fail"] == 2
        # The failing cell: P46 passes for the oracle and fails for the fake.
        row = page.locator('tr.rule[data-rule="P46"]')
        assert [c.get_attribute("data-outcome") for c in row.locator("td.cell").all()] == ["pass", "fail"]
        assert row.locator("td.cell").nth(0).locator("button").count() == 0
        # Its detail view, opened by a click: the case and the first divergence highlighted.
        dialog = open_cell(page, "P46", implementation=1)
        case = dialog.locator("details.case[open]").first
        rec = next(c for c in reps[1].cases if c.id in case.locator(":scope > summary").inner_text())
        assert "P46" in rec.failing_rules
        first = case.locator("tr.first")
        assert first.count() == 1 and first.is_visible()
        assert first.locator("th").get_attribute("title") == rec.divergence["where"]
        expected, actual = first.locator("td").all()
        assert _step(rec.divergence["expected"]) in expected.inner_text()
        assert _step(rec.divergence["actual"]) in actual.inner_text()
        assert first.evaluate("e => getComputedStyle(e.querySelector('td')).backgroundColor") != \
            case.locator("tr.agree").first.evaluate("e => getComputedStyle(e.querySelector('td')).backgroundColor")
        assert f"dsh-conformance replay cases/{rec.case_file}" in case.locator("pre.cmd").inner_text()
        page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")
        # Filters: failing rules only, then the loop profile only.
        page.select_option("#f-outcome", "failing")
        visible = {r.get_attribute("data-rule") for r in page.locator("tr.rule:visible").all()}
        assert visible == {r for r, o in reps[1].footer.rules.items() if o == "fail"}
        page.select_option("#f-outcome", "all")
        page.select_option("#f-profile", "loop")
        assert {r.get_attribute("data-profile") for r in page.locator("tr.rule:visible").all()} == {"loop"}
        # A rule's title leads to its statement, in the page.
        page.select_option("#f-profile", "all")
        page.locator('tr.rule[data-rule="P46"] td.title a').click()
        statement = page.locator("article#rule-P46")
        assert statement.is_visible() and "P46 · core · Abstain or deny" in statement.inner_text()


@pytest.fixture(scope="module")
def rc8(tmp_path_factory):
    if shutil.which("node") is None or not (ADAPTER / "node_modules").is_dir():
        pytest.skip("the Node adapter is not installed (make adapter)")
    tmp = tmp_path_factory.mktemp("rc8")
    report = tmp / "rc8.jsonl"
    assert main(["run", "--impl", "dsh", "--examples", "0", "--expectations", str(EXPECTATIONS),
                 "--report", str(report), "--quiet"]) == 0
    html = tmp / "rc8.html"
    assert main(["report", str(report), "--format", "html", "-o", str(html)]) == 0
    return read_report(report), html


@pytest.mark.rules("P11")
def test_rc8_report_shows_p11_divergence(rc8):
    """The acceptance of the HTML report: rc.8's summary, then P11's cell clicked shows
    the first divergence of one of its cases next to the expected trace."""
    rep, html = rc8
    with browser_page(timeout_ms=0) as page:
        open_report(page, html)
        summary = page.locator('section.summary[data-impl="0"]')
        assert summary.locator("h2").inner_text() == "@deepseek-ai/dsh-tools 0.1.0-rc.8"
        counts, shown = _summary_numbers(page, 0)
        assert counts == rep.footer.counts and counts.get("expected-fail", 0) > 0
        assert shown == {s.profile: str(s) for s in scores(rep)}
        cell = page.locator('tr.rule[data-rule="P11"] td.cell')
        assert cell.get_attribute("data-outcome") == "expected-fail"
        assert "only successes built by the output contract are deep-frozen" in cell.inner_text()
        dialog = open_cell(page, "P11")
        case = dialog.locator("details.case[open]").first
        rec = next(c for c in rep.cases if c.id in case.locator(":scope > summary").inner_text())
        assert "P11" in rec.failing_rules and rec.outcome.value == "expected-fail"
        first = case.locator("tr.first")
        assert first.is_visible() and first.locator("th").get_attribute("title") == rec.divergence["where"]
        expected, actual = first.locator("td").all()
        assert _step(rec.divergence["expected"]) in expected.inner_text()
        assert _step(rec.divergence["actual"]) in actual.inner_text()
        # Next to each other: the expected side left of the actual one, on one row.
        e, a = expected.bounding_box(), actual.bounding_box()
        assert e["x"] + e["width"] <= a["x"] + 1 and abs(e["y"] - a["y"]) < 1
        assert "rules cited" in case.inner_text() and rec.expected_reason in case.inner_text()
        page.keyboard.press("Escape")
        # Issue 26, item 7: the packages as a table; the expected error reachable through the filter.
        assert page.locator("dl.identity table.kv tr").count() >= 1
        page.select_option("#f-outcome", "expected-error")
        shown = {r.get_attribute("data-rule") for r in page.locator("tr.rule:visible").all()}
        assert shown and shown == {r for r, o in rep.footer.rules.items() if o == "expected-error"}


@pytest.mark.rules("P11")
def test_rc8_report_at_420_px_is_as_tall_as_what_it_shows(rc8):
    """Issue 44: rc.8's page was 64,000 px tall at 420 px (47,000 of it the rule statements, and
    each expected failure's reason laid out whole in its cell, a column of some 12 lines). The
    statements are folded and a reason shows two lines in the cell, whole in the detail view."""
    rep, html = rc8
    with browser_page(width=420, height=900, timeout_ms=0) as page:
        open_report(page, html)
        m = page.evaluate(HEIGHTS)
        assert m["statements"] < 120 and len(m["rules"]) == 128, m
        assert m["page"] <= 1.15 * (m["summaries"] + m["matrix"] + m["cases"]) + 900, m
        assert m["matrix"] <= 90 * m["rows"] + 150, m
        line = page.evaluate("parseFloat(getComputedStyle(document.querySelector('td.cell .reason')).lineHeight)")
        tallest = max(page.locator("td.cell .reason").evaluate_all("rs => rs.map(r => r.getBoundingClientRect().height)"))
        assert tallest <= 2 * line + 1
        dialog = open_cell(page, "P11")
        case = dialog.locator("details.case[open]").first
        rec = next(c for c in rep.cases if c.id in case.locator(":scope > summary").inner_text())
        assert rec.expected_reason and rec.expected_reason in case.locator("dd.reason").inner_text()


@pytest.mark.rules("P46")
def test_filters_index_and_summary_links_in_the_browser(tmp_path, monkeypatch):
    """Issue 26, item 7: every rule is reachable through the outcome filter, "differs between
    reports" shows the rows whose outcomes differ, the index by case and the summary's failing
    rules open the detail view (at the case), and the replay command is at the top of a case."""
    monkeypatch.chdir(tmp_path)
    corpus_subset(tmp_path, PICK)
    assert main(["run", "--cases", "cases", "--examples", "0", "--report", "good.jsonl", "-q"]) == 0
    assert main(["run", "--impl", BYPASS, "--cases", "cases", "--examples", "0", "--report", "bad.jsonl", "-q"]) == 1
    assert main(["report", "good.jsonl", "bad.jsonl", "--format", "html", "-o", "report.html"]) == 0
    bad = read_report("bad.jsonl")
    with browser_page(timeout_ms=0) as page:
        open_report(page, tmp_path / "report.html")
        every = {r.get_attribute("data-rule") for r in page.locator("tr.rule").all()}
        seen: set[str] = set()
        for value in page.locator("#f-outcome option").evaluate_all("os => os.map(o => o.value)"):
            page.select_option("#f-outcome", value)
            shown = {r.get_attribute("data-rule") for r in page.locator("tr.rule:visible").all()}
            if value == "differs":
                assert shown == {r for r, o in bad.footer.rules.items() if o == "fail"}  # the oracle passes them
            elif value != "all":
                seen |= shown
        assert seen == every
        page.select_option("#f-outcome", "all")
        # The summary names the failing rules; each opens its cell's detail view.
        summary = page.locator('section.summary[data-impl="1"] p.failing-rules')
        assert "Failing rules" in summary.inner_text() and "P46" in summary.inner_text()
        summary.locator("button", has_text="P46").click()
        dialog = page.locator("dialog#detail")
        dialog.wait_for(state="visible")
        assert "P46" in dialog.locator(".bar-title").inner_text()
        page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")
        # The index by case: the last failing case, opened in P46's view at that case.
        rec = [c for c in bad.cases if "P46" in c.failing_rules][-1]
        page.locator(f'section#cases tr[data-case="{rec.id}"] button', has_text="P46").click()
        dialog.wait_for(state="visible")
        opened = dialog.locator("details.case[open]")
        assert any(rec.id in d.locator(":scope > summary").inner_text() for d in opened.all())
        case = next(d for d in opened.all() if rec.id in d.locator(":scope > summary").inner_text())
        # The replay command comes before the traces.
        assert case.locator("pre.cmd").bounding_box()["y"] < case.locator("details.lane").first.bounding_box()["y"]
