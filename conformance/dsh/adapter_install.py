"""Where the Node adapter of the real DSH package runs from, and installing its npm packages.

The adapter's sources (``tools/dsh-adapter``: ``adapter.mjs``, the JS kit's generic half in
``kit/``, the DSH binding ``binding.mjs`` and its ``lib/``, ``package.json`` and the pinned
``package-lock.json``) are package data; its ``node_modules`` never are. In a
clone, ``make dsh`` installs them beside the sources and they are used there. Otherwise the
sources are copied, on first use, into a per-user cache directory
(``$DSH_CONFORMANCE_CACHE``, else ``$XDG_CACHE_HOME/dsh-conformance``, else
``~/.cache/dsh-conformance``) under a name that is the lock file's digest, and ``npm ci``
installs the pinned packages there, once, saying so in one line on stderr (npm's own
output is shown only when it fails).

Other versions and working trees (``--impl dsh@VERSION``, ``--impl dsh:PATH``) get a cache
directory of their own, holding a copy of the adapter's sources beside a generated
``package.json``:

- ``dsh-tools-<VERSION>/``: the package set resolved for that version from the registry
  (``conformance.package_sets``), installed once with ``npm install`` (with peer-dependency
  leniency when the set breaks its own peer ranges, said on stderr); the resolution is kept
  in the generated ``package.json`` (field ``dshConformance``) and npm's lock beside it, so
  later runs need no registry. The version the adapter pins (rc.8) is the pinned lock's.
- ``tree-<digest of the path>/``: ``node_modules/@deepseek-ai/<name>`` links to the packages
  of the tree (their built ``lib/`` output), checked on every run and renewed when the
  tree's packages moved; links point into the tree, so its current build is what runs.
  Building the tree (``dsh-conformance tree``) keeps its ``build-state.json`` there
  (``conformance.tree``).

Two runs that need the same directory at once (two terminals, xdist workers, CI jobs on one
cache) take turns: each holds an exclusive lock on ``locks/<directory>.lock`` in the cache
while it checks, installs or relinks, and the one that waits says so on stderr.

Before a run on either, ``node adapter.mjs --check`` asks the adapter whether it can drive
the set (``lib/compat.mjs``); when it cannot, its one line is the error (exit 3).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from dsh_conformance.dsh.package_sets import TOOLS, NotPublished, resolve
from dsh_conformance.resources import ADAPTER

SOURCES = ("adapter.mjs", "binding.mjs", "package.json", "package-lock.json", "README.md")
PROGRAM = ("adapter.mjs", "binding.mjs", "README.md")  # what a version's or a tree's directory copies (its package.json is its own)
MODULES = ("kit", "lib")  # folders of .mjs modules: the kit's generic half, the binding's helpers
SCOPE = "@deepseek-ai"


class AdapterInstallError(Exception):
    """The adapter's npm packages could not be installed (no npm, no registry, ...), or the
    installed set cannot be driven: the implementation cannot start (exit 3)."""


class CannotDrive(AdapterInstallError):
    """The installed package set lacks what the adapter needs (``adapter.mjs --check``)."""


class AdapterSpecError(ValueError):
    """``--impl dsh@VERSION`` or ``dsh:PATH`` names nothing the adapter can use (exit 2)."""


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


@contextlib.contextmanager
def turn(home: Path, log: object) -> Iterator[None]:
    """Hold the exclusive lock of cache directory ``home``: one run at a time installs,
    relinks or checks it (the others wait, then find it done)."""
    locks = home.parent / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{home.name}.lock", "a+b") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(log, f"waiting for another dsh-conformance run that is preparing {home}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def adapter_dir(source: Path = ADAPTER, log: object = sys.stderr) -> Path:
    """A directory holding the adapter with its pinned npm packages installed."""
    if installed(source):
        return source  # a clone after `make dsh`
    home = cache_root() / f"adapter-{lock_digest(source)}"
    with turn(home, log):
        if installed(home) and _same_sources(source, home):
            return home
        _copy_sources(source, home)
        _npm_ci(home, log)
    return home


def _modules(directory: Path) -> set[str]:
    """The .mjs modules of ``directory``'s module folders, as paths relative to it."""
    return {f"{folder}/{p.name}" for folder in MODULES if (directory / folder).is_dir()
            for p in (directory / folder).glob("*.mjs")}


