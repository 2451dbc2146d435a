"""``dsh-conformance site`` (issue 42): the pages and files it writes, their counts against
the reports, the versions of an implementation in release order with what changed between
them, reports of another suite shown apart, and report text (input) rendered inert. The
site in a browser: ``tests/test_site_browser.py``."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from dsh_conformance.cli import main
from dsh_conformance.reporting.report import read_report, rule_outcomes
from dsh_conformance.spec.rules import rules
from dsh_conformance.reporting.scores import scores
from dsh_conformance.reporting.site import build, page_name, version_key

from .site_reports import hostile_site_in, small_reports, write
from .test_hostile_text import assert_inert


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("site-reports")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(d)
        return small_reports(d)


@pytest.fixture(scope="module")
def site(reports, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    assert main(["site", str(reports["oracle"]), str(reports["bypass"]), str(reports["older"]), "-o", str(out)]) == 0
    return out


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src", "action") and value:
                self.links.append(value)


def local_links(page: Path) -> list[str]:
    p = _Links()
    p.feed(page.read_text(encoding="utf-8"))
    return p.links


def test_every_link_of_every_page_is_a_file_of_the_site(site, reports):
    """Pages without a script can only fail to open a resource: every link, stylesheet and
    image of every page is a file of the site (nothing from the network). And no page holds
    a path of the machine that made it."""
    pages = sorted(site.rglob("*.html"))
    for page in pages:
        assert str(reports["oracle"].parent) not in page.read_text(encoding="utf-8"), page
    assert len(pages) >= 2 + 2 + len(rules()) + 4  # index, search, 2 implementations, rules, cases
    for page in pages:
        for link in local_links(page):
            if link.startswith("data:"):
                continue
            parts = urlsplit(link)
            assert not parts.scheme and not parts.netloc, f"{page}: {link} leaves the site"
            target = (page.parent / unquote(parts.path)).resolve()
            assert target.is_file() and site.resolve() in target.parents, f"{page}: {link} is not a file of the site"


def test_the_matrix_scores_and_the_badge_endpoints_are_the_reports(site, reports):
    index = (site / "index.html").read_text(encoding="utf-8")
    for path in reports.values():
        rep = read_report(path)
        for s in scores(rep):
            assert re.search(rf'data-profile="{s.profile}">{s.passing}/{s.scored}<', index)
    bad = read_report(reports["bypass"])
    doc = json.loads((site / "badges" / "fake-guard-bypass-0.1.0.json").read_text())
    overall = scores(bad)[-1]
    assert doc == {"schemaVersion": 1, "label": "dsh conformance", "message": str(overall),
                   "color": doc["color"]} and re.fullmatch(r"[0-9a-f]{3,6}", doc["color"])
    assert "<svg" in (site / "badges" / "fake-guard-bypass-0.1.0.svg").read_text()
    core = json.loads((site / "badges" / "fake-guard-bypass-0.1.0-core.json").read_text())
    assert core["label"] == "dsh core" and core["message"] == str(scores(bad)[0])


def test_versions_in_release_order():
    given = ["0.1.0", "0.1.0-rc.10", "0.0.1-rc.1", "0.1.0-rc.7", "0.1.0-rc.8", "1.0"]
    assert sorted(given, key=version_key) == ["0.0.1-rc.1", "0.1.0-rc.7", "0.1.0-rc.8", "0.1.0-rc.10", "0.1.0", "1.0"]


def test_an_implementation_page_says_what_changed_between_versions(site, reports):
    built = build([read_report(p) for p in reports.values()])
    fake = next(i for i in built.implementations if i.name == "fake-guard-bypass")
    assert [r.version for r in fake.runs] == ["0.0.9", "0.1.0"]
    (step,) = fake.steps
    p46 = next(c for c in step.changes if c.rule == "P46")
    assert (p46.old, p46.new, p46.kind) == ("pass", "fail", "regression")
    bad = read_report(reports["bypass"])
    failing = {c.id for c in bad.cases if c.outcome.value == "fail" and "P46" in (c.failing_rules + c.rules)}
    assert {cid for cid, *_ in p46.cases} == failing
    page = (site / "impl" / f"{fake.slug}.html").read_text(encoding="utf-8")
    for cid, old, new, replay in p46.cases:
        assert f'href="../case/{cid}.html"' in page and "dsh-conformance replay" in replay
        assert replay.replace("'", "&#39;") in page
    assert (site / "impl" / f"{fake.slug}-scores.svg").read_text().lstrip().startswith("<?xml")


def test_a_rule_page_and_a_case_page_hold_each_runs_outcome(site, reports):
    reps = [read_report(p) for p in (reports["oracle"], reports["bypass"], reports["older"])]
    page = (site / "rule" / "P46.html").read_text(encoding="utf-8")
    assert "Abstain or deny" in page
    for rep in reps:
        assert rule_outcomes(rep.cases)["P46"] in page
    bad = reps[1]
    rec = next(c for c in bad.cases if c.outcome.value == "fail")
    case = (site / "case" / f"{rec.id}.html").read_text(encoding="utf-8")
    assert rec.divergence["where"] in case and "First divergence" in case


@pytest.mark.parametrize("field, value", [("suite", {"name": "dsh-conformance", "version": "9.9.9"}),
                                          ("spec", {"rules": "sha256:9.9.9", "upstream": "b150a551b8"}),
                                          ("corpus", "other-cases-9.9.9")])
def test_reports_of_another_suite_or_corpus_are_shown_apart_with_why(tmp_path, reports, field, value):
    other = write(tmp_path / "other.jsonl", read_report(reports["bypass"]), {field: value})
    out = tmp_path / "site"
    assert main(["site", str(reports["oracle"]), str(other), "-o", str(out)]) == 0
    index = (out / "index.html").read_text(encoding="utf-8")
    line = next(x for x in index.splitlines() if "Shown apart" in x)
    assert f"its {field} differs" in line and "9.9.9" in line
    assert str(tmp_path) not in index  # the reports by file name: no path of the machine in a published page
    assert (out / "apart-1" / "index.html").is_file()
    assert "fake-guard-bypass" not in index.split("Shown apart")[1].split("</p>", 1)[1]


def test_an_output_that_would_replace_an_input_is_refused(tmp_path, reports, capsys):
    d = tmp_path / "s"
    d.mkdir()
    mine = write(d / "index.html", read_report(reports["oracle"]))
    assert main(["site", str(mine), "-o", str(d)]) == 2
    assert "the same file as the input" in capsys.readouterr().err
    assert sorted(p.name for p in d.iterdir()) == ["index.html"]  # refused before anything was written


def test_a_crafted_case_id_names_no_path():
    assert page_name("guard-denies-with-number") == "guard-denies-with-number"
    for crafted in ("../../etc/passwd", "a/b", "..", "x" * 300, "<img src=x onerror=alert(1)>", "_x", ".hidden"):
        name = page_name(crafted)
        assert re.fullmatch(r"_[0-9a-f]{20}", name), crafted


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> Path:
    return hostile_site_in(tmp_path_factory.mktemp("hostile-site"))


def test_hostile_report_text_renders_inert(hostile_site):
    files = [p for p in hostile_site.rglob("*") if p.is_file()]
    assert any(p.parent.name == "case" and p.name.startswith("_") for p in files)  # the crafted id
    for p in files:
        data = p.read_bytes()
        assert_inert(data, str(p))  # no raw control character, bidi override or lone surrogate
        text = data.decode("utf-8")
        assert "<script>alert" not in text, p
        if p.suffix == ".html":
            assert len(re.findall(r"<script\b", text)) == (2 if p.name == "search.html" else 0), p
    index = (hostile_site / "index.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index and "\\x1b]52;c;ZXZpbA==" in index
    assert "<" not in (hostile_site / "search-index.js").read_text().split("=", 1)[1]


def test_a_partial_report_is_said_to_be_partial(tmp_path, reports):
    """Its scores are not the whole run's: the matrix says so beside them."""
    rep = read_report(reports["bypass"])
    partial = write(tmp_path / "partial.jsonl", rep, cases=rep.cases[:2])
    lines = partial.read_text().splitlines(keepends=True)
    partial.write_text("".join(lines[:-1]))  # no footer: the run was killed
    out = tmp_path / "site"
    assert main(["site", str(reports["oracle"]), str(partial), "-o", str(out)]) == 0
    index = (out / "index.html").read_text(encoding="utf-8")
    row = index.split('data-run="fake-guard-bypass-0.1.0"')[1].split("</tr>")[0]
    assert "partial report: the run did not finish" in row
    assert "did not finish" not in index.split('data-run="dsh-conformance-oracle-0.1.0"')[1].split("</tr>")[0]
