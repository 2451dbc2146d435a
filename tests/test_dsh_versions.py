"""Other DSH versions and working trees: the package set resolved for a version, a tree's
built packages run through the adapter, what a set lacks answered per scenario, a set the
adapter cannot drive refused in one line, and ``--profiles``.

The tree tests run the real adapter on a tree assembled from the pinned release's tarballs
(tests/dsh_trees.py, npm's cache: no registry needed). The tests that install a published
version from the registry run when DSH_CONFORMANCE_REGISTRY_TESTS=1 (``.ci/run`` sets it) and
the registry answers; otherwise they are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_conformance.dsh.package_sets import NotPublished, lockstep_version, resolve, semver_key

from .conftest import FAKE, corpus_subset
from .dsh_trees import assemble_tree, patch
from .hang_guards import wait_until

pytestmark = pytest.mark.rules("P1")

# What the registry held when this was written (npm view ... versions), for the resolver.
REGISTRY = {
    "@deepseek-ai/dsh-tools": ["0.0.1-rc.1", "0.1.0-rc.6", "0.1.0-rc.7", "0.1.0-rc.8"],
    "@deepseek-ai/dsh-agent": ["0.1.0-rc.6", "0.1.0-rc.7", "0.1.0-rc.8", "0.1.1-rc.2"],
    "@deepseek-ai/dsh-agent-loop": ["0.1.0-rc.6", "0.1.0-rc.8"],
    "@deepseek-ai/dsh-tool-call-timeout-policy": ["0.0.1-rc.3", "0.1.0-rc.8"],
    "@deepseek-ai/dsh-llm": ["0.0.1-rc.1", "0.1.0-rc.6", "0.1.0-rc.7", "0.1.0-rc.8", "0.1.1-rc.2"],
}
PINNED = {"@deepseek-ai/cordis": "4.0.4", "@deepseek-ai/cosmokit": "1.8.5", "@deepseek-ai/schemastery": "3.18.4",
          **{name: "0.1.0-rc.8" for name in REGISTRY}}


def _manifest(name: str, version: str) -> dict[str, Any]:
    assert name == "@deepseek-ai/dsh-tools"
    return {"dependencies": {"@deepseek-ai/schemastery": "^3.18.1"},
            "peerDependencies": {"@deepseek-ai/cordis": "^4.0.1", "@deepseek-ai/dsh-llm": f"^{version}"}}


def test_semver_precedence_orders_prereleases_as_npm_does():
    ordered = ["0.0.1-rc.1", "0.0.1-rc.3", "0.0.1", "0.1.0-alpha", "0.1.0-rc.6", "0.1.0-rc.10", "0.1.0", "0.1.1-rc.2"]
    assert sorted(reversed(ordered), key=semver_key) == ordered
    assert lockstep_version("0.1.0-rc.7", REGISTRY["@deepseek-ai/dsh-agent-loop"]) == "0.1.0-rc.6"
    assert lockstep_version("0.1.0-rc.7", REGISTRY["@deepseek-ai/dsh-tool-call-timeout-policy"]) is None
    assert lockstep_version("0.1.0-rc.8", REGISTRY["@deepseek-ai/dsh-agent"]) == "0.1.0-rc.8"  # never 0.1.1-rc.2


def test_a_version_gets_the_newest_package_of_its_line_and_no_later():
    found = resolve("0.1.0-rc.7", PINNED, REGISTRY.__getitem__, _manifest)
    assert found.dependencies == {
        "@deepseek-ai/cordis": "^4.0.1",  # the range dsh-tools rc.7 declares
        "@deepseek-ai/schemastery": "^3.18.1",
        "@deepseek-ai/dsh-tools": "0.1.0-rc.7",
        "@deepseek-ai/dsh-agent": "0.1.0-rc.7",
        "@deepseek-ai/dsh-agent-loop": "0.1.0-rc.6",  # no rc.7 was published
        "@deepseek-ai/dsh-llm": "0.1.0-rc.7",
    }
    assert list(found.absent) == ["@deepseek-ai/dsh-tool-call-timeout-policy"]
    assert "0.0.1-rc.3, 0.1.0-rc.8" in found.absent["@deepseek-ai/dsh-tool-call-timeout-policy"]
    old = resolve("0.0.1-rc.1", PINNED, REGISTRY.__getitem__, _manifest)
    assert set(old.absent) == {"@deepseek-ai/dsh-agent", "@deepseek-ai/dsh-agent-loop",
                               "@deepseek-ai/dsh-tool-call-timeout-policy"}
    with pytest.raises(NotPublished, match=r"0\.1\.0-rc\.9 is not published; the registry has 0\.0\.1-rc\.1, "):
        resolve("0.1.0-rc.9", PINNED, REGISTRY.__getitem__, _manifest)


# ------------------------------------------------------------------ the command line

def cli(*args: str | Path, cache: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DSH_CONFORMANCE_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "dsh_conformance.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=cwd)


def report_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


CASES = ["pre-deny-skips-body", "pre-deny-shape-exact-keys", "code-run-value-and-its-text", "loop-argument-parsing",
         "timeout-policy-fires"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return assemble_tree(tmp_path_factory.mktemp("tree"))


def _copy_tree(tree: Path, where: Path) -> Path:
    copy = where / "dsh"
    shutil.copytree(tree, copy, symlinks=True)
    return copy


def test_a_working_tree_runs_and_diff_shows_a_maintainers_change(tree, tmp_path):
    cases = corpus_subset(tmp_path, CASES)
    cache = tmp_path / "cache"
    work = _copy_tree(tree, tmp_path)
    release = cli("run", "--impl", "dsh", "--cases", cases, "--examples", "0", "--report", tmp_path / "release.jsonl",
                  cache=cache)
    assert release.returncode == 0, release.stdout[-2000:] + release.stderr
    same = cli("run", "--impl", f"dsh:{work}", "--cases", cases, "--examples", "0", "--report", tmp_path / "tree.jsonl",
               cache=cache)
    assert same.returncode == 0, same.stdout[-2000:] + same.stderr
    header = report_of(tmp_path / "tree.jsonl")[0]
    assert header["implementation"]["source"] == "tree dsh" and header["implementation"]["version"] == "0.1.0-rc.8"
    links = next(cache.glob("tree-*")) / "node_modules" / "@deepseek-ai"
    assert (links / "dsh-tools").resolve() == (work / "packages" / "dsh-tools").resolve()
    # The same packages give the same traces: nothing changed, case by case.
    unchanged = cli("diff", tmp_path / "release.jsonl", tmp_path / "tree.jsonl", cache=cache)
    assert unchanged.returncode == 0, unchanged.stdout
    assert "0 regressions, 0 improvements, 0 other changes; 0 traces changed" in unchanged.stdout

    patch(work, "dsh-tools", "text: `Error: ${denialReason}`", "text: `Denied: ${denialReason}`")
    changed = cli("run", "--impl", f"dsh:{work}", "--cases", cases, "--examples", "0", "--report",
                  tmp_path / "patched.jsonl", cache=cache)
    assert changed.returncode == 1, changed.stdout[-2000:]  # the tree's current build is what runs
    diff = cli("diff", tmp_path / "release.jsonl", tmp_path / "patched.jsonl", "--full", cache=cache)
    assert diff.returncode == 1, diff.stdout
    assert "regression  pre-deny-skips-body: pass -> fail" in diff.stdout
    assert 'expected "Error: ' in diff.stdout and 'actual "Denied: ' in diff.stdout
    md = cli("diff", tmp_path / "release.jsonl", tmp_path / "patched.jsonl", "--format", "md", cache=cache)
    assert md.returncode == 1 and "| regression | `pre-deny-skips-body` | pass | fail |" in md.stdout
    doc = json.loads(cli("diff", tmp_path / "release.jsonl", tmp_path / "patched.jsonl", "--format", "json",
                         cache=cache).stdout)
    assert doc["counts"]["regressions"] >= 1 and doc["newDivergences"]
    assert {"id": "pre-deny-skips-body", "old": "pass", "new": "fail", "kind": "regression"}.items() <= \
        next(c for c in doc["cases"] if c["id"] == "pre-deny-skips-body").items()
    back = cli("diff", tmp_path / "patched.jsonl", tmp_path / "release.jsonl", "--full", cache=cache)
    assert back.returncode == 0 and "improvement pre-deny-skips-body: fail -> pass" in back.stdout
    assert "Vanished divergences:" in back.stdout


def test_runs_on_one_tree_at_once_take_turns_and_both_finish(tree, tmp_path):
    import fcntl
    import hashlib

    cases = corpus_subset(tmp_path, CASES[:2])
    cache = tmp_path / "cache"
    work = _copy_tree(tree, tmp_path)
    home = cache / f"tree-{hashlib.sha256(str(work.resolve()).encode()).hexdigest()[:16]}"
    (cache / "locks").mkdir(parents=True)
    env = {**os.environ, "DSH_CONFORMANCE_CACHE": str(cache)}
    argv = [sys.executable, "-m", "dsh_conformance.cli", "run", "--impl", f"dsh:{work}", "--cases", str(cases),
            "--examples", "0", "-q"]
    waiting = "waiting for another dsh-conformance run that is preparing"
    logs = [(tmp_path / f"out{i}", tmp_path / f"err{i}") for i in (1, 2)]
    with open(cache / "locks" / f"{home.name}.lock", "a+b") as held:  # another run is preparing the directory
        fcntl.flock(held, fcntl.LOCK_EX)
        runs = [subprocess.Popen(argv, stdout=out.open("w"), stderr=err.open("w"), text=True, env=env)
                for out, err in logs]
        # Release only once both have said they wait: a fixed pause loses the race on a busy
        # machine, where starting Python may take longer than the pause.
        try:
            for run, (_, err) in zip(runs, logs):
                wait_until(lambda: waiting in err.read_text(), run, 240, pause=0.2)
        except AssertionError as e:
            raise AssertionError([err.read_text()[-2000:] for _, err in logs]) from e
        assert all(p.poll() is None for p in runs)  # both still wait for the lock
        fcntl.flock(held, fcntl.LOCK_UN)
    for p, (out, err) in zip(runs, logs):
        p.wait(timeout=300)
        assert p.returncode == 0, out.read_text()[-2000:] + err.read_text()
        assert "2 cases: 2 pass" in out.read_text()
    links = home / "node_modules" / "@deepseek-ai"
    assert (links / "dsh-tools").resolve() == (work / "packages" / "dsh-tools").resolve()


def test_what_a_tree_lacks_is_answered_per_scenario(tree, tmp_path):
    work = _copy_tree(tree, tmp_path)
    for short in ("dsh-agent-loop", "dsh-tool-call-timeout-policy"):
        shutil.rmtree(work / "packages" / short)
        (work / "node_modules" / "@deepseek-ai" / short).unlink()
    cases = corpus_subset(tmp_path, CASES)
    out = cli("run", "--impl", f"dsh:{work}", "--cases", cases, "--examples", "0", "--report", tmp_path / "r.jsonl",
              cache=tmp_path / "cache")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr
    records = {r["id"]: r for r in report_of(tmp_path / "r.jsonl") if r["kind"] == "case"}
    assert report_of(tmp_path / "r.jsonl")[0]["profiles"] == ["code-mode", "core", "reference"]
    assert records["loop-argument-parsing"]["outcome"] == "not-scored"
    # The tree's adapter does not declare the timeout policy among its features: a case that
    # needs it is not sent (issue 24), and says which feature it needs.
    assert records["timeout-policy-fires"]["outcome"] == "not-scored"
    assert "timeout-policy" in records["timeout-policy-fires"]["message"]
    assert records["pre-deny-skips-body"]["outcome"] == "pass"
    # Asked to score the loop profile, the run fails and says why.
    asked = cli("run", "--impl", f"dsh:{work}", "--cases", cases, "--examples", "0", "--profiles", "reference,loop",
                cache=tmp_path / "cache")
    assert asked.returncode == 1, asked.stdout[-2000:]
    assert ("NOT SCORED: profile loop was asked for and no rule of it was scored: the implementation does not "
            "support it (it supports core, reference, code-mode)") in asked.stdout


def test_a_set_the_adapter_cannot_drive_is_one_line_and_exit_3(tree, tmp_path):
    work = _copy_tree(tree, tmp_path)
    patch(work, "dsh-tools", "TOOL_RUNTIME_SCHEDULER, ToolArgsError", "ToolArgsError")  # an export renamed away
    out = cli("run", "--impl", f"dsh:{work}", "--examples", "0", cache=tmp_path / "cache")
    assert out.returncode == 3, out.stdout + out.stderr
    [line] = out.stderr.strip().splitlines()  # one line, naming what is missing (the loop breaks on it too)
    assert line.startswith("error: the implementation is broken: the adapter cannot drive @deepseek-ai/dsh-tools "
                           "0.1.0-rc.8: ")
    assert ("@deepseek-ai/dsh-tools 0.1.0-rc.8 exports no scheduler key (TOOL_RUNTIME_SCHEDULER from 0.1.0-rc.6, "
            "TOOL_REGISTRY_SCHEDULER in 0.0.1-rc.1)") in line
    (work / "packages" / "dsh-tools" / "lib" / "index.js").unlink()
    unbuilt = cli("run", "--impl", f"dsh:{work}", "--examples", "0", cache=tmp_path / "cache")
    assert unbuilt.returncode == 3 and len(unbuilt.stderr.strip().splitlines()) == 1, unbuilt.stderr
    assert "is not built: @deepseek-ai/dsh-tools (packages/dsh-tools) has no lib/index.js" in unbuilt.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    none = cli("run", "--impl", f"dsh:{empty}", "--examples", "0", cache=tmp_path / "cache")
    assert none.returncode == 2 and "no @deepseek-ai/dsh-tools package under it" in none.stderr


def test_profiles_name_what_must_be_scored(tmp_path):
    cases = corpus_subset(tmp_path, ["pre-deny-skips-body", "loop-argument-parsing"])
    fake = f"{sys.executable} {FAKE} no-loop"
    for asked in (["--profiles", "core,reference,loop"], ["--profile", "core", "--profile", "reference", "--profile", "loop"]):
        out = cli("run", "--impl", fake, "--cases", cases, "--examples", "0", *asked, "--report", tmp_path / "r.jsonl",
                  cache=tmp_path / "cache")
        assert out.returncode == 1, out.stdout
        assert "NOT SCORED: profile loop was asked for" in out.stdout
        assert report_of(tmp_path / "r.jsonl")[-1]["unscored"] == ["loop"]
    unasked = cli("run", "--impl", fake, "--cases", cases, "--examples", "0", cache=tmp_path / "cache")
    assert unasked.returncode == 0 and "NOT SCORED" not in unasked.stdout  # not asked: not required
    scored = cli("run", "--impl", fake, "--cases", cases, "--examples", "0", "--profiles", "core,reference",
                 cache=tmp_path / "cache")
    assert scored.returncode == 0, scored.stdout
    unknown = cli("run", "--profiles", "core,nope", cache=tmp_path / "cache")
    assert unknown.returncode == 2 and "unknown profile 'nope'" in unknown.stderr
    replay = cli("replay", "pre-deny-skips-body", "--impl", fake, "--profiles", "core,reference,loop",
                 cache=tmp_path / "cache")
    assert replay.returncode == 1 and "does not support it" in replay.stdout


# ------------------------------------------------------------------ the registry

def _registry() -> None:
    if os.environ.get("DSH_CONFORMANCE_REGISTRY_TESTS") != "1":
        pytest.skip("installs published versions from the npm registry: set DSH_CONFORMANCE_REGISTRY_TESTS=1 "
                    "(.ci/run does)")
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("no Node and npm on this machine")
    try:
        asked = subprocess.run([npm, "view", "@deepseek-ai/dsh-tools", "version"], capture_output=True, text=True,
                               timeout=60)
    except subprocess.TimeoutExpired:
        pytest.skip("the npm registry does not answer (60 s)")
    if asked.returncode != 0:
        pytest.skip(f"the npm registry is unreachable: {asked.stderr.strip().splitlines()[-1:]}")


@pytest.mark.parametrize("version", ["0.1.0-rc.7", "0.0.1-rc.1"])
def test_a_published_version_installs_once_and_runs(version, tmp_path):
    _registry()
    cache = tmp_path / "cache"
    cases = corpus_subset(tmp_path, CASES)
    first = cli("run", "--impl", f"dsh@{version}", "--cases", cases, "--examples", "0", "--report",
                tmp_path / "r.jsonl", cache=cache)
    assert first.returncode in (0, 1), first.stdout[-2000:] + first.stderr
    assert f"resolving the @deepseek-ai packages for dsh-tools {version}" in first.stderr
    home = cache / f"dsh-tools-{version}"
    generated = json.loads((home / "package.json").read_text(encoding="utf-8"))
    assert generated["dependencies"]["@deepseek-ai/dsh-tools"] == version
    records = {r["id"]: r for r in report_of(tmp_path / "r.jsonl") if r["kind"] == "case"}
    assert report_of(tmp_path / "r.jsonl")[0]["implementation"]["version"] == version
    # No timeout policy before rc.8: the adapter does not declare the feature, and a case that
    # needs it is not sent (issue 24: not-scored, saying which feature, rather than skipped).
    rec = records["timeout-policy-fires"]
    assert rec["outcome"] == "not-scored" and "timeout-policy" in rec["message"], rec
    if version == "0.0.1-rc.1":
        assert "peer-dependency leniency" in first.stderr and generated["dshConformance"]["peerLeniency"] is True
        assert records["loop-argument-parsing"]["outcome"] == "not-scored"  # no agent loop at 0.0.1
    else:
        assert generated["dependencies"]["@deepseek-ai/dsh-agent-loop"] == "0.1.0-rc.6"
        assert records["loop-argument-parsing"]["outcome"] == "pass"
    again = cli("replay", "pre-deny-skips-body", "--impl", f"dsh@{version}", cache=cache)
    assert again.returncode == 0 and "resolving" not in again.stderr, again.stderr


def test_an_unpublished_version_is_a_usage_error(tmp_path):
    _registry()
    out = cli("run", "--impl", "dsh@0.1.0-rc.99", "--examples", "0", cache=tmp_path / "cache")
    assert out.returncode == 2
    assert "@deepseek-ai/dsh-tools 0.1.0-rc.99 is not published; the registry has 0.0.1-rc.1, 0.1.0-rc.6" in out.stderr