def _same_sources(source: Path, home: Path, names: tuple[str, ...] = SOURCES) -> bool:
    ours = _modules(source)
    files = [*names, *sorted(ours)]
    return ours == _modules(home) and all((home / f).is_file() and (home / f).read_bytes() == (source / f).read_bytes()
                                          for f in files if (source / f).is_file())


def _copy_sources(source: Path, home: Path, names: tuple[str, ...] = SOURCES) -> None:
    for folder in MODULES:
        (home / folder).mkdir(parents=True, exist_ok=True)
    for name in names:
        if (source / name).is_file():
            shutil.copyfile(source / name, home / name)
    ours = _modules(source)
    for stale in _modules(home) - ours:  # a module an older adapter had
        (home / stale).unlink()
    for module in sorted(ours):
        shutil.copyfile(source / module, home / module)


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise AdapterInstallError("the DSH adapter needs npm (Node 20 or newer) to install its packages; none is on PATH")
    return npm


def say(log: object, text: str) -> None:
    print(f"dsh-conformance: {text}", file=log, flush=True)  # type: ignore[call-overload]


# ------------------------------------------------------------------ published versions

def pinned_set(source: Path = ADAPTER) -> dict[str, str]:
    """The adapter's own package set: name -> the exact version its package.json pins."""
    return dict(json.loads((source / "package.json").read_text(encoding="utf-8"))["dependencies"])


def pinned_version(source: Path = ADAPTER) -> str:
    return pinned_set(source)[TOOLS]


