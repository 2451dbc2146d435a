"""Small reports for the site's tests: the oracle and a fake that ignores guard denials run on
four corpus cases, and reports made from them with the project's own writer (another
version of the fake, another suite version, crafted case ids)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from dsh_conformance.cli import main
from dsh_conformance.reporting.report import CaseRecord, Report, ReportWriter, read_report

from .conftest import FAKE, corpus_subset

PICK = ["guard-denies-with-number", "pre-deny-skips-body", "guard-falsy-returns-deny", "approval-shipped-allowed-once"]
BYPASS = f"{sys.executable} {FAKE} guard-bypass"


def write(path: Path, report: Report, header: dict[str, Any] | None = None,
          cases: list[CaseRecord] | None = None) -> Path:
    """``report`` written again at ``path``, its header updated with ``header``."""
    writer = ReportWriter(path)
    writer.write(report.header.model_copy(update=header or {}))
    for rec in report.cases if cases is None else cases:
        writer.write(rec)
    if report.footer is not None:
        writer.write(report.footer)
    writer.close()
    assert writer.failed is None
    return path


def small_reports(d: Path) -> dict[str, Path]:
    """In ``d``, the working directory: oracle, bypass (the fake, 0.1.0: P46 fails) and older
    (the fake's 0.0.9: the oracle's outcomes under the fake's name, so that 0.0.9 -> 0.1.0
    regresses P46)."""
    corpus_subset(d, PICK)
    good, bad = d / "oracle.jsonl", d / "bypass.jsonl"
    assert main(["run", "--cases", "cases", "--examples", "0", "--report", str(good), "--quiet"]) == 0
    assert main(["run", "--impl", BYPASS, "--cases", "cases", "--examples", "0", "--report", str(bad),
                 "--quiet"]) == 1
    fake = read_report(bad).header.implementation
    older = write(d / "older.jsonl", read_report(good), {"implementation": {**fake, "version": "0.0.9"},
                                                          "options": read_report(bad).header.options})
    return {"oracle": good, "bypass": bad, "older": older}


def hostile_site_in(d: Path) -> Path:
    """In ``d``: the site of a run of ``tests/fakes/escapes_iut.py`` (every text it sends is
    hostile), with a crafted case id added to its report."""
    import pytest

    from .test_hostile_text import CASES, FAKE as ESCAPES

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(d)
        corpus_subset(d, CASES)
        assert main(["run", "--impl", f"{sys.executable} {ESCAPES}", "--cases", "cases", "--examples", "0",
                     "--report", "hostile.jsonl", "--quiet"]) == 3
        rep = read_report("hostile.jsonl")
        # A case id no corpus has: markup, a path out of the site, a terminal escape.
        crafted = rep.cases[0].model_copy(update={"id": "../../<script>alert(2)</script>\x1b]0;x\x07"})
        write(d / "hostile.jsonl", rep, cases=[*rep.cases, crafted])
        assert main(["site", "hostile.jsonl", "-o", "site"]) == 0
    return d / "site"
