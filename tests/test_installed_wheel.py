"""The suite as a user installs it: a wheel built from this tree, installed into a fresh
virtualenv, run from a directory outside the clone.

The wheel is really built (pip wheel, with its pinned build backend) and really installed
(pip install of the .whl, no index). Its dependencies are the pinned ones this test run
already has: the fresh environment sees them through a directory of links (everything of
the project's own environment except dsh-conformance itself), which keeps the test a few
seconds instead of a download. Every documented command runs there, and so does the
pytest plugin in a project of its own, against the oracle and against a failing fake.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from .conftest import ROOT, SHARED

pytestmark = pytest.mark.rules("P1")

UPSTREAM = SHARED / "upstream" / "b150a551b8"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("wheel")
    # One build for the whole session: xdist workers each run this fixture, and two builds of
    # one source tree at once collide in its build/ directory. A worker's base temp is inside
    # the session's; without xdist the base temp's parent is every session's (pytest-of-USER),
    # where an earlier session's wheel, of another tree, would be taken for this one.
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with open(shared / "dsh-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        dist = shared / "dsh-wheel"
        if not any(dist.glob("dsh_conformance-*.whl")):
            built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
                                   capture_output=True, text=True, timeout=600)
            if built.returncode != 0 and "Could not find a version" in built.stderr + built.stdout:
                pytest.skip(f"the pinned build backend cannot be fetched here: {built.stderr[-300:]}")
            assert built.returncode == 0, built.stderr
    wheel = next(dist.glob("dsh_conformance-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    deps = tmp / "deps"
    deps.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        if entry.name.startswith(("dsh_conformance", "__editable__", "_dsh_conformance")) or entry.suffix == ".pth":
            continue
        (deps / entry.name).symlink_to(entry)
    (site / "zz-pinned-dependencies.pth").write_text(str(deps) + "\n", encoding="utf-8")
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    work = tmp / "elsewhere"
    work.mkdir()
    return {"venv": venv, "site": site, "work": work, "bin": venv / "bin"}


def _run(env: dict[str, Path], *args: str, cwd: Path | None = None, timeout: float = 600,
         extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    environ["PATH"] = f"{env['bin']}{os.pathsep}{environ.get('PATH', '')}"
    environ.update(extra or {})
    return subprocess.run([str(a) for a in args], cwd=cwd or env["work"], capture_output=True, text=True,
                          timeout=timeout, env=environ)


def test_no_generic_top_level_package(installed):
    names = {p.name for p in installed["site"].iterdir()}
    assert "dsh_conformance" in names
    assert not names & {"tools", "oracle", "conformance", "catalogs"}, sorted(names)


def test_the_kit_is_in_the_wheel_and_a_port_on_it_runs(installed):
    """The Python kit is importable from the installed wheel, and the starter example, which
    ``kit py`` writes out of the wheel outside the clone, passes --profiles core on it (the
    corpus alone)."""
    python = installed["bin"] / "python"
    where = _run(installed, python, "-c", "import dsh_conformance.kit as k; print(k.KIT_VERSION, k.__file__)")
    assert where.returncode == 0, where.stderr
    version, file = where.stdout.split()
    from dsh_conformance.kit import KIT_VERSION
    assert version == KIT_VERSION and Path(file).is_relative_to(installed["site"]), where.stdout
    port = installed["work"] / "port"
    wrote = _run(installed, "dsh-conformance", "kit", "py", str(port))  # the wheel carries the example (issue 44)
    assert wrote.returncode == 0, wrote.stderr
    assert (port / "core_pipeline.py").read_bytes() == (ROOT / "examples" / "core_pipeline.py").read_bytes()
    shipped = installed["site"] / "dsh_conformance" / "examples"
    assert sorted(p.name for p in shipped.iterdir() if p.suffix in (".py", ".mjs")) == \
        sorted(p.name for p in (ROOT / "examples").iterdir() if p.suffix in (".py", ".mjs"))
    run = _run(installed, "dsh-conformance", "run", "--impl", "py:core_pipeline", "--profiles", "core",
               "--examples", "0", extra={"PYTHONPATH": str(port)})
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    passing, scored = re.search(r"score \(rules passing / scored\): core (\d+)/(\d+)", run.stdout).groups()
    assert passing == scored and int(scored) > 40, run.stdout[-1500:]


@pytest.mark.skipif(shutil.which("node") is None, reason="the JS example needs Node")
def test_the_js_example_ships_beside_the_python_one_and_runs(installed):
    """Issue 38: examples/ is package data; the JS example finds the installed JS kit."""
    examples = installed["site"] / "dsh_conformance" / "examples"
    assert (examples / "core_pipeline.py").is_file() and (examples / "core_pipeline.mjs").is_file()
    run = _run(installed, "dsh-conformance", "run", "--impl", f"node {examples / 'core_pipeline.mjs'}",
               "--profiles", "core,reference", "--examples", "0")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "core 49/49, reference 44/44" in run.stdout, run.stdout[-1500:]


def test_run_replay_report_from_elsewhere(installed):
    work = installed["work"]
    run = _run(installed, "dsh-conformance", "run", "--examples", "5", "--report", "run.jsonl", "--junit", "run.xml")
    assert run.returncode == 0, run.stderr
    assert "exit 0" in run.stdout and "code-mode  P128" in run.stdout
    assert str(ROOT) not in (work / "run.jsonl").read_text(encoding="utf-8")
    replay = _run(installed, "dsh-conformance", "replay", "code-run-value-and-its-text")
    assert replay.returncode == 0 and replay.stdout.startswith("pass: code-run-value-and-its-text"), replay.stdout + replay.stderr
    report = _run(installed, "dsh-conformance", "report", "run.jsonl", "--format", "html", "-o", "run.html")
    assert report.returncode == 0, report.stderr
    assert "<html" in (work / "run.html").read_text(encoding="utf-8")[:200].lower()
    site = _run(installed, "dsh-conformance", "site", "run.jsonl", "-o", "site")  # its templates are package data
    assert site.returncode == 0, site.stderr
    assert "P128" in (work / "site" / "rule" / "P128.html").read_text(encoding="utf-8")
    assert (work / "site" / "site.css").is_file() and (work / "site" / "search-index.js").is_file()
    catalogs = _run(installed, "dsh-conformance", "catalogs", "check")
    assert catalogs.returncode == 0, catalogs.stdout + catalogs.stderr


def test_coverage_from_the_wheel_measures_what_the_clone_does(installed):
    """Installed, the oracle's files are in site-packages, not beside the suite's parent:
    coverage once measured nothing there and exited 0 (issue 40). The wheel's figures are
    the clone's, and both pass."""
    figures = ("branches", "corpus", "generated", "both", "corpus_cases", "generated_scenarios")
    wheel = _run(installed, "dsh-conformance", "coverage", "--format", "json")
    clone = subprocess.run([str(Path(sys.executable).parent / "dsh-conformance"), "coverage", "--format", "json"],
                           capture_output=True, text=True, timeout=600)
    assert wheel.returncode == 0 and clone.returncode == 0, wheel.stderr[-1000:] + clone.stderr[-1000:]
    got, want = json.loads(wheel.stdout), json.loads(clone.stdout)
    assert {k: got[k] for k in figures} == {k: want[k] for k in figures} and got["corpus"] > 1000


