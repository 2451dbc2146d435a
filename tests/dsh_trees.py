"""A DSH working tree for tests, assembled from the published tarballs.

The tree has the monorepo's shape after its install and build: each ``@deepseek-ai``
package of the adapter's pinned set unpacked from its ``npm pack`` tarball under
``packages/<name>/`` (package.json and the built ``lib/``), the workspace links a workspace
install makes (``node_modules/@deepseek-ai/<name>`` -> ``packages/<name>``), and the
third-party dependencies in ``node_modules``. The tarballs come from npm's cache (``npm
pack --offline``): ``make test`` has put them there with ``npm ci``; without them the
tests that need a tree are skipped, saying so.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from .conftest import ROOT

LOCK = ROOT / "tools" / "dsh-adapter" / "package-lock.json"


def pinned_packages() -> dict[str, str]:
    """Every package of the adapter's pinned lock (transitive ones included): name -> version."""
    lock = json.loads(LOCK.read_text(encoding="utf-8"))
    return {path.removeprefix("node_modules/"): entry["version"]
            for path, entry in lock["packages"].items() if path.startswith("node_modules/")}


def assemble_tree(where: Path) -> Path:
    """A DSH tree at ``where`` built from the pinned release's tarballs; skips the test when
    npm or its cache cannot give them."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("no Node and npm on this machine")
    tarballs = where / "tarballs"
    tarballs.mkdir(parents=True)
    specs = [f"{name}@{version}" for name, version in pinned_packages().items()]
    packed = subprocess.run([npm, "pack", "--offline", "--silent", *specs], cwd=tarballs, capture_output=True,
                            text=True, timeout=300)
    if packed.returncode != 0:
        pytest.skip("npm's cache does not hold the pinned tarballs (run `make test` once with the registry "
                    f"reachable): {packed.stderr.strip().splitlines()[-1:]}")
    tree = where / "dsh"
    (tree / "node_modules" / "@deepseek-ai").mkdir(parents=True)
    (tree / "package.json").write_text(json.dumps({"name": "dsh-root", "private": True,
                                                   "workspaces": ["packages/*"]}), encoding="utf-8")
    for name in pinned_packages():
        tarball = tarballs / (name.lstrip("@").replace("/", "-") + f"-{pinned_packages()[name]}.tgz")
        scope, short = name.split("/", 1)
        target = tree / "packages" / short if scope == "@deepseek-ai" else tree / "node_modules" / scope / short
        _unpack(tarball, target)
        if scope == "@deepseek-ai":  # the workspace link an install makes
            (tree / "node_modules" / scope / short).symlink_to(Path("..", "..", "packages", short),
                                                               target_is_directory=True)
    return tree


def _unpack(tarball: Path, target: Path) -> None:
    """A package tarball's ``package/`` folder as ``target``."""
    target.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            if not member.name.startswith("package/") or not (member.isfile() or member.isdir()):
                continue
            member.name = member.name.removeprefix("package/")
            tar.extract(member, target, filter="data")


def patch(tree: Path, package: str, old: str, new: str) -> None:
    """A maintainer's change to a built file of the tree (``lib/index.js`` of ``package``)."""
    f = tree / "packages" / package / "lib" / "index.js"
    text = f.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {f}"
    f.write_text(text.replace(old, new), encoding="utf-8")
