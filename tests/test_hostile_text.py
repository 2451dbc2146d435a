"""An implementation's text reaches a terminal, a Markdown page and a JUnit file as text
(issue 21): a real process (``tests/fakes/escapes_iut.py``) names itself, errors, skips,
crashes and diverges with terminal escape sequences, HTML, table and heading breakers and
characters XML cannot carry; the output of every command that shows its text is checked
byte by byte."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from markdown_it import MarkdownIt

from dsh_conformance.textio.markup import md_code, md_text, xml_text
from dsh_conformance.textio.terminal import json_visible, one_line, visible

from .conftest import ROOT, corpus_subset

FAKE = Path(__file__).parent / "fakes" / "escapes_iut.py"
IMPL = f"{sys.executable} {FAKE}"
CASES = ["approval-ask-without-agent-denies", "finalize-content-only", "guard-denies-with-number",
         "pre-deny-skips-body"]
# Bytes a terminal acts on: C0 controls but tab and line feed, DEL, C1 controls (in UTF-8),
# the bidirectional controls, the line separators.
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]"
                 rb"|\xd8\x9c|\xef\xbb\xbf")


def command(*argv: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "dsh_conformance.cli", *argv], capture_output=True, cwd=cwd,
                          env=env, timeout=300)


def assert_inert(data: bytes, what: str) -> None:
    found = RAW.search(data)
    assert found is None, f"{what}: raw {found.group()!r} at {found.start()}: {data[max(0, found.start() - 60):found.start() + 20]!r}"


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[bytes]]:
    d = tmp_path_factory.mktemp("hostile")
    corpus_subset(d, CASES)
    proc = command("run", "--impl", IMPL, "--cases", "cases", "--examples", "0", "--report", "r.jsonl",
                   "--junit", "j.xml", cwd=d)
    return d, proc


def test_run_prints_the_implementations_text_escaped(hostile_run):
    d, proc = hostile_run
    assert proc.returncode == 3, proc.stderr  # errored, crashed: broken
    assert_inert(proc.stdout, "run stdout")
    assert_inert(proc.stderr, "run stderr")
    out = proc.stdout.decode()
    # Shown, not dropped: what was sent can be read, escaped.
    assert "\\x1b]52;c;ZXZpbA==\\x07" in out and "\\u202eevil" in out and "\\rOK all pass\\b\\b" in out
    assert "errored \\x1b" in out and "dying \\x1b" in out  # the errored message and the stderr tail
    first = out.splitlines()[0]
    assert first.startswith("dsh-conformance ") and "\\n## heading" in first  # the name on one line


def test_replay_and_diff_print_the_implementations_text_escaped(hostile_run):
    d, _ = hostile_run
    for case in CASES:
        proc = command("replay", f"cases/{case}.json", "--impl", IMPL, cwd=d)
        assert proc.returncode in (0, 1, 3), proc.stderr  # skipped, diverged, errored or crashed
        assert_inert(proc.stdout + proc.stderr, f"replay {case}")
    for fmt in ("text", "md", "json"):
        proc = command("diff", "r.jsonl", "r.jsonl", "--format", fmt, cwd=d)
        assert proc.returncode == 0, proc.stderr
        assert_inert(proc.stdout + proc.stderr, f"diff --format {fmt}")
    for fmt in ("md", "json", "html"):
        proc = command("report", "r.jsonl", "--format", fmt, cwd=d)
        assert proc.returncode == 0, proc.stderr
        assert_inert(proc.stdout + proc.stderr, f"report --format {fmt}")
    proc = command("badge", "r.jsonl", "-o", "badges", cwd=d)
    assert proc.returncode == 0 and not list((d / "badges").glob("*\x1b*"))
    assert_inert(proc.stdout + proc.stderr, "badge")


def test_errors_about_hostile_file_names_are_escaped(tmp_path):
    name = "case\x1b]0;title\x07\r\u202e.json"
    (tmp_path / name).write_text("{not json")
    proc = command("replay", name, cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert_inert(proc.stderr, "replay error")
    assert b"case\\x1b]0;title\\x07\\r\\u202e.json" in proc.stderr


def test_the_junit_file_is_well_formed_xml(hostile_run):
    d, _ = hostile_run
    root = ET.parse(d / "j.xml").getroot()
    texts = [root.get("name", "")] + [e.text or "" for e in root.iter()] + [e.get("message", "") for e in root.iter()]
    joined = "".join(texts)
    assert "errored \\x1b" in joined and "\\0" in joined and "\\ud800" in joined and "\\ufffe" in joined
    assert_inert((d / "j.xml").read_bytes(), "junit")
    # errored, crashed, and one whose observation values the contract refuses (invalid)
    assert int(root.get("errors")) == 3 and int(root.get("skipped")) == 1


def test_the_markdown_report_cannot_be_broken_by_the_implementation(hostile_run):
    d, _ = hostile_run
    page = command("report", "r.jsonl", "--format", "md", cwd=d).stdout.decode()
    html = MarkdownIt("commonmark").enable("table").render(page)
    assert "<script" not in html and "<h2>heading" not in html and 'href="http://x"' not in html
    headings = re.findall(r"<h([1-6])>", html)
    assert headings.count("1") == 1  # only the title
    for table in re.findall(r"<table>.*?</table>", html, re.S):
        widths = {len(re.findall(r"<t[hd][ >]", row)) for row in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, widths  # no cell split by a '|' in a name
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as text


@pytest.mark.parametrize("text", ["a|b", "`x`", "``", "<b>", "# h\n## h2", "[l](u)", "\x1b[2J", "*e* _u_", "&amp;",
                                  " ", "\\|", "a\r\nb", "\u202e"])
def test_markdown_escapes_render_the_text_itself(text):
    md = MarkdownIt("commonmark").enable("table")
    shown = md.render(f"| {md_text(text)} | {md_code(text)} |\n|---|---|\n| x | y |\n")
    cells = re.findall(r"<th>(.*?)</th>", shown, re.S)
    assert len(cells) == 2, shown
    assert "<b>" not in shown and "<h" not in shown and "<a " not in shown and "\x1b" not in shown


def test_visible_escapes_every_control_and_keeps_text():
    hostile = "".join(map(chr, [*range(0, 32), 127, *range(0x80, 0xa0), 0x202a, 0x202e, 0x2066, 0x2069, 0x200f,
                               0x2028, 0xfeff, 0xd800]))
    shown = visible(hostile)
    assert RAW.search(shown.encode("utf-8", "surrogatepass")) is None
    assert shown.count("\n") == 1 and shown.count("\t") == 1 and "\ud800" not in shown
    assert visible("plain text, ünïcödé, 中文, emoji 🎉") == "plain text, ünïcödé, 中文, emoji 🎉"
    assert "\n" not in one_line("a\nb") and "\t" not in one_line("a\tb")
    assert json_visible('{"a":"\u009b\u202e"}') == '{"a":"\\u009b\\u202e"}'
    assert xml_text("\x00\x1b\ufffe\ud800ok") == "\\0\\x1b\\ufffe\\ud800ok"


def test_the_pytest_plugin_shows_the_implementations_text_escaped(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rsxf", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--dsh-impl", IMPL, "--dsh-examples", "0", "-k", " or ".join(CASES)],
                          cwd=tmp_path, capture_output=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert_inert(proc.stdout + proc.stderr, "pytest --dsh-impl")
    assert b"errored \\x1b]52;c;" in proc.stdout and b"skipped \\x1b]52;c;" in proc.stdout
