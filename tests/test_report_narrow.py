"""The HTML report for a newcomer (issue 44, item 7), in headless Chromium: the tab's title
names the implementation and its version; a search box finds a rule by id or title words and
a case by id; at 420 px the page does not scroll sideways and no header breaks a word into
pieces (the package table's "version" did). Screenshots of the narrow page are written to
the test's directory (look at them when the layout changes)."""

from __future__ import annotations

import struct
import sys

import pytest

from dsh_conformance.cli import main
from dsh_conformance.reporting.report import read_report
from dsh_conformance.reporting.report_html import page_title
from dsh_conformance.tools.report_browser import browser_page, open_report, why_no_browser

from .conftest import FAKE, corpus_subset

pytestmark = [pytest.mark.rules("P46"), pytest.mark.usefixtures("browser_watchdog")]
browser = pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser here: {why_no_browser()}")

BYPASS = f"{sys.executable} {FAKE} guard-bypass"
PICK = ["guard-denies-with-number", "pre-deny-skips-body", "guard-falsy-returns-deny", "approval-shipped-allowed-once"]

# Every word of every header cell laid out on one line: a word split over two lines is a
# header broken into pieces (a break at a space, a hyphen or a slash is not).
BROKEN_WORDS = """() => {
  const out = [];
  for (const th of document.querySelectorAll('th')) {
    if (!th.getClientRects().length) continue;
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /[^\\s\\-\\/]+/g;
      for (let m = re.exec(node.data); m; m = re.exec(node.data)) {
        const r = document.createRange();
        r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
        if (tops.size > 1) out.push(m[0]);
      }
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    d = tmp_path_factory.mktemp("narrow")
    cases = corpus_subset(d, PICK)
    assert main(["run", "--cases", str(cases), "--examples", "0", "--report", str(d / "good.jsonl"), "-q"]) == 0
    assert main(["run", "--impl", BYPASS, "--cases", str(cases), "--examples", "0", "--report", str(d / "bad.jsonl"),
                 "-q"]) == 1
    assert main(["report", str(d / "bad.jsonl"), "--format", "html", "-o", str(d / "one.html")]) == 0
    assert main(["report", str(d / "good.jsonl"), str(d / "bad.jsonl"), "--format", "html", "-o",
                 str(d / "two.html")]) == 0
    return d


def test_the_title_names_the_implementations_and_versions(pages):
    bad = read_report(pages / "bad.jsonl")
    assert bad.name == "fake-guard-bypass 0.1.0"
    text = (pages / "one.html").read_text(encoding="utf-8")
    assert "<title>fake-guard-bypass 0.1.0: Compliance matrix</title>" in text
    assert page_title([bad], "Compliance of fake-guard-bypass 0.1.0") == "Compliance of fake-guard-bypass 0.1.0"
    good = read_report(pages / "good.jsonl")
    assert page_title([good, bad], "x") == f"{good.name}, fake-guard-bypass 0.1.0: x"


@browser
@pytest.mark.parametrize("name", ["one.html", "two.html"])
def test_at_420_px_no_sideways_scroll_and_no_broken_header(pages, name):
    shot = pages / f"{name}.420.png"
    with browser_page(width=420, height=900, timeout_ms=0) as page:
        open_report(page, pages / name)
        assert page.evaluate("document.documentElement.scrollWidth") <= 420
        assert page.evaluate(BROKEN_WORDS) == []
        page.locator("table.matrix").scroll_into_view_if_needed()
        page.screenshot(path=str(shot))
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])  # the PNG's IHDR
    assert (width, height) == (420, 900)


@browser
def test_the_search_box_finds_rules_and_cases(pages):
    bad = read_report(pages / "bad.jsonl")
    failing = next(c for c in bad.cases if c.id == "guard-denies-with-number")
    with browser_page(timeout_ms=0) as page:
        open_report(page, pages / "one.html")

        def shown() -> set[str]:
            return {r.get_attribute("data-rule") for r in page.locator("tr.rule:visible").all()}

        everything = shown()
        page.fill("#f-search", "P4")
        assert shown() == {"P4"}  # an id is that rule, not P40..P49
        page.fill("#f-search", "guard-denies-with")
        assert shown() == set(failing.failing_rules)
        assert [r.get_attribute("data-case") for r in page.locator("#cases tr[data-case]:visible").all()] \
            == ["guard-denies-with-number"]
        page.fill("#f-search", "deny")  # words of a title, or of a failing case's id (its rules)
        titles = {r.get_attribute("data-rule"): r.locator("td.title").inner_text().lower()
                  for r in page.locator("tr.rule").all()}
        blamed = {r for c in bad.cases if "deny" in c.id and c.outcome.value == "fail" for r in c.failing_rules}
        expected = {r for r, title in titles.items() if "deny" in title} | blamed
        assert shown() == expected and blamed - {r for r, title in titles.items() if "deny" in title}
        assert page.locator("#f-count").inner_text() == f"{len(expected)} rules shown"
        page.fill("#f-search", "")
        assert shown() == everything


# The heights of what the page shows (each block as laid out; a folded block is its summary).
HEIGHTS = """() => {
  const h = s => { const e = document.querySelector(s); return e ? e.getBoundingClientRect().height : 0; };
  const shown = [...document.querySelectorAll('table.matrix tbody tr')].filter(r => r.getClientRects().length);
  return {page: document.documentElement.scrollHeight, summaries: h('.summaries'), matrix: h('table.matrix'),
          cases: h('#cases'), statements: h('#statements'), rows: shown.length,
          rules: shown.filter(r => r.classList.contains('rule')).map(r => r.dataset.rule)};
}"""


@browser
@pytest.mark.parametrize("name", ["one.html", "two.html"])
def test_at_420_px_the_page_is_as_tall_as_what_it_shows(pages, name):
    """Issue 44: the pages were 55,000 px tall at 420 px, 47,000 of them the 128 rule statements
    laid out at the foot. Now the page is its summaries, the matrix's rows and the index of
    cases, and little more: the statements are folded (a rule's title opens its own), and so are
    the rules no report has a case of (here 4 cases: most of the 128)."""
    cited = {r for rep in ("good.jsonl", "bad.jsonl") for c in read_report(pages / rep).cases
             for r in (*c.rules, *c.failing_rules)}
    with browser_page(width=420, height=900, timeout_ms=0) as page:
        open_report(page, pages / name)
        m = page.evaluate(HEIGHTS)
        assert set(m["rules"]) <= cited and len(m["rules"]) < 128, m["rules"]  # the rules without a case folded
        assert m["statements"] < 120, m
        assert m["page"] <= 1.15 * (m["summaries"] + m["matrix"] + m["cases"]) + 900, m
        assert m["matrix"] <= 90 * m["rows"] + 150, m  # a row is a few lines, not a column of syllables
        # What is folded comes back when asked for.
        page.check("#f-nocase")
        assert len(page.evaluate(HEIGHTS)["rules"]) == 128
        page.locator('tbody[data-profile="core"] button.fold').click()
        assert {r.get_attribute("data-profile") for r in page.locator("tr.rule:visible").all()} == \
            {"reference", "loop", "code-mode"}
        page.locator('tbody[data-profile="core"] button.fold').click()
        page.locator('tr.rule[data-rule="P46"] td.title a').click()
        assert page.locator("article#rule-P46 p.section").is_visible()
        assert not page.locator("article#rule-P47 p.section").is_visible()
        page.screenshot(path=str(pages / f"{name}.420.statement.png"))
