"""The report grows with the number of cases, not with what an implementation sends, and
writing it costs time linear in its size (issue 21): records are appended, never the
whole file rewritten, and a huge trace or divergence value is left out of its record with
its size and digest (``conformance.evidence``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dsh_conformance.cli import main
from dsh_conformance.reporting.evidence import MAX_KEPT_MESSAGE_CHARS, MAX_KEPT_VALUE_BYTES, kept_divergence
from dsh_conformance.reporting.report import CaseRecord, Footer, Outcome, ReportWriter, new_header, read_report
from dsh_conformance.reporting.case_html import case_view

from .conftest import corpus_subset

BIG = Path(__file__).parent / "fakes" / "big_trace_iut.py"
CASES = ["finalize-content-only", "guard-denies-with-number", "loop-contexts-after-batch", "pre-deny-skips-body",
         "guard-falsy-returns-deny"]


def test_huge_traces_give_a_small_report(tmp_path):
    """A real process sends 3 MiB traces, each wrong: every record stays small, says what it
    left out, and the views still show the case (with a note instead of the traces)."""
    cases = corpus_subset(tmp_path, CASES)
    report = tmp_path / "r.jsonl"
    assert main(["run", "--impl", f"{sys.executable} {BIG} 3", "--cases", str(cases), "--examples", "0",
                 "--report", str(report), "--junit", str(tmp_path / "j.xml")]) == 1
    assert report.stat().st_size < 64 * 1024 and (tmp_path / "j.xml").stat().st_size < 64 * 1024
    rep = read_report(report)
    failing = [c for c in rep.cases if c.outcome == Outcome.FAIL]
    assert failing and all(c.trace is None and c.trace_omitted > 3 * 1024 * 1024 for c in failing)
    assert all(c.trace_digest for c in failing)  # what tells two runs apart is kept
    # each first divergence is the padded warnings: its value left out, with size and digest
    assert all(c.divergence["actual"]["$omitted"] > 3 * 1024 * 1024 and c.divergence["actual"]["sha256"]
               for c in failing)
    view = case_view(rep, failing[0])
    assert view.lanes == [] and "over the 1 MiB a report keeps" in view.notes[-1]
    assert main(["report", str(report), "--format", "html", "-o", str(tmp_path / "p.html")]) == 0
    assert main(["diff", str(report), str(report)]) == 0


def test_huge_messages_give_a_small_report(tmp_path):
    """A real process answers errored and skipped with 3 MiB messages: each record keeps the
    start of its text, how much it left out and the whole text's digest."""
    cases = corpus_subset(tmp_path, CASES)
    report = tmp_path / "r.jsonl"
    assert main(["run", "--impl", f"{sys.executable} {BIG} 3 words", "--cases", str(cases), "--examples", "0",
                 "--report", str(report), "--junit", str(tmp_path / "j.xml")]) == 3  # errored to every case asked
    small = 64 * 1024 * len(CASES)
    assert report.stat().st_size < small and (tmp_path / "j.xml").stat().st_size < small
    rep = read_report(report)
    assert {c.outcome for c in rep.cases} == {Outcome.ERROR, Outcome.SKIP}
    for c in rep.cases:
        assert c.message.startswith("x" * MAX_KEPT_MESSAGE_CHARS + "... (")
        assert f"{3 * 1024 * 1024 - MAX_KEPT_MESSAGE_CHARS} more characters, sha256:" in c.message


def test_a_divergence_keeps_small_values_whole_and_digests_big_ones():
    small = {"where": "warnings", "expected": [], "actual": ["x" * 100], "rules": ["P101"]}
    assert kept_divergence(small) == small
    big = {**small, "actual": ["x" * (MAX_KEPT_VALUE_BYTES + 1)]}
    kept = kept_divergence(big)
    assert kept["expected"] == [] and kept["actual"]["$omitted"] > MAX_KEPT_VALUE_BYTES
    assert kept_divergence(big) == kept and kept_divergence({**big, "actual": ["y" * len(big["actual"][0])]}) != kept


def test_writing_a_report_is_linear(tmp_path, monkeypatch):
    """Every byte is written once: what the writer hands the kernel is the file's size
    (a writer that rewrote the file every 0.2 s wrote it quadratically)."""
    written = 0
    real_write = os.write

    def counting(fd: int, data: bytes) -> int:
        nonlocal written
        n = real_write(fd, data)
        written += n
        return n

    path = tmp_path / "r.jsonl"
    w = ReportWriter(path, interval=0.0)  # the strictest: a flush after every record
    w.write(new_header({"name": "x", "version": "1"}, ["core"], 0, 0))
    monkeypatch.setattr(os, "write", counting)
    header_size = path.stat().st_size
    for n in range(2000):
        w.write(CaseRecord(id=f"case-{n}", source="corpus", rules=["P1"], outcome=Outcome.FAIL,
                           message="m" * 200))
    w.write(Footer(counts={"fail": 2000}, rules={}, exit=1, finished="2026-01-01T00:00:00Z"))
    w.close()
    assert written == path.stat().st_size - header_size
    rep = read_report(path)
    assert len(rep.cases) == 2000 and rep.footer is not None


def test_a_killed_writer_leaves_a_valid_partial_report(tmp_path):
    """A record cut short (the process killed inside a write) is no record; those before are."""
    path = tmp_path / "r.jsonl"
    w = ReportWriter(path)
    w.write(new_header({"name": "x", "version": "1"}, ["core"], 0, 0))
    for n in range(3):
        w.write(CaseRecord(id=f"case-{n}", source="corpus", rules=["P1"], outcome=Outcome.PASS))
    w.close()
    with open(path, "ab") as f:
        f.write(b'{"kind":"case","id":"cut-sho')
    rep = read_report(path)
    assert [c.id for c in rep.cases] == ["case-0", "case-1", "case-2"] and rep.footer is None
