"""Building a DSH checkout for the adapter (conformance.tree): a stale build refused, the
report header carrying the tree's commit, dirty flag and built-code digests, only changed
packages planned for a rebuild, and the toolchain range checks.

The run tests use a tree assembled from the pinned release's tarballs (tests/dsh_trees.py)
with a ``src/`` of its own added to dsh-tools, so its build can be stale. The test of a
real monorepo checkout runs when DSH_CONFORMANCE_TREE names one (a clone of
deepseek-harness at b150a551b8, say); it builds what the adapter needs (a minute the first
time, Node 22 and pnpm from the registry into the cache) and is skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dsh_conformance.dsh.package_sets import satisfies
from dsh_conformance.dsh.adapter_install import tree_home
from dsh_conformance.dsh.tree import (
    StaleBuild,
    check_fresh,
    plan,
    provenance,
    runtime_digest,
    source_digest,
    stale_reason,
    wanted_major,
)

from .conftest import corpus_subset
from .dsh_trees import assemble_tree, patch

pytestmark = pytest.mark.rules("P1")

CASES = ["pre-deny-skips-body", "pre-deny-shape-exact-keys"]


def cli(*args: str | Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DSH_CONFORMANCE_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "dsh_conformance.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=600, env=env)


def header_of(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8").splitlines()[0]))


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return assemble_tree(tmp_path_factory.mktemp("tree"))


def _work(tree: Path, where: Path) -> Path:
    work = where / "dsh"
    shutil.copytree(tree, work, symlinks=True)
    return work


def _before(sources: Path, built: Path) -> None:
    """Sources written before the build: ``sources`` (``src/``) and the package's configs
    older than every file of ``built``."""
    t = min(p.stat().st_mtime for p in built.rglob("*") if p.is_file()) - 10
    configs = [sources.parent / n for n in ("package.json", "tsconfig.json") if (sources.parent / n).is_file()]
    for p in [sources, *sources.rglob("*"), *configs]:
        os.utime(p, (t, t))


def _age(path: Path, seconds: float) -> None:
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        t = time.time() - seconds
        os.utime(p, (t, t), follow_symlinks=False)


def test_the_toolchain_range_is_read_as_npm_does():
    spec = "^22.19.0 || >=24.0.0"  # the monorepo's engines.node at b150a551b8
    assert [satisfies(v, spec) for v in ("20.20.2", "22.18.0", "22.19.0", "23.11.0", "24.0.0")] == \
        [False, False, True, False, True]
    assert wanted_major(spec, "20.20.2") == 22 and wanted_major(">=24", "20.20.2") == 24
    assert wanted_major("^18", "20.20.2") is None  # nothing newer the range allows


def test_only_the_packages_whose_sources_changed_are_planned(tmp_path):
    packages = {}
    for name in ("a", "b", "c"):
        pkg = tmp_path / name
        (pkg / "src").mkdir(parents=True)
        (pkg / "lib").mkdir()
        (pkg / "src" / "index.ts").write_text(f"export const {name} = 1\n")
        (pkg / "lib" / "index.js").write_text(f"export const {name} = 1\n")
        (pkg / "package.json").write_text(json.dumps({"name": name}))
        (pkg / "tsconfig.json").write_text("{}")
        packages[name] = pkg
    state = {"packages": {n: {"source": source_digest(p), "built": runtime_digest(p)} for n, p in packages.items()}}
    assert plan(tmp_path, packages, state) == {}
    (packages["b"] / "src" / "index.ts").write_text("export const b = 2\n")  # the maintainer's one-line change
    (packages["c"] / "lib" / "index.js").unlink()
    assert plan(tmp_path, packages, state) == {"b": "sources changed", "c": "not built"}
    assert plan(tmp_path, packages, {}) == {"a": "never built from here", "b": "never built from here",
                                            "c": "not built"}
    # A source newer than its build is stale even without a record; an older one is not.
    _age(packages["a"], 100)
    assert stale_reason(packages["a"]) is None
    _age(packages["a"] / "lib", 200)
    assert stale_reason(packages["a"]) == "src/index.ts is newer than its built lib/"
    assert stale_reason(packages["b"], state["packages"]["b"]["source"]) == "its sources changed since it was last built"


def test_freshness_uses_the_record_while_the_output_is_the_one_built_here(tmp_path, monkeypatch):
    monkeypatch.setenv("DSH_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "dsh"
    pkg = root / "packages" / "core" / "tools"
    (pkg / "src").mkdir(parents=True)
    (pkg / "lib").mkdir()
    (pkg / "package.json").write_text(json.dumps({"name": "@deepseek-ai/dsh-tools", "version": "1"}))
    (pkg / "tsconfig.json").write_text("{}")
    (pkg / "src" / "index.ts").write_text("export const a = 1\n")
    (pkg / "lib" / "index.js").write_text("export const a = 1\n")
    _before(pkg / "src", pkg / "lib")
    check_fresh(root)  # built after its sources: fresh
    home = tree_home(root.resolve())
    home.mkdir(parents=True)
    (home / "build-state.json").write_text(json.dumps({"packages": {"@deepseek-ai/dsh-tools": {
        "source": source_digest(pkg), "built": runtime_digest(pkg)}}}))
    (pkg / "src" / "index.ts").write_text("export const a = 2\n")  # changed, then given an old time
    _before(pkg / "src", pkg / "lib")
    with pytest.raises(StaleBuild, match=r"dsh-tools \(packages/core/tools\): its sources changed since it was last built"):
        check_fresh(root.resolve())
    (pkg / "lib" / "index.js").write_text("export const a = 2\n")  # the maintainer's own build
    check_fresh(root.resolve())


def test_a_stale_build_is_refused_and_the_header_says_what_ran(tree, tmp_path):
    cases = corpus_subset(tmp_path, CASES)
    cache = tmp_path / "cache"
    work = _work(tree, tmp_path)
    tools = work / "packages" / "dsh-tools"
    (tools / "src").mkdir(exist_ok=True)
    (tools / "src" / "index.ts").write_text("// the sources of the built lib/\n")
    (tools / "tsconfig.json").write_text("{}\n")
    _before(tools / "src", tools / "lib")  # built after its sources were written
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (work / ".gitignore").write_text("node_modules/\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tree"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()

    run = ["run", "--impl", f"dsh:{work}", "--cases", cases, "--examples", "0", "--quiet"]
    clean = cli(*run, "--report", tmp_path / "clean.jsonl", cache=cache)
    assert clean.returncode == 0, clean.stdout[-2000:] + clean.stderr
    build = header_of(tmp_path / "clean.jsonl")["implementation"]["build"]
    assert build["commit"] == head and build["dirty"] is False and build["path"] == str(work.resolve())
    assert build["packages"]["@deepseek-ai/dsh-tools"] == {"version": "0.1.0-rc.8", "path": "packages/dsh-tools",
                                                           "digest": runtime_digest(tools)}
    assert len(build["packages"]) == 20 and all(p["digest"] for p in build["packages"].values())

    # The maintainer edits the sources and does not rebuild: the run is refused, in a line.
    (tools / "src" / "index.ts").write_text("// changed, not rebuilt\n")
    stale = cli(*run, cache=cache)
    assert stale.returncode == 3, stale.stdout[-2000:]
    assert "the tree's build is stale" in stale.stderr and "@deepseek-ai/dsh-tools (packages/dsh-tools): " \
        "src/index.ts is newer than its built lib/" in stale.stderr
    assert "Traceback" not in stale.stderr

    # Rebuilt (here: the built file changed and is newer): it runs, dirty, with the new digest.
    patch(work, "dsh-tools", "text: `Error: ${denialReason}`", "text: `Denied: ${denialReason}`")
    _before(tools / "src", tools / "lib")
    changed = cli(*run, "--report", tmp_path / "changed.jsonl", cache=cache)
    assert changed.returncode == 1, changed.stdout[-2000:] + changed.stderr
    build = header_of(tmp_path / "changed.jsonl")["implementation"]["build"]
    assert build["dirty"] is True and "packages/dsh-tools/lib/index.js" in build["changed"]
    assert build["packages"]["@deepseek-ai/dsh-tools"]["digest"] == runtime_digest(tools)
    diff = cli("diff", tmp_path / "clean.jsonl", tmp_path / "changed.jsonl", cache=cache)
    assert diff.returncode == 1
    assert f"tree {work.resolve()} at {head[:10]} (dirty: " in diff.stdout
    assert "dsh-tools 0.1.0-rc.8: built code " in diff.stdout.split("Packages that differ:")[1]
    (replay,) = [ln for ln in diff.stdout.splitlines() if "replay: " in ln]  # one root cause: a text changed
    assert "pre-deny-" in replay and f"--impl dsh:{work.resolve()}" in replay

    # --build goes with a tree only.
    wrong = cli("run", "--impl", "dsh", "--build", "--cases", cases, "--examples", "0", cache=cache)
    assert wrong.returncode == 2 and "--build builds a DSH working tree" in wrong.stderr


def test_the_tree_command_on_built_packages_runs_and_diffs(tree, tmp_path):
    """``tree`` on a directory of built packages (nothing to build): the baseline is run once
    and kept, the tree's run diffs clean; after a change one group with its replay, exit 1."""
    cases = corpus_subset(tmp_path, CASES)
    cache = tmp_path / "cache"
    work = _work(tree, tmp_path)
    first = cli("tree", work, "--cases", cases, "--examples", "0", cache=cache)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "nothing to build" in first.stderr and "0 regressions, 0 improvements" in first.stdout
    patch(work, "dsh-tools", "text: `Error: ${denialReason}`", "text: `Denied: ${denialReason}`")
    second = cli("tree", work, "--cases", cases, "--examples", "0", cache=cache)
    assert second.returncode == 1, second.stdout + second.stderr
    assert "the baseline dsh was run before with these options" in second.stderr
    assert "Regressions by first divergence (2 cases, 1 root cause):" in second.stdout
    assert second.stdout.count("replay: dsh-conformance replay ") == 1
    # The same version as the release, other built code: the package that differs is named.
    assert "dsh-tools 0.1.0-rc.8: built code " in second.stdout.split("Packages that differ:")[1]
    assert (next(cache.glob("tree-*")) / "tree.previous.jsonl").is_file()
    bad = cli("tree", tmp_path / "nowhere", cache=cache)
    assert bad.returncode == 2 and "no such directory" in bad.stderr and "Traceback" not in bad.stderr