def test_python_m_oracle_serves_from_the_package(installed):
    python = installed["bin"] / "python"
    served = _run(installed, python, "-m", "dsh_conformance.oracle", "run",
                  next((ROOT / "conformance" / "cases").glob("code-*.json")))
    assert served.returncode == 0 and '"$format":"dsh-conformance/trace/v1"' in served.stdout.replace(" ", "")


def test_docs_check_on_upstreams_tree(installed):
    if not UPSTREAM.is_dir():
        pytest.skip("../shared/upstream is not beside this clone")
    checked = _run(installed, "dsh-conformance", "docs", "check", "--root", UPSTREAM)
    # Upstream's real findings (README, docs check), all on its pipeline page, and nothing else.
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "docs check: 4 error(s), 0 warning(s)" in checked.stdout, checked.stdout
    errors = [line for line in checked.stdout.splitlines() if ": error: " in line]
    assert all("/docs/tool-execution-pipeline." in line for line in errors), errors
    missing = _run(installed, "dsh-conformance", "docs", "check")
    assert missing.returncode == 2 and "--root" in missing.stderr  # an installed suite has no docs of its own


FAKE = '''
"""A wrong implementation: the embedded oracle, reporting every final result unfrozen."""
import json, sys
from dsh_conformance.oracle import serve
for line in sys.stdin:
    msg = json.loads(line)
    if msg["cmd"] == "stop":
        break
    reply = serve.started() if msg["cmd"] == "start" else serve.answer(msg["seq"], msg["scenario"])
    for r in reply.get("trace", {}).get("results", []):
        r["frozen"] = False
    print(json.dumps(reply), flush=True)
'''


