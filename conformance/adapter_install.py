"""Where the Node adapter of the real DSH package runs from, and installing its npm packages.

The adapter's sources (``tools/dsh-adapter``: ``adapter.mjs``, ``lib/``, ``package.json`` and
the pinned ``package-lock.json``) are package data; its ``node_modules`` never are. In a
clone, ``make dsh`` installs them beside the sources and they are used there. Otherwise the
sources are copied, on first use, into a per-user cache directory
(``$DSH_CONFORMANCE_CACHE``, else ``$XDG_CACHE_HOME/dsh-conformance``, else
``~/.cache/dsh-conformance``) under a name that is the lock file's digest, and ``npm ci``
installs the pinned packages there, once, with its progress on stderr.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .resources import ADAPTER

SOURCES = ("adapter.mjs", "package.json", "package-lock.json", "README.md")


class AdapterInstallError(Exception):
    """The adapter's npm packages could not be installed (no npm, no registry, ...)."""


def cache_root() -> Path:
    explicit = os.environ.get("DSH_CONFORMANCE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dsh-conformance"


def lock_digest(source: Path = ADAPTER) -> str:
    return hashlib.sha256((source / "package-lock.json").read_bytes()).hexdigest()[:16]


def installed(directory: Path) -> bool:
    return (directory / "node_modules" / "@deepseek-ai" / "dsh-tools" / "package.json").is_file()


def adapter_dir(source: Path = ADAPTER, log: object = sys.stderr) -> Path:
    """A directory holding the adapter with its pinned npm packages installed."""
    if installed(source):
        return source  # a clone after `make dsh`
    home = cache_root() / f"adapter-{lock_digest(source)}"
    if installed(home) and _same_sources(source, home):
        return home
    _copy_sources(source, home)
    _npm_ci(home, log)
    return home


def _same_sources(source: Path, home: Path) -> bool:
    files = [*SOURCES, *(f"lib/{p.name}" for p in sorted((source / "lib").glob("*.mjs")))]
    return all((home / f).is_file() and (home / f).read_bytes() == (source / f).read_bytes()
               for f in files if (source / f).is_file())


def _copy_sources(source: Path, home: Path) -> None:
    (home / "lib").mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        if (source / name).is_file():
            shutil.copyfile(source / name, home / name)
    for p in (source / "lib").glob("*.mjs"):
        shutil.copyfile(p, home / "lib" / p.name)


def _npm_ci(home: Path, log: object) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise AdapterInstallError("the DSH adapter needs npm (Node 20 or newer) to install its packages; none is on PATH")
    print(f"dsh-conformance: installing the DSH adapter's pinned npm packages into {home} "
          "(once; npm ci, which may take a minute)", file=log, flush=True)  # type: ignore[call-overload]
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=http", "--progress=true"], cwd=home,
                          stdout=log, stderr=log, check=False)  # type: ignore[arg-type]
    if done.returncode != 0 or not installed(home):
        raise AdapterInstallError(f"npm ci in {home} failed (exit {done.returncode}); see its output above")
    print("dsh-conformance: the DSH adapter is installed", file=log, flush=True)  # type: ignore[call-overload]
