"""The JS kit (``dsh-conformance kit js DIR``): the Node adapter's generic half and a binding
skeleton, written into a directory; the real package's adapter is that skeleton filled in.

- the generic half imports nothing of the binding or of the packages, and the real adapter's
  binding exports exactly the skeleton's seams, each documented;
- the command writes the kit's files byte for byte as the shipped adapter has them, never
  overwrites (nor writes through a planted link), and says so in one line, exit 2;
- an unfilled skeleton cannot start: one line naming the seam, exit 3;
- the kit runs on a binding that is not DSH's: a toy pipeline of a few dozen lines
  (tests/fakes/kit_toy_binding.mjs, no framework) passes the simplest core cases through it;
- the kit written into a temporary directory, with the real adapter's binding filled in and
  the pinned packages installed there by ``npm ci`` (offline, from npm's cache), passes the
  corpus against rc.8 with the committed expectations, as ``make dsh`` does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_conformance.porting.kit_js import SKELETON, kit_files

from .conftest import ROOT

pytestmark = pytest.mark.rules("P1")

ADAPTER = ROOT / "tools" / "dsh-adapter"
EXPECTATIONS = ROOT / "conformance" / "expectations" / "dsh-tools-0.1.0-rc.8.yaml"
NODE = shutil.which("node")
NPM = shutil.which("npm")
IMPORT = re.compile(r"^import\s[^'\"]*['\"]([^'\"]+)['\"]", re.MULTILINE)
SEAM = re.compile(r"^export (?:async )?function (\w+)\(", re.MULTILINE)


def _cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dsh_conformance.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def _seams(path: Path) -> list[str]:
    return SEAM.findall(path.read_text(encoding="utf-8"))


def test_the_generic_half_imports_nothing_of_a_binding():
    for module in sorted((ADAPTER / "kit").glob("*.mjs")):
        for target in IMPORT.findall(module.read_text(encoding="utf-8")):
            assert target.startswith("node:") or (target.startswith("./") and (ADAPTER / "kit" / target).is_file()), \
                f"{module.name} imports {target}"


def test_the_real_adapter_is_the_skeleton_filled_in():
    seams = _seams(SKELETON)
    assert len(seams) >= 15 and _seams(ADAPTER / "binding.mjs") == seams
    text = SKELETON.read_text(encoding="utf-8")
    for seam in seams:  # each documented: what the kit hands it, what it returns, and not implemented yet
        block = text[:text.index(f"function {seam}(")].rsplit("/**", 1)[1]
        assert "Handed" in block and "Return" in block, seam
        body = text[text.index(f"function {seam}("):].split("\n}\n", 1)[0]
        assert f"throw new NotImplemented('{seam}')" in body
    readme = (ADAPTER / "kit" / "README.md").read_text(encoding="utf-8")
    assert all(f"`{seam}(" in readme for seam in seams)
    # The shipped entry and the kit's are one file: the adapter runs the kit's protocol loop.
    assert "import { serve } from './kit/protocol.mjs'" in (ADAPTER / "adapter.mjs").read_text(encoding="utf-8")


def test_kit_js_writes_the_shipped_files_and_never_overwrites(tmp_path: Path):
    target = tmp_path / "new" / "adapter"
    done = _cli("kit", "js", target)
    assert done.returncode == 0, done.stderr
    assert "binding.mjs" in done.stdout and done.stderr == ""
    written = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert written == sorted(kit_files()) and "kit/protocol.mjs" in written
    for name, source in kit_files().items():
        assert (target / name).read_bytes() == source.read_bytes(), name
    assert (target / "binding.mjs").read_bytes() == SKELETON.read_bytes()
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    again = _cli("kit", "js", target)
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.startswith("error: ") and again.stderr.count("\n") == 1 and "never overwrites" in again.stderr
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before


def test_a_planted_file_or_link_refuses_the_whole_kit(tmp_path: Path):
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n", encoding="utf-8")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "binding.mjs").symlink_to(outside)
    done = _cli("kit", "js", linked)
    assert done.returncode == 2 and "binding.mjs already there" in done.stderr, done.stderr
    assert outside.read_text(encoding="utf-8") == "keep me\n" and sorted(os.listdir(linked)) == ["binding.mjs"]
    kit_link = tmp_path / "kitlink"
    kit_link.mkdir()
    (kit_link / "kit").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    done = _cli("kit", "js", kit_link)
    assert done.returncode == 2 and "never written through a link" in done.stderr
    assert not (tmp_path / "elsewhere").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "package.json").write_text("{}\n", encoding="utf-8")  # files of its own are left alone
    assert _cli("kit", "js", mine).returncode == 0 and (mine / "package.json").read_text() == "{}\n"
    not_dir = tmp_path / "file"
    not_dir.write_text("", encoding="utf-8")
    done = _cli("kit", "js", not_dir)
    assert done.returncode == 2 and done.stderr == f"error: kit js {not_dir}: not a directory\n"
    bad = _cli("kit", "rust", tmp_path / "r")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and not (tmp_path / "r").exists()


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_an_unfilled_skeleton_cannot_start_and_says_which_seam(tmp_path: Path):
    assert _cli("kit", "js", tmp_path / "k").returncode == 0
    check = subprocess.run([NODE, str(tmp_path / "k" / "adapter.mjs"), "--check"], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 3 and check.stdout == ""
    assert check.stderr == "binding.mjs: cannotDrive() is not implemented yet (fill in the skeleton's seam)\n"
    run = _cli("run", "--impl", f"node {tmp_path / 'k' / 'adapter.mjs'}", "--examples", "0", "--quiet",
               "--case", "pre-deny-skips-body", cwd=tmp_path)
    assert run.returncode == 3 and "cannotDrive() is not implemented yet" in run.stderr and "Traceback" not in run.stderr


TOY_CASES = ["pre-deny-skips-body", "pre-outer-decides-without-next", "guard-denies-with-number",
             "pre-cursor-shared-and-consuming", "pre-outer-overrides-inner-deny"]


@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.rules("P5", "P6", "P32", "P46")
def test_the_kit_runs_a_pipeline_that_is_not_dsh(tmp_path: Path):
    target = tmp_path / "toy"
    assert _cli("kit", "js", target).returncode == 0
    (target / "binding.mjs").unlink()
    shutil.copyfile(ROOT / "tests" / "fakes" / "kit_toy_binding.mjs", target / "binding.mjs")
    run = _cli("run", "--impl", f"node {target / 'adapter.mjs'}", "--examples", "0", "--quiet",
               *[a for case in TOY_CASES for a in ("--case", case)], "--report", tmp_path / "toy.jsonl",
               "--failures", tmp_path / "failures", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    records = [json.loads(line) for line in (tmp_path / "toy.jsonl").read_text(encoding="utf-8").splitlines()]
    assert records[0]["implementation"]["name"] == "toy-pipeline"
    assert sorted(r["id"] for r in records if r.get("kind") == "case" and r["outcome"] == "pass") == sorted(TOY_CASES)


@pytest.mark.skipif(NODE is None or NPM is None, reason="node and npm are not installed")
def test_the_kit_filled_with_the_real_binding_passes_make_dsh(tmp_path: Path):
    target = tmp_path / "filled"
    assert _cli("kit", "js", target).returncode == 0
    # The fill: the real adapter's binding, its helpers and its pinned package set.
    shutil.copyfile(ADAPTER / "binding.mjs", target / "binding.mjs")
    shutil.copytree(ADAPTER / "lib", target / "lib")
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(ADAPTER / name, target / name)
    installed = subprocess.run([NPM, "ci", "--offline", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target,
                               capture_output=True, text=True, timeout=600)
    if installed.returncode != 0:
        pytest.skip("npm's cache does not hold the pinned tarballs (run `make dsh` once with the registry "
                    f"reachable): {installed.stderr.strip().splitlines()[-1:]}")
    assert not (target / "node_modules" / "@deepseek-ai" / "dsh-tools").is_symlink()
    report = tmp_path / "kit.jsonl"
    run = _cli("run", "--impl", f"node {target / 'adapter.mjs'}", "--examples", "0", "--quiet",
               "--expectations", EXPECTATIONS, "--report", report, "--failures", tmp_path / "failures", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    header, *records = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
    assert header["implementation"]["name"] == "@deepseek-ai/dsh-tools"
    assert header["implementation"]["version"] == "0.1.0-rc.8"
    cases = [r for r in records if r.get("kind") == "case"]
    outcomes = {r["outcome"] for r in cases}
    assert len(cases) > 250 and outcomes <= {"pass", "expected-fail", "expected-error", "skip"}
    assert sum(r["outcome"] == "pass" for r in cases) > 200