def test_pytest_plugin_in_another_project(installed):
    project = installed["work"] / "project"
    project.mkdir()
    (project / "test_mine.py").write_text("def test_mine():\n    assert True\n", encoding="utf-8")
    (project / "fake_iut.py").write_text(textwrap.dedent(FAKE), encoding="utf-8")
    python = installed["bin"] / "python"
    good = _run(installed, python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dsh-impl", "oracle",
                "--dsh-examples", "0", cwd=project)
    assert good.returncode == 0, good.stdout[-2000:]
    # the corpus; the draws skipped (--dsh-examples 0); the fuzz property not collected (no --dsh-fuzz)
    assert " passed" in good.stdout and "1 skipped" in good.stdout and "test_property" not in good.stdout
    mine = _run(installed, python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mine.py", cwd=project)
    assert mine.returncode == 0 and "1 passed" in mine.stdout  # without --dsh-impl the plugin stays out of the way
    bad = _run(installed, python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dsh-impl",
               f"{python} fake_iut.py", "--dsh-examples", "0", "-x", cwd=project)
    assert bad.returncode == 1, bad.stdout[-2000:]
    assert "P99" in bad.stdout or "frozen" in bad.stdout
    assert not (project / ".hypothesis").exists()


def test_the_sources_import_only_the_package_names():
    """Inside a clone, pytest puts the repository on sys.path, where `oracle`, `conformance`
    and `tools` would import as top-level packages of their own and hide a wrong import
    that an installed suite breaks on; so the sources must name dsh_conformance.*."""
    import ast

    wrong = []
    for folder in ("oracle", "conformance", "tools", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            if "node_modules" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
                if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args \
                        and isinstance(node.args[0], ast.Constant):
                    names = [str(node.args[0].value)]
                wrong += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                          if n.split(".")[0] in ("oracle", "conformance", "tools")]
    assert wrong == []


def test_the_real_package_installs_its_adapter_on_first_use(installed, tmp_path):
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("no Node and npm on this machine")
    cache = tmp_path / "cache"
    first = _run(installed, "dsh-conformance", "run", "--impl", "dsh", "--examples", "0",
                 "--expectations", "dsh-tools-0.1.0-rc.8", "--quiet", extra={"DSH_CONFORMANCE_CACHE": str(cache)})
    assert first.returncode == 0, first.stdout[-1500:] + first.stderr[-1500:]
    assert "installing the DSH adapter's pinned npm packages into" in first.stderr
    homes = list(cache.glob("adapter-*"))
    assert len(homes) == 1 and (homes[0] / "node_modules" / "@deepseek-ai" / "dsh-tools").is_dir()
    assert not (installed["site"] / "dsh_conformance" / "tools" / "dsh-adapter" / "node_modules").exists()
    again = _run(installed, "dsh-conformance", "replay", "code-run-value-and-its-text", "--impl", "dsh",
                 extra={"DSH_CONFORMANCE_CACHE": str(cache)})
    assert again.returncode == 0 and "installing" not in again.stderr, again.stderr


def test_diff_and_profiles_from_elsewhere(installed):
    """``diff`` of two runs (the oracle, then a wrong implementation), and ``--profiles``."""
    work = installed["work"]
    (work / "fake_iut.py").write_text(textwrap.dedent(FAKE), encoding="utf-8")
    python = installed["bin"] / "python"
    good = _run(installed, "dsh-conformance", "run", "--examples", "0", "--report", "good.jsonl", "--quiet",
                "--profiles", "core,reference,loop,code-mode")
    assert good.returncode == 0, good.stdout[-1500:] + good.stderr
    bad = _run(installed, "dsh-conformance", "run", "--impl", f"{python} fake_iut.py", "--examples", "0",
               "--report", "bad.jsonl", "--quiet")
    assert bad.returncode == 1
    diff = _run(installed, "dsh-conformance", "diff", "good.jsonl", "bad.jsonl", "--format", "md", "-o", "diff.md")
    assert diff.returncode == 1, diff.stderr
    text = (work / "diff.md").read_text(encoding="utf-8")
    assert "| regression | P99 |" in text and "frozen" in text
    same = _run(installed, "dsh-conformance", "diff", "good.jsonl", "good.jsonl")
    assert same.returncode == 0 and "0 regressions" in same.stdout


def test_a_dsh_working_tree_from_elsewhere(installed, tmp_path):
    from .dsh_trees import assemble_tree

    tree = assemble_tree(tmp_path)
    out = _run(installed, "dsh-conformance", "run", "--impl", f"dsh:{tree}", "--examples", "0", "--quiet",
               "--expectations", "dsh-tools-0.1.0-rc.8", extra={"DSH_CONFORMANCE_CACHE": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stdout[-1500:] + out.stderr[-1500:]
    assert "@deepseek-ai/dsh-tools 0.1.0-rc.8" in out.stdout


def test_a_published_version_from_elsewhere(installed, tmp_path):
    from .test_dsh_versions import _registry

    _registry()
    out = _run(installed, "dsh-conformance", "replay", "pre-deny-skips-body", "--impl", "dsh@0.1.0-rc.6",
               extra={"DSH_CONFORMANCE_CACHE": str(tmp_path / "cache")})
    assert out.returncode == 0 and out.stdout.startswith("pass: pre-deny-skips-body"), out.stdout + out.stderr
    assert (tmp_path / "cache" / "dsh-tools-0.1.0-rc.6" / "node_modules" / "@deepseek-ai" / "dsh-agent-loop").is_dir()


def test_the_js_kit_is_in_the_wheel_and_writes_from_elsewhere(installed):
    """The JS kit travels as package data: its generic half, the skeleton and the real adapter's
    binding; ``kit js`` from the installed suite writes the same bytes as the clone has."""
    from dsh_conformance.porting.kit_js import kit_files

    shipped = installed["site"] / "dsh_conformance" / "tools" / "dsh-adapter"
    listed = sorted(str(p.relative_to(shipped)) for p in shipped.rglob("*") if p.is_file() and p.suffix in (".mjs", ".md"))
    source = ROOT / "tools" / "dsh-adapter"
    ours = sorted(str(p.relative_to(source)) for p in source.rglob("*")
                  if p.is_file() and p.suffix in (".mjs", ".md") and "node_modules" not in p.parts)
    assert listed == ours and {"binding.mjs", "kit/protocol.mjs", "kit/skeleton/binding.mjs", "kit/README.md"} <= set(listed)
    out = _run(installed, "dsh-conformance", "kit", "js", "my-adapter")
    assert out.returncode == 0, out.stderr
    for name, path in kit_files().items():
        assert (installed["work"] / "my-adapter" / name).read_bytes() == path.read_bytes(), name
