"""The pytest plugin: ``pytest --dsh-impl`` runs the suite as pytest tests."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import FAKE, ROOT


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


@pytest.mark.parametrize("impl", [f"{sys.executable} {FAKE} exit-at-start", "/no/such/implementation"])
def test_an_implementation_that_cannot_start_is_one_line_and_exit_3(tmp_path, impl):
    """As run says it: once, in one line, exit 3; not the start failure raised again, with
    its traceback, for each of the session's tests (issue 40: 293 of them, 15k lines)."""
    out = _pytest(tmp_path, "--dsh-impl", impl, "--dsh-examples", "0")
    assert out.returncode == 3, out.stdout[-2000:]
    said = [line for line in out.stdout.splitlines() if "the implementation is broken" in line]
    assert len(said) == 1 and "Traceback" not in out.stdout + out.stderr, out.stdout[-2000:]
    assert len(out.stdout.splitlines()) < 20 and "error" not in out.stdout.splitlines()[-1], out.stdout[-2000:]


def test_plugin_is_inert_without_an_implementation(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    out = _pytest(tmp_path)
    assert out.returncode == 0 and "1 passed" in out.stdout


@pytest.mark.parametrize("args,says", [
    (("--dsh-timeout", "nan"), "--dsh-timeout: must be a positive number of seconds, not nan"),
    (("--dsh-timeout", "0"), "--dsh-timeout: must be a positive number of seconds"),
    (("--dsh-give-up-after", "-1"), "--dsh-give-up-after: must be at least 0, not -1"),
    (("--dsh-examples", "many"), "--dsh-examples: not a whole number: 'many'"),
    (("--dsh-seed", "1.5"), "--dsh-seed: not a whole number: '1.5'"),
    (("--dsh-expectations", "no-such-file.yaml"), "--dsh-expectations: no-such-file.yaml: cannot read"),
    (("--dsh-impl", " "), "--impl '': an empty command line"),
    (("--dsh-impl", "py:"), "name a module"),
    (("--dsh-impl", "py:no_such_module_here"), "cannot import no_such_module_here"),
    (("--dsh-impl", "py:json"), "json is not an in-process implementation"),
])
def test_plugin_refuses_bad_options_as_one_usage_error(args, says, tmp_path):
    """As ``run`` does, with the command line's own option types: one usage error (pytest's
    exit 4), no set-up error per test and no traceback."""
    full = args if "--dsh-impl" in args else ("--dsh-impl", "oracle", *args)
    out = _pytest(tmp_path, *full, "--dsh-examples", "0") if "--dsh-examples" not in args else _pytest(tmp_path, *full)
    assert out.returncode == 4, out.stdout[-2000:] + out.stderr[-2000:]
    assert says in out.stderr + out.stdout, out.stderr[-2000:] + out.stdout[-2000:]
    assert "Traceback" not in out.stderr + out.stdout
    assert "errors" not in (out.stdout.splitlines() or [""])[-1]
    assert len((out.stdout + out.stderr).splitlines()) < 40


def test_plugin_accepts_a_shipped_expectations_name(tmp_path):
    out = _pytest(tmp_path, "--dsh-impl", "oracle", "--dsh-examples", "0", "--dsh-expectations",
                  "dsh-tools-0.1.0-rc.8", "-k", "pre-deny-skips-body or guard-denies-with-number")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "2 passed" in out.stdout.splitlines()[-1]


def test_plugin_fails_an_in_process_implementation_that_exits(tmp_path):
    """``os._exit(0)`` in a py: implementation is that implementation's crash, not a pytest exit 0."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAKE.parent), str(ROOT)]), "FAKE_INPROCESS_MODE": "os-exit"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "--dsh-impl", "py:fake_inprocess", "--dsh-examples", "0",
                          "-k", "pre-deny-skips-body or guard-denies-with-number"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 1, out.stdout[-2000:]
    assert "1 failed, 1 passed" in out.stdout.splitlines()[-1]
    assert "exited (status 0)" in out.stdout