def test_the_published_set_records_its_packages(tmp_path):
    """A run on the pinned release records each package's version and built-code digest, so
    a diff against a tree run can say which packages differ (cordis 4.0.4 against 4.0.1)."""
    if shutil.which("node") is None:
        pytest.skip("no Node on this machine")
    cases = corpus_subset(tmp_path, CASES[:1])
    done = cli("run", "--impl", "dsh", "--cases", cases, "--examples", "0", "--quiet", "--report",
               tmp_path / "r.jsonl", cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    packages = header_of(tmp_path / "r.jsonl")["implementation"]["build"]["packages"]
    assert packages["@deepseek-ai/cordis"]["version"] == "4.0.4" and packages["@deepseek-ai/cordis"]["digest"]


def test_provenance_of_a_directory_without_git(tmp_path):
    pkg = tmp_path / "p"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "lib" / "index.js").write_text("export {}\n")
    (pkg / "package.json").write_text(json.dumps({"name": "@deepseek-ai/dsh-tools", "version": "9"}))
    doc = provenance(tmp_path, {"@deepseek-ai/dsh-tools": pkg})
    assert doc["commit"] is None and doc["dirty"] is None
    assert doc["packages"]["@deepseek-ai/dsh-tools"]["version"] == "9"


REAL = os.environ.get("DSH_CONFORMANCE_TREE")


