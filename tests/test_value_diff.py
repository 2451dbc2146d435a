"""Every view shows where two long items differ (issue 26, item 1): a wrong implementation
(a real subprocess) thaws one flag at the end of a long observation, and the console, replay,
replay --all, the Markdown, HTML and JSON reports, JUnit and diff each show the two sides
differently, naming the path inside the item."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

from dsh_conformance.cli import main
from dsh_conformance.judge.agreement import agree
from dsh_conformance.judge.value_diff import MISSING, first_difference, locate, path_text, value_at, window

from .conftest import FAKE, corpus_subset

pytestmark = pytest.mark.rules("P11")

CASE = "execute-retry-accumulates-contexts"  # its post-execute observation runs past 400 characters
HEAD = ".value.frozen: expected true, actual false"


def test_first_difference_finds_the_path_and_the_window_shows_it():
    long = {"list": [{"id": n, "text": "x" * 40} for n in range(20)], "flag": True}
    other = {**long, "flag": False}
    assert first_difference(long, other) == ["flag"]
    found = locate(long, other)
    assert found.headline() == ".flag: expected true, actual false"
    e, a = found.texts(200)
    assert e != a and e.startswith("...") and e.endswith('"flag":true}') and len(e) <= 206
    assert path_text(["a", 3, "not a name"]) == '.a[3]["not a name"]'
    assert value_at(long, ["list", 99]) is MISSING


def test_a_difference_the_comparison_allows_is_walked_past():
    # a failure's message text is not compared under core (section 2); a plain object's
    # `message` key is data, and is (issue 39)
    e = {"r": {"isError": True, "error": {"message": "one"}, "content": []}, "n": 1}
    a = {"r": {"isError": True, "error": {"message": "two"}, "content": []}, "n": 2}
    assert first_difference(e, a) == ["r", "error", "message"]
    assert first_difference(e, a, lambda x, y: agree(x, y, exact=False)) == ["n"]
    assert first_difference({"message": "one", "n": 1}, {"message": "two", "n": 2},
                            lambda x, y: agree(x, y, exact=False)) == ["message"]


def test_windows_of_both_sides_differ_when_the_difference_lies_far_in():
    e = {"a": "y" * 1000, "b": [1, 2, 3]}
    a = {"a": "y" * 1000, "b": [1, 2, 4]}
    found = locate(e, a)
    assert found.path == ["b", 2]
    left, right = found.texts()
    assert left != right and left.endswith("[1,2,3]}") and right.endswith("[1,2,4]}")
    assert window(None, []) == "(nothing)"


def _two_lines(text: str) -> tuple[str, str]:
    lines = text.splitlines()
    e = next(x for x in lines if "expected:" in x and "differs" not in x)
    a = next(x for x in lines if "actual:" in x and "differs" not in x)
    return e.split("expected:", 1)[1].strip(), a.split("actual:", 1)[1].strip()


@pytest.fixture(scope="module")
def wrong_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, str]:
    tmp = tmp_path_factory.mktemp("value-diff")
    cases = corpus_subset(tmp, [CASE])
    report, junit = tmp / "r.jsonl", tmp / "r.xml"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["run", "--cases", str(cases), "--examples", "0", "--report", str(report), "--junit", str(junit),
                     "--impl", f"{sys.executable} {FAKE} thawed-observations", "-q"])
    assert code == 1
    return cases, report, junit, out.getvalue()


def test_console_failure_shows_the_path_and_different_lines(wrong_run):
    _, _, _, out = wrong_run
    assert f"differs at {HEAD}" in out
    e, a = _two_lines(out)
    assert e != a


def test_replay_and_replay_all_show_it(wrong_run, capsys):
    cases = wrong_run[0]
    impl = f"{sys.executable} {FAKE} thawed-observations"
    for extra in ([], ["--all"]):
        assert main(["replay", str(cases / f"{CASE}.json"), "--impl", impl, *extra]) == 1
        out = capsys.readouterr().out
        assert f"differs at {HEAD}" in out
        e, a = _two_lines(out)
        assert e != a


def test_reports_junit_and_diff_show_it(wrong_run, tmp_path, capsys):
    _, report, junit, _ = wrong_run
    md = tmp_path / "r.md"
    assert main(["report", str(report), "--format", "md", "-o", str(md)]) == 0
    text = md.read_text()
    assert f"differs at `{HEAD}`" in text
    e, a = _two_lines(text)
    assert e != a
    html = tmp_path / "r.html"
    assert main(["report", str(report), "--format", "html", "-o", str(html)]) == 0
    assert HEAD in html.read_text()
    js = tmp_path / "r.json"
    assert main(["report", str(report), "--format", "json", "-o", str(js)]) == 0
    cells = [c for row in json.loads(js.read_text())["rules"] for cell in row["cells"] for c in cell["cases"]]
    assert {c["differs_at"] for c in cells} == {".value.frozen"}
    assert f"differs at {HEAD}" in junit.read_text()
    # diff against a passing run: the new divergence names the path inside the item
    good = tmp_path / "good.jsonl"
    assert main(["run", "--cases", str(wrong_run[0]), "--examples", "0", "--report", str(good), "-q"]) == 0
    capsys.readouterr()
    main(["diff", str(good), str(report)])
    out = capsys.readouterr().out
    assert "observations[c1][15].value.frozen" in out and "expected true, actual false" in out


def test_json_null_inside_a_value_is_null_and_a_missing_key_is_nothing():
    found = locate({"who": None, "n": 1}, {"who": None, "n": 2})
    assert found.texts() == ('{"who":null,"n":1}', '{"who":null,"n":2}')
    assert locate({"a": None}, {"a": 1}).headline() == ".a: expected null, actual 1"
    assert locate({"a": 1}, {}).headline() == ".a: expected 1, actual (nothing)"
