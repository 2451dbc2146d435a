"""``dsh-conformance kit py DIR`` (issue 44, item 6): the Python starter port, the kit's
example, written out byte for byte and ready to run; never over a file that is there; the
wheel carries the examples (Python and JavaScript) as package data."""

from __future__ import annotations

import fnmatch
import sys
import tomllib

import pytest

from dsh_conformance.cli import main
from dsh_conformance.porting.kit_py import STARTER

from .conftest import ROOT

pytestmark = pytest.mark.rules("P1")


def test_kit_py_writes_the_starter_and_it_passes_core(tmp_path, capsys):
    target = tmp_path / "my-port"
    assert main(["kit", "py", str(target)]) == 0
    written = target / "core_pipeline.py"
    assert written.read_bytes() == (ROOT / "examples" / "core_pipeline.py").read_bytes() == STARTER.read_bytes()
    out = capsys.readouterr().out
    assert f'dsh-conformance run --impl "python {written}" --profiles core' in out
    code = main(["run", "--impl", f"{sys.executable} {written}", "--profiles", "core", "-k", "approval-not-granted-never-runs-body or approval-service-throws-is-final", "-q"])
    assert code == 0, capsys.readouterr().out


def test_kit_py_never_overwrites(tmp_path, capsys):
    (tmp_path / "core_pipeline.py").write_text("mine\n", encoding="utf-8")
    assert main(["kit", "py", str(tmp_path)]) == 2
    assert (tmp_path / "core_pipeline.py").read_text(encoding="utf-8") == "mine\n"
    assert "already there" in capsys.readouterr().err


def test_the_wheel_carries_every_example():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert conf["package-dir"]["dsh_conformance.examples"] == "examples"
    assert "dsh_conformance.examples" in conf["packages"]
    patterns = conf["package-data"]["dsh_conformance.examples"]
    assert {"*.py", "*.mjs"} <= set(patterns)  # the Python port and the JavaScript one
    examples = [p.name for p in (ROOT / "examples").iterdir() if p.is_file()]
    assert "core_pipeline.py" in examples
    assert all(any(fnmatch.fnmatch(n, pat) for pat in patterns) for n in examples if n != "__init__.py"), examples