def _npm_view(args: list[str]) -> Any:
    done = subprocess.run([_npm(), "view", *args, "--json"], capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        try:
            summary = json.loads(done.stdout or "{}").get("error", {}).get("summary")
        except (json.JSONDecodeError, AttributeError):
            summary = None
        lines = [ln for ln in (done.stderr or "").splitlines() if ln.strip()]
        why = summary or (lines[-1] if lines else f"exit {done.returncode}")
        raise AdapterInstallError(f"npm view {' '.join(args)} failed: {why}")
    return json.loads(done.stdout or "null")


def _versions_of(name: str) -> list[str]:
    versions = _npm_view([name, "versions"])
    return [versions] if isinstance(versions, str) else list(versions or [])


def _manifest_of(name: str, version: str) -> dict[str, Any]:
    doc = _npm_view([f"{name}@{version}"])
    return doc[-1] if isinstance(doc, list) else doc


def version_dir(version: str, source: Path = ADAPTER, log: object = sys.stderr) -> Path:
    """A directory holding the adapter with the package set of dsh-tools ``version``
    installed (resolved and installed on first use, then reused). Raises AdapterSpecError
    for a version the registry does not have, AdapterInstallError when npm fails."""
    if version == pinned_version(source):
        return adapter_dir(source, log)
    home = cache_root() / f"dsh-tools-{version}"
    with turn(home, log):
        return _version_dir(version, home, source, log)


def _version_dir(version: str, home: Path, source: Path, log: object) -> Path:
    if installed(home) and _generated(home).get("dshTools") == version:
        if not _same_sources(source, home, PROGRAM):
            _copy_sources(source, home, PROGRAM)
        return home
    pinned = pinned_set(source)
    say(log, f"resolving the @deepseek-ai packages for dsh-tools {version} (npm view, once)")
    listed = {TOOLS: _versions_of(TOOLS)}
    if version in listed[TOOLS]:
        names = sorted(n for n in pinned if n != TOOLS and pinned[n] == pinned[TOOLS])
        with ThreadPoolExecutor(max_workers=6) as pool:
            listed.update(zip(names, pool.map(_versions_of, names)))
    try:
        found = resolve(version, pinned, listed.__getitem__, _manifest_of)
    except NotPublished as e:
        raise AdapterSpecError(f"--impl dsh@{version}: {e}") from None
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    _copy_sources(source, home, PROGRAM)
    manifest = json.loads((source / "package.json").read_text(encoding="utf-8"))
    manifest["description"] = f"IUT protocol v1 adapter driving @deepseek-ai/dsh-tools {version} (generated)"
    manifest["dependencies"] = found.dependencies
    manifest["dshConformance"] = found.to_json()
    (home / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    for name, why in found.absent.items():
        say(log, f"{name} is left out of the set: {why}")
    _npm_install(home, log)
    return home


def _generated(home: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((home / "package.json").read_text(encoding="utf-8")).get("dshConformance") or {})
    except (OSError, ValueError):
        return {}


def _npm_install(home: Path, log: object) -> None:
    npm = _npm()
    say(log, f"installing them into {home} (once; npm install, which may take a minute)")
    base = [npm, "install", "--no-audit", "--no-fund", "--loglevel=http", "--progress=false"]
    code, output = _quiet(base, home)
    if code != 0 and "ERESOLVE" in output:
        # An old set breaks the peer ranges its own packages declare (a peer never published
        # at that version): install the resolved set as it is, without npm's peer checks.
        found = re.search(r'peer (\S+@"[^"]+") from (\S+)', output)
        conflict = f"{found.group(2)} wants {found.group(1)}" if found else "a peer-dependency conflict"
        say(log, f"the set breaks its own peer ranges ({conflict}); "
                  "installing it with peer-dependency leniency (--legacy-peer-deps)")
        manifest = json.loads((home / "package.json").read_text(encoding="utf-8"))
        manifest["dshConformance"]["peerLeniency"] = True
        (home / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        code, output = _quiet([*base, "--legacy-peer-deps"], home)
    if code != 0 or not installed(home):
        raise AdapterInstallError(f"npm install in {home} failed (exit {code}):\n{_tail(output)}")
    say(log, "the package set is installed")


def _quiet(cmd: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``cmd`` with its output kept, not shown: the caller has said in one line what is
    happening, and npm's some forty ``http fetch`` lines only matter when it fails (the
    caller's error then carries their tail). Returns (exit code, output)."""
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", check=False)
    return done.returncode, done.stdout or ""


def _tail(output: str, lines: int = 20) -> str:
    return "\n".join(output.strip().splitlines()[-lines:])


# ------------------------------------------------------------------ working trees

SKIP_DIRS = {"node_modules", ".git"}
MAX_DEPTH = 4  # the monorepo keeps packages at packages/<area>/<name>/ and vendor/<name>/


def tree_packages(root: Path, names: set[str]) -> dict[str, Path]:
    """The directories of the packages named ``names`` in the tree at ``root``: each a
    directory with a package.json of that name, found within MAX_DEPTH levels (node_modules
    and hidden directories not searched), the shallowest first."""
    found: dict[str, tuple[int, Path]] = {}
    for here, dirs, files in os.walk(root):
        depth = len(Path(here).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")) if depth < MAX_DEPTH else []
        if "package.json" not in files:
            continue
        try:
            name = json.loads((Path(here) / "package.json").read_text(encoding="utf-8")).get("name")
        except (OSError, ValueError, AttributeError):
            continue
        if name in names and (name not in found or depth < found[name][0]):
            found[name] = (depth, Path(here))
    return {name: path for name, (_, path) in found.items()}


def _installed_beside(start: Path, name: str) -> Path | None:
    """``name`` as Node resolves it from ``start``: the first node_modules/<name> upward."""
    for d in (start, *start.parents):
        candidate = d / "node_modules" / name
        if (candidate / "package.json").is_file():
            return candidate
    return None


def _entry(package: Path) -> str | None:
    """The file the package's main entry point names, or None when its package.json names none."""
    doc = json.loads((package / "package.json").read_text(encoding="utf-8"))
    target = doc.get("exports")
    for key in (".", "default", "import"):
        if isinstance(target, dict) and key in target:
            target = target[key]
    if isinstance(target, dict):
        target = target.get("default") or target.get("import")
    if not isinstance(target, str):
        target = doc.get("main") or "index.js"
    return target


def tree_dir(path: str, source: Path = ADAPTER, log: object = sys.stderr) -> Path:
    """A directory holding the adapter with links to the packages of the DSH tree at
    ``path`` (a checkout after its install and build, or any directory of built packages).
    Raises AdapterSpecError when ``path`` holds no dsh-tools package, AdapterInstallError
    when a package of the tree is not built."""
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        raise AdapterSpecError(f"--impl dsh:{path}: no such directory")
    names = set(pinned_set(source))
    packages = tree_packages(root, names)
    if TOOLS not in packages:
        raise AdapterSpecError(f"--impl dsh:{path}: no {TOOLS} package under it (a package.json named so, within "
                               f"{MAX_DEPTH} levels; node_modules is not searched)")
    tools = packages[TOOLS]
    for name in sorted(names - set(packages)):  # the tree's installed dependencies (vendored or not)
        beside = _installed_beside(tools, name)
        if beside is not None:
            packages[name] = beside
    unbuilt = []
    for name, where in sorted(packages.items()):
        entry = _entry(where)
        if entry is not None and not (where / entry).is_file():
            unbuilt.append(f"{name} ({_shown(where, root)}) has no {entry.removeprefix('./')}")
    if unbuilt:
        raise AdapterInstallError(f"the tree {root} is not built: {'; '.join(unbuilt)}; build its lib/ output first")
    home = tree_home(root)
    with turn(home, log):
        _link_tree(root, packages, home, source)
    return home


def tree_home(root: Path) -> Path:
    """The cache directory of the tree at ``root`` (its links, its build state)."""
    return cache_root() / f"tree-{hashlib.sha256(str(root).encode()).hexdigest()[:16]}"


def linked_packages(home: Path) -> dict[str, Path]:
    """The packages a tree's cache directory links to: name -> where they lie in the tree."""
    links = home / "node_modules" / SCOPE
    return {f"{SCOPE}/{p.name}": p.resolve() for p in sorted(links.iterdir()) if p.is_symlink()} if links.is_dir() else {}


def _link_tree(root: Path, packages: dict[str, Path], home: Path, source: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    if not _same_sources(source, home, PROGRAM):
        _copy_sources(source, home, PROGRAM)
    manifest = json.loads((source / "package.json").read_text(encoding="utf-8"))
    manifest["description"] = f"IUT protocol v1 adapter driving the DSH tree {root} (generated)"
    manifest["dependencies"] = {name: f"file:{where}" for name, where in sorted(packages.items())}
    manifest["dshConformance"] = {"tree": str(root)}
    (home / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    links = home / "node_modules" / SCOPE
    wanted = {name.split("/", 1)[1]: where for name, where in packages.items()}
    if links.is_dir() and {p.name: p.readlink() if p.is_symlink() else None for p in links.iterdir()} == wanted:
        return  # the same links: a run already using them is left undisturbed
    if links.exists():
        shutil.rmtree(links)
    links.mkdir(parents=True)
    for name, where in wanted.items():
        (links / name).symlink_to(where, target_is_directory=True)


def _shown(where: Path, root: Path) -> str:
    try:
        return str(where.relative_to(root)) or "."
    except ValueError:
        return str(where)


def check(home: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The adapter's handshake for the set installed at ``home`` (``adapter.mjs --check``);
    raises AdapterInstallError with the adapter's one line when it cannot drive the set."""
    node = shutil.which("node")
    if node is None:
        raise AdapterInstallError("the DSH adapter needs Node 20 or newer; no node is on PATH")
    done = subprocess.run([node, str(home / "adapter.mjs"), "--check"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, check=False)
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        raise CannotDrive(lines[0] if done.returncode == 3 and lines else
                          f"node adapter.mjs --check exited {done.returncode}: {' '.join(lines[-3:])}")
    return dict(json.loads(done.stdout))


def _npm_ci(home: Path, log: object) -> None:
    npm = _npm()
    say(log, f"installing the DSH adapter's pinned npm packages into {home} (once; npm ci, which may take a minute)")
    code, output = _quiet([npm, "ci", "--no-audit", "--no-fund", "--loglevel=http", "--progress=false"], home)
    if code != 0 or not installed(home):
        raise AdapterInstallError(f"npm ci in {home} failed (exit {code}):\n{_tail(output)}")
    say(log, "the DSH adapter is installed")
