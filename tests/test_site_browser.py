"""The results site as a person uses it, in headless Chromium (skipped, with the reason,
where there is none): from the matrix to an implementation, to a rule, to a case, each
page's numbers checked against the reports; the search; no console error on any kind of
page; a hostile report's text shown, never run."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_conformance.cli import main
from dsh_conformance.reporting.report import read_report, rule_outcomes
from dsh_conformance.reporting.scores import rule_counts, scores
from dsh_conformance.tools.report_browser import why_no_browser
from dsh_conformance.tools.site_browser import open_page, watched_page

from .site_reports import hostile_site_in, small_reports

pytestmark = [pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser here: {why_no_browser()}"),
              pytest.mark.usefixtures("browser_watchdog")]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    d = tmp_path_factory.mktemp("site-browser")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(d)
        reports = small_reports(d)
        assert main(["site", *map(str, reports.values()), "-o", "site"]) == 0
    return d / "site", reports


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> Path:
    return hostile_site_in(tmp_path_factory.mktemp("hostile-site"))


def _scores(row) -> dict[str, str]:
    return {c.get_attribute("data-profile"): c.inner_text() for c in row.locator("td.score").all()}


@pytest.mark.rules("P46")
def test_from_the_matrix_to_an_implementation_a_rule_and_a_case(built):
    site, reports = built
    oracle, bad, older = (read_report(reports[k]) for k in ("oracle", "bypass", "older"))
    with watched_page(timeout_ms=0) as (page, problems):
        open_page(page, site / "index.html")
        # The matrix: one row per run, each profile's score as the report gives it.
        rows = page.locator("table.matrix tr.run")
        assert rows.count() == 3
        for rep, stem in ((oracle, "dsh-conformance-oracle-0.1.0"), (bad, "fake-guard-bypass-0.1.0"),
                          (older, "fake-guard-bypass-0.0.9")):
            shown = _scores(page.locator(f'tr.run[data-run="{stem}"]'))
            assert {p: v for p, v in shown.items() if v != "—"} == {s.profile: str(s) for s in scores(rep)}
        # To the fake's page: its two versions in release order, and P46's regression between them.
        page.locator("a.impl", has_text="fake-guard-bypass").click()
        page.wait_for_selector("table.versions")
        assert [r.get_attribute("data-run") for r in page.locator("table.versions tr.run").all()] == \
            ["fake-guard-bypass-0.0.9", "fake-guard-bypass-0.1.0"]
        assert _scores(page.locator('table.versions tr.run[data-run="fake-guard-bypass-0.1.0"]')) == \
            {s.profile: str(s) for s in scores(bad)}
        assert page.locator("figure.chart img").evaluate("i => i.complete && i.naturalWidth > 0")
        change = page.locator('ul.changes > li[data-rule="P46"]')
        assert change.get_attribute("class") == "regression"
        failing = {c.id for c in bad.cases if c.outcome.value == "fail" and "P46" in c.failing_rules}
        change.locator("details.cases > summary").click()  # the cases that moved, folded until asked for
        assert {a.inner_text() for a in change.locator("a.case").all()} == failing
        assert all("dsh-conformance replay" in c.inner_text() for c in change.locator("pre.cmd").all())
        # To the rule: each run's outcome and counts, as the reports have them.
        change.locator("a.rule").click()
        page.wait_for_selector("table.outcomes")
        assert "P46 · core · Abstain or deny" in page.locator("h1").inner_text()
        for rep, stem in ((oracle, "dsh-conformance-oracle-0.1.0"), (bad, "fake-guard-bypass-0.1.0")):
            row = page.locator(f'table.outcomes tr[data-run="{stem}"]')
            assert row.locator("td.outcome").inner_text() == rule_outcomes(rep.cases)["P46"]
            count = rule_counts(rep.cases)["P46"]
            assert int(row.locator('[data-count="citing"]').inner_text()) == count.citing
            assert int(row.locator('[data-count="blamed"]').inner_text()) == count.blamed
        cid = sorted(failing)[0]
        rec = next(c for c in bad.cases if c.id == cid)
        # To a case: its first divergence per run, side by side.
        page.locator(f'table.cases tr[data-case="{cid}"] a.case').click()
        page.wait_for_selector(".side-by-side")
        sides = page.locator("section.run-case")
        assert sides.count() == 3
        mine = page.locator('section.run-case[data-run="fake-guard-bypass-0.1.0"]')
        assert mine.get_attribute("data-outcome") == "fail"
        assert mine.locator("code.where").inner_text() == rec.divergence["where"]
        assert "dsh-conformance replay" in mine.locator("pre.cmd").inner_text()
        good = page.locator('section.run-case[data-run="dsh-conformance-oracle-0.1.0"]')
        assert good.get_attribute("data-outcome") == "pass"
        b1, b2 = good.bounding_box(), mine.bounding_box()
        assert abs(b1["y"] - b2["y"]) < 1  # side by side at a desktop width
        assert problems == []


def test_the_rules_page_has_each_runs_outcome(built):
    site, reports = built
    reps = {read_report(p).name: read_report(p) for p in reports.values()}
    with watched_page(timeout_ms=0) as (page, problems):
        open_page(page, site / "index.html")
        page.locator("header.top nav a", has_text="Rules").click()
        page.wait_for_selector("table.rules")
        heads = [h.inner_text() for h in page.locator("table.rules thead th").all()][3:]
        assert sorted(heads) == sorted(reps)
        for rid in ("P3", "P46", "P128"):
            cells = [c.inner_text() for c in page.locator(f'table.rules tr[data-rule="{rid}"] td.outcome').all()]
            assert cells == [rule_outcomes(reps[h].cases).get(rid, "no case") for h in heads]
        assert problems == []


def test_search_by_rule_id_case_id_and_title_words(built):
    site, _ = built
    with watched_page(timeout_ms=0) as (page, problems):
        open_page(page, site / "rule" / "P1.html")
        page.fill("form.search input[name=q]", "P46")
        page.locator("form.search button").click()
        page.wait_for_selector("#results li")
        first = page.locator("#results li a").first
        assert first.inner_text() == "P46"
        open_page(page, site / "search.html", "?q=abstain+deny")
        assert "P46" in [a.inner_text() for a in page.locator("#results li.rule a").all()]
        open_page(page, site / "search.html", "?q=pre-deny-skips")
        hit = page.locator("#results li.case a")
        assert hit.count() == 1 and hit.inner_text() == "pre-deny-skips-body"
        hit.click()
        page.wait_for_selector("section.run-case")
        assert problems == []


def test_every_kind_of_page_opens_without_a_console_error(built, hostile_site):
    """One page of each template (the others differ by data only: their links are checked
    to be files of the site in test_site.py), of the small site and of the hostile one."""
    site, _ = built
    pages = [site / "index.html", site / "search.html", *sorted((site / "impl").glob("*.html")),
             site / "rule" / "P46.html", site / "rule" / "P128.html", *sorted((site / "case").glob("*.html"))[:2]]
    pages += [hostile_site / "index.html", *sorted((hostile_site / "impl").glob("*.html")),
              *sorted((hostile_site / "case").glob("*.html")), hostile_site / "rule" / "P3.html"]
    with watched_page(timeout_ms=0) as (page, problems):
        for p in pages:
            open_page(page, p)
        open_page(page, hostile_site / "search.html", "?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E")
        # The hostile name is shown as the text it is, in the matrix.
        open_page(page, hostile_site / "index.html")
        assert "<script>alert(1)</script>" in page.locator("a.impl").inner_text()
        assert problems == []
        # And were markup ever to get through, the pages' policy runs no inline script.
        page.evaluate("() => { const s = document.createElement('script'); s.textContent = 'window.ran = 1';"
                      " document.body.appendChild(s); }")
        assert page.evaluate("window.ran") is None
        assert len(problems) == 1 and "Content Security Policy" in problems[0]
