"""The README's two commands install what each needs (issue 26, item 5): ``make run`` the
runtime dependencies only, ``make test`` the dev, mutate and fuzz extras on top. Read from make's
own plan (``make -n``) in a directory laid out as a fresh clone (no .venv)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.rules("P1")


def _plan(tmp_path: Path, target: str) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("no make here")
    (tmp_path / "tools" / "dsh-adapter").mkdir(parents=True, exist_ok=True)
    for name in ("Makefile", "pyproject.toml", "tools/dsh-adapter/package.json", "tools/dsh-adapter/package-lock.json"):
        shutil.copy(ROOT / name, tmp_path / name)
    done = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, check=True)
    return [line for line in done.stdout.splitlines() if "pip install" in line]


def test_make_run_installs_the_runtime_only(tmp_path):
    installs = _plan(tmp_path, "run")
    assert installs and installs[-1].endswith("pip install --quiet -e .")
    assert not any("dev" in line or "mutate" in line for line in installs)


def test_make_test_adds_the_extras(tmp_path):
    installs = _plan(tmp_path, "test")
    assert any(line.endswith("-e .") for line in installs)
    assert installs[-1].endswith("pip install --quiet -e '.[dev,mutate,fuzz]'")
