"""The first ``--impl dsh`` outside a clone installs the adapter's npm packages in one line
(issue 26, item 8): npm's own output (some forty ``npm http fetch`` lines) is shown only when
it fails. The npm here is a real executable on PATH that talks as npm does."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from dsh_conformance.dsh.adapter_install import AdapterInstallError, adapter_dir
from dsh_conformance.resources import ADAPTER

FAKE_NPM = """#!/bin/sh
i=0
while [ $i -lt 45 ]; do echo "npm http fetch GET 200 https://example.invalid/pkg-$i 12ms (cache hit)"; i=$((i+1)); done
if [ -n "$FAKE_NPM_FAIL" ]; then echo "npm error code E404" >&2; echo "npm error 404 Not Found - pkg-x" >&2; exit 1; fi
mkdir -p node_modules/@deepseek-ai/dsh-tools
echo '{"name": "@deepseek-ai/dsh-tools"}' > node_modules/@deepseek-ai/dsh-tools/package.json
"""


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(FAKE_NPM)
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("DSH_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "adapter"  # the adapter's sources without node_modules, as a wheel ships them
    shutil.copytree(ADAPTER, source, ignore=shutil.ignore_patterns("node_modules"))
    return source


def test_an_install_says_one_line_not_npms_output(fake_npm: Path):
    log = io.StringIO()
    home = adapter_dir(fake_npm, log)
    lines = log.getvalue().splitlines()
    assert "npm http fetch" not in log.getvalue()
    assert len(lines) == 2, lines
    assert lines[0].startswith("dsh-conformance: installing the DSH adapter's pinned npm packages into ")
    assert lines[1] == "dsh-conformance: the DSH adapter is installed"
    again = io.StringIO()
    assert adapter_dir(fake_npm, again) == home and again.getvalue() == ""  # once


def test_a_failed_install_shows_npms_output(fake_npm: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAKE_NPM_FAIL", "1")
    log = io.StringIO()
    with pytest.raises(AdapterInstallError) as e:
        adapter_dir(fake_npm, log)
    assert "npm ci in " in str(e.value) and "failed (exit 1)" in str(e.value)
    assert "npm error 404 Not Found - pkg-x" in str(e.value)  # the tail of npm's output, errors included
    assert "npm http fetch" not in log.getvalue()