@pytest.mark.skipif(not REAL, reason="DSH_CONFORMANCE_TREE names no DSH checkout (a clone of deepseek-harness at "
                    "b150a551b8): the real build is tested only on one")
def test_a_real_checkout_builds_and_diffs_clean_against_the_release(tmp_path):
    assert REAL is not None
    cache = Path(os.environ.get("DSH_CONFORMANCE_CACHE") or tmp_path / "cache")
    done = cli("tree", REAL, "--examples", "0", cache=cache)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "of the set's 20 packages" in done.stderr or "tree's 20 packages of the set are built" in done.stderr
    if subprocess.run(["git", "-C", REAL, "status", "--porcelain"], capture_output=True, text=True).stdout == "":
        assert done.returncode == 0 and "0 regressions, 0 improvements" in done.stdout, done.stdout
    again = cli("tree", REAL, "--examples", "0", cache=cache)
    assert "packages of the set are built from their current sources" in again.stderr  # nothing rebuilt


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None, reason="needs node and npm")
@pytest.mark.parametrize("ignore", [False, True])
def test_the_tree_runs_its_install_scripts_unless_told_not_to(tmp_path, ignore):
    """``tree PATH`` runs the tree's code with the user's rights, its install's lifecycle
    scripts first (issue 40): a tree whose postinstall leaves a mark. ``--ignore-scripts``
    installs without them (the build then stops: this tree has no compiler)."""
    from dsh_conformance.dsh.adapter_install import pinned_set

    root = tmp_path / "hostile-tree"
    package = root / "packages" / "tools"
    (package / "src").mkdir(parents=True)
    (package / "tsconfig.json").write_text("{}\n")
    (package / "package.json").write_text(json.dumps({"name": next(iter(pinned_set())), "version": "0.0.0"}))
    mark = root / "postinstall-ran"
    (root / "mark.js").write_text(f"require('fs').writeFileSync({json.dumps(str(mark))}, '')\n")
    script = "node mark.js"
    (root / "package.json").write_text(json.dumps({"name": "hostile-tree", "version": "1.0.0", "private": True,
                                                   "scripts": {"postinstall": script}}))
    (root / "package-lock.json").write_text(json.dumps({"name": "hostile-tree", "version": "1.0.0", "lockfileVersion": 3,
                                                        "requires": True, "packages": {"": {"name": "hostile-tree",
                                                                                            "version": "1.0.0"}}}))
    done = cli("tree", root, "--examples", "0", *(["--ignore-scripts"] if ignore else []), cache=tmp_path / "cache")
    assert done.returncode == 3 and "the tree cannot be built" in done.stderr, done.stderr[-2000:]
    assert mark.exists() != ignore, done.stderr[-2000:]
