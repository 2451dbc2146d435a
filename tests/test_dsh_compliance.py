"""The real package against the suite: its results match the committed expectations, and
the committed compliance report in docs/ is what the suite produces today."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.cli import ADAPTER, main

ROOT = Path(__file__).resolve().parent.parent
EXPECTATIONS = ROOT / "conformance" / "expectations" / "dsh-tools-0.1.0-rc.8.yaml"
REPORT = ROOT / "docs" / "compliance-dsh-tools-0.1.0-rc.8.md"
TITLE = "Compliance of @deepseek-ai/dsh-tools 0.1.0-rc.8"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if shutil.which("node") is None or not (ADAPTER / "node_modules").is_dir():
        pytest.skip("the Node adapter is not installed (make adapter)")
    tmp = tmp_path_factory.mktemp("dsh")
    report = tmp / "dsh.jsonl"
    code = main(["run", "--impl", "dsh", "--examples", "0", "--expectations", str(EXPECTATIONS),
                 "--report", str(report)])
    return code, report, tmp


def test_results_match_the_expectations(run):
    code, _, _ = run
    assert code == 0, "the real package's results changed: see the table above (make dsh)"


def test_committed_report_is_current(run):
    _, report, tmp = run
    out = REPORT.parent / ".compliance-check.md"
    try:
        assert main(["report", str(report), "--format", "md", "--title", TITLE, "-o", str(out)]) == 0
        assert out.read_text(encoding="utf-8") == REPORT.read_text(encoding="utf-8"), \
            "docs/ compliance report is stale: run `make dsh-report`"
    finally:
        out.unlink(missing_ok=True)
