"""The pytest plugin: ``pytest --dsh-impl`` runs the suite as pytest tests."""

from __future__ import annotations

import subprocess
import sys

from .conftest import FAKE


def _pytest(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_plugin_passes_the_oracle(tmp_path):
    out = _pytest(tmp_path, "--dsh-impl", "oracle", "--dsh-examples", "5")
    assert out.returncode == 0, out.stdout[-2000:]
    assert "passed" in out.stdout.splitlines()[-1] and "failed" not in out.stdout.splitlines()[-1]


def test_plugin_fails_a_wrong_implementation(tmp_path):
    out = _pytest(tmp_path, "--dsh-impl", f"{sys.executable} {FAKE} guard-bypass", "--dsh-examples", "0",
                  "-k", "guard-denies-with-number or pre-deny-skips-body")
    assert out.returncode == 1, out.stdout[-2000:]
    assert "1 failed, 1 passed" in out.stdout.splitlines()[-1]
    assert "first divergence" in out.stdout


def test_plugin_is_inert_without_an_implementation(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    out = _pytest(tmp_path)
    assert out.returncode == 0 and "1 passed" in out.stdout
