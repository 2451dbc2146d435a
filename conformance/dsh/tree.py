"""Building a DSH checkout's packages for the adapter: ``dsh-conformance tree PATH``.

A maintainer changes the monorepo and wants a verdict. What this module does for that:

- **the toolchain the tree asks for.** The root ``package.json`` names a Node range
  (``engines.node``, ``^22.19.0 || >=24.0.0`` at b150a551b8) and a package manager
  (``packageManager``, ``pnpm@11.7.0``). When the machine's ``node`` is outside the range,
  a Node from the registry package ``node-linux-<arch>`` (the lowest major the range allows)
  is installed, once, into the per-user cache (``node-<arch>-<major>/``) and put first on
  the ``PATH`` of the tree's install and build commands only (said on stderr): nothing else
  of the machine, and no run of the adapter, uses it. The package manager is installed at
  the tree's own version from the registry (``pnpm-<version>/``) and run with that Node.
- **installing only what the set needs.** ``pnpm install --frozen-lockfile`` filtered to
  the packages of the adapter's set (with their dependencies) and the workspace root (for
  ``tsc`` and ``tsdown``); run when the tree has no install yet or its lock changed since
  the last build from here. A tree already installed by its maintainer is left as it is.
- **building only the set, and only what changed.** ``tsc -b`` of the set's packages (tsc
  follows their project references; at b150a551b8 these are the same 20 packages), then
  ``tsdown`` of those packages with the root config's options (a package's own
  ``tsdown.config.ts``, as schemastery's, wins). The root config also runs the Typert
  plugin over the whole workspace: it only lowers decorators in ``.ts`` inputs (the inputs
  here are tsc's ``.js``) and emits artifacts for packages with a Typert export (none of
  the set has one), so it is left out. A digest of each package's sources (``src/``,
  ``package.json``, ``tsconfig.json``, its tsdown config) is kept in the tree's cache
  directory (``build-state.json``); a package is rebuilt when its digest moved, its built
  output is missing, or its output is not what the last build wrote.
- **stale builds refused.** ``run --impl dsh:PATH`` (without ``--build``) refuses a tree
  where a package's sources are newer than its built entry point, or differ from what its
  output was last built from here: one line naming the packages, exit 3. The check looks at
  packages with ``src/`` only (a directory of built packages has nothing to compare).
- **what was run.** ``provenance()`` is what the report header records under
  ``implementation.tree``: the tree's commit, whether it is dirty, and per package its path
  and the digest of its built code (``runtime_digest``), so ``diff`` can say which packages
  differ between two runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from dsh_conformance.dsh.adapter_install import (
    AdapterInstallError,
    AdapterSpecError,
    say,
    turn,
    cache_root,
    pinned_set,
    tree_home,
    tree_packages,
)
from dsh_conformance.dsh.package_sets import satisfies, semver_key
from dsh_conformance.resources import ADAPTER

STATE = "build-state.json"
ENTRIES = ("index", "invariant", "startup")  # what the root tsdown config bundles from lib/types/
ROOT_TSDOWN = {"outDir": "lib", "format": ["esm"], "platform": "node", "target": "es2024", "fixedExtension": False,
               "dts": False, "clean": False}
BUILD_TIMEOUT = 1800  # seconds for one tool of the build (tsc of the set takes some 10 s on 2 cores)


class StaleBuild(AdapterInstallError):
    """A package's sources are newer than its built output: running it would test old code."""


# ------------------------------------------------------------------ digests

def _digest(files: list[Path], base: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(str(f.relative_to(base)).encode() + b"\0" + f.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()[:16]


def source_files(package: Path) -> list[Path]:
    """What a package's build is made from: ``src/`` and its package and build configs."""
    files = [p for p in (package / "src").rglob("*") if p.is_file()] if (package / "src").is_dir() else []
    return files + [package / n for n in ("package.json", "tsconfig.json", "tsdown.config.ts") if (package / n).is_file()]


def source_digest(package: Path) -> str:
    return _digest(source_files(package), package)


def runtime_files(package: Path) -> list[Path]:
    """The built code the adapter loads: the JavaScript files directly under ``lib/`` (the
    bundles), the same files a published tarball has there; declarations and tsc's
    intermediate ``lib/types/`` are not run."""
    lib = package / "lib"
    return [p for p in lib.iterdir() if p.is_file() and p.suffix in (".js", ".mjs", ".cjs")] if lib.is_dir() else []


def runtime_digest(package: Path) -> str | None:
    files = runtime_files(package)
    return _digest(files, package) if files else None


def stale_reason(package: Path, recorded: str | None = None) -> str | None:
    """Why the built output of ``package`` is not its sources' (None: it is, or there is
    nothing to compare). ``recorded`` is the source digest the output was last built from."""
    if not buildable(package):
        return None
    sources = source_files(package)
    built = runtime_files(package)
    if not built:
        return "not built (no lib/*.js)"
    if recorded is not None and recorded != source_digest(package):
        return "its sources changed since it was last built"
    newest = max(sources, key=lambda p: p.stat().st_mtime)
    oldest = min(p.stat().st_mtime for p in built)
    if newest.stat().st_mtime > oldest:
        return f"{newest.relative_to(package)} is newer than its built lib/"
    return None


# ------------------------------------------------------------------ state

def _state(home: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((home / STATE).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}


def _save_state(home: Path, state: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / STATE).write_text(json.dumps(state, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def buildable(package: Path) -> bool:
    """A package the tree builds: sources and a TypeScript project (a published package may
    ship its ``src/`` but never its tsconfig)."""
    return (package / "src").is_dir() and (package / "tsconfig.json").is_file()


def set_packages(root: Path, source: Path = ADAPTER) -> dict[str, Path]:
    """The packages of the adapter's set that the tree builds from sources of its own."""
    return {n: p for n, p in tree_packages(root, set(pinned_set(source))).items() if buildable(p)}


def check_fresh(root: Path, source: Path = ADAPTER) -> None:
    """Raise StaleBuild when a package of the set is built from other sources than it has."""
    recorded = _state(tree_home(root)).get("packages", {})
    stale = []
    for name, where in sorted(set_packages(root, source).items()):
        was = recorded.get(name) or {}
        # The recorded sources say what the output was built from while the output is still
        # the one built here; after a build of the maintainer's own, only the times can tell.
        why = stale_reason(where, was.get("source") if was.get("built") == runtime_digest(where) else None)
        if why:
            stale.append(f"{name} ({where.relative_to(root)}): {why}")
    if stale:
        raise StaleBuild(f"the tree's build is stale, so the run would test other code than its sources: "
                         f"{'; '.join(stale)}; rebuild it with `dsh-conformance tree {root}` "
                         f"(or `run --impl dsh:{root} --build`)")


def plan(root: Path, packages: dict[str, Path], state: dict[str, Any]) -> dict[str, str]:
    """The packages to rebuild, each with why: sources that moved since the last build,
    output missing, or output that is not what that build wrote."""
    recorded = state.get("packages", {})
    out = {}
    for name, where in sorted(packages.items()):
        was = recorded.get(name) or {}
        if not runtime_files(where):
            out[name] = "not built"
        elif was.get("source") != source_digest(where):
            out[name] = "sources changed" if was else "never built from here"
        elif was.get("built") != runtime_digest(where):
            out[name] = "its built output changed since"
    return out


# ------------------------------------------------------------------ provenance

def _git(root: Path, *args: str) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    done = subprocess.run([git, "-C", str(root), *args], capture_output=True, text=True, timeout=60, check=False)
    return done.stdout if done.returncode == 0 else None


def provenance(root: Path, linked: dict[str, Path]) -> dict[str, Any]:
    """What a report header records of a tree run: path, commit, dirty, and per package of
    the set its path in the tree, version and built-code digest."""
    head = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=normal") if head else None
    packages = {}
    for name, where in sorted(linked.items()):
        try:
            version = json.loads((where / "package.json").read_text(encoding="utf-8")).get("version")
        except (OSError, ValueError):
            version = None
        try:
            path = str(where.resolve().relative_to(root))
        except ValueError:
            path = str(where)
        packages[name] = {"version": version, "path": path, "digest": runtime_digest(where)}
    changed = [ln[3:] for ln in (status or "").splitlines() if ln.strip()]
    return {"path": str(root), "commit": head.strip() if head else None,
            "dirty": bool(changed) if head else None, "changed": changed[:20], "packages": packages}


def installed_packages(home: Path) -> dict[str, dict[str, Any]]:
    """The ``@deepseek-ai`` packages an adapter directory runs: version and built-code digest."""
    out = {}
    scope = home / "node_modules" / "@deepseek-ai"
    for p in sorted(scope.iterdir()) if scope.is_dir() else []:
        try:
            version = json.loads((p / "package.json").read_text(encoding="utf-8")).get("version")
        except (OSError, ValueError):
            continue
        out[f"@deepseek-ai/{p.name}"] = {"version": version, "digest": runtime_digest(p)}
    return out


# ------------------------------------------------------------------ toolchain

def _node_version(node: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60, check=False, env=env)
    return done.stdout.strip().lstrip("v")


def _registry_install(spec: str, home: Path, log: object) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise AdapterInstallError(f"installing {spec} needs npm; none is on PATH")
    home.mkdir(parents=True, exist_ok=True)
    (home / "package.json").write_text('{"private": true}\n', encoding="utf-8")
    done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error", spec], cwd=home,
                          capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-3:])
        raise AdapterInstallError(f"npm install {spec} into {home} failed (exit {done.returncode}): {tail}")


def wanted_major(spec: str, machine: str) -> int | None:
    """The lowest Node major above the machine's that ``spec`` allows (tried as X.9999.0)."""
    majors = sorted({int(m) for m in re.findall(r"(\d+)(?:\.\d+){0,2}", spec)})
    have = int(machine.split(".")[0]) if machine else 0
    for major in majors:
        if major > have and any(satisfies(f"{major}.{minor}.0", spec) for minor in (9999, 99, 0)):
            return major
    return None


def node_for(root: Path, log: object) -> tuple[str, dict[str, str]]:
    """The node binary the tree's commands need and their environment (PATH with it first)."""
    spec = _manifest(root).get("engines", {}).get("node")
    node = shutil.which("node")
    if node is None:
        raise AdapterInstallError("building a DSH tree needs Node and npm; no node is on PATH")
    machine = _node_version(node)
    env = {**os.environ, "npm_config_update_notifier": "false"}
    if not spec or satisfies(machine, spec):
        return node, env
    major = wanted_major(spec, machine)
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    if major is None or arch is None or sys.platform != "linux":
        raise AdapterInstallError(f"the tree needs Node {spec} (its package.json engines) and this machine has "
                                  f"{machine}; install such a Node first")
    package = f"node-linux-{arch}"
    home = cache_root() / f"node-{arch}-{major}"
    binary = home / "node_modules" / package / "bin" / "node"
    with turn(home, log):
        if not binary.is_file() or not satisfies(_node_version(str(binary)), spec):
            say(log, f"the tree needs Node {spec} and this machine has {machine}: installing the registry "
                      f"package {package}@{major} into {home} (once; used for this tree's install and build only)")
            _registry_install(f"{package}@{major}", home, log)
    found = _node_version(str(binary))
    if not satisfies(found, spec):
        raise AdapterInstallError(f"{package}@{major} gave Node {found}, outside the tree's range {spec}")
    say(log, f"using Node {found} from {binary.parent} for the tree's install and build "
              f"(the machine's Node {machine} is outside its engines range {spec})")
    env["PATH"] = f"{binary.parent}{os.pathsep}{env.get('PATH', '')}"
    return str(binary), env


def manager_for(root: Path, node: str, env: dict[str, str], log: object) -> list[str]:
    """The tree's own package manager (``packageManager``): pnpm at its version from the
    registry, in the cache; npm (the machine's) when it names npm or nothing."""
    declared = _manifest(root).get("packageManager") or ""
    name, _, version = declared.partition("@")
    version = version.split("+", 1)[0]
    if not declared or name == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise AdapterInstallError("the tree is installed with npm and none is on PATH")
        return [npm]
    if name != "pnpm" or not version:
        raise AdapterSpecError(f"the tree's packageManager is {declared!r}: only pnpm@VERSION and npm are supported")
    semver_key(version)  # a version, not a range
    home = cache_root() / f"pnpm-{version}"
    entry = home / "node_modules" / "pnpm" / "bin" / "pnpm.mjs"
    with turn(home, log):
        if not entry.is_file():
            say(log, f"installing pnpm {version} (the tree's packageManager) into {home} (once)")
            _registry_install(f"pnpm@{version}", home, log)
    return [node, str(entry)]


def _manifest(root: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((root / "package.json").read_text(encoding="utf-8")))
    except (OSError, ValueError) as e:
        raise AdapterSpecError(f"{root}: no readable package.json at its root ({e})") from None


# ------------------------------------------------------------------ building

def _run(cmd: list[str], cwd: Path, env: dict[str, str], log: object, what: str) -> None:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)
    if done.returncode != 0:
        lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip() and not ln.startswith("    at ")]
        tail = "\n".join(lines[-12:])
        raise AdapterInstallError(f"{what} failed (exit {done.returncode}):\n{tail}")


def _lock_digest(root: Path) -> str | None:
    for name in ("pnpm-lock.yaml", "package-lock.json"):
        if (root / name).is_file():
            return "sha256:" + hashlib.sha256((root / name).read_bytes()).hexdigest()[:16]
    return None


def _install(root: Path, packages: dict[str, Path], manager: list[str], env: dict[str, str], state: dict[str, Any],
             log: object, ignore_scripts: bool = False) -> None:
    lock = _lock_digest(root)
    if (root / "node_modules").is_dir() and state.get("lock") in (None, lock):
        state["lock"] = lock
        return  # the maintainer's own install, or ours of this lock
    if "pnpm.mjs" in manager[-1]:
        filters = [a for where in sorted(packages.values()) for a in ("--filter", f"./{where.relative_to(root)}...")]
        cmd = [*manager, "install", "--frozen-lockfile", "--reporter=append-only", *filters, "--filter", "{.}"]
    else:
        cmd = [*manager, "ci", "--no-audit", "--no-fund"]
    if ignore_scripts:  # the tree's and its dependencies' lifecycle scripts (postinstall...) not run
        cmd.append("--ignore-scripts")
    shown = "pnpm install --frozen-lockfile, filtered to them and the workspace root" if "pnpm.mjs" in manager[-1] \
        else "npm ci"
    say(log, f"installing the tree's dependencies for the {len(packages)} packages of the set ({shown}; "
              "a minute or two the first time)")
    _run(cmd, root, env, log, f"{Path(cmd[0]).name} install in {root}")
    state["lock"] = lock


def _tsdown_config(home: Path, root: Path, todo: dict[str, Path]) -> Path:
    """A tsdown config building ``todo`` with the root config's options (see the module doc)."""
    configs = []
    for where in todo.values():
        entry = [f"lib/types/{e}.js" for e in ENTRIES if (where / "lib" / "types" / f"{e}.js").is_file()]
        configs.append({**ROOT_TSDOWN, "cwd": str(where), "entry": entry, "logLevel": "warn"})
    path = home / "tsdown.config.mjs"
    path.write_text("// generated by dsh-conformance tree: the set's packages with the root config's options\n"
                    f"export default {json.dumps(configs, indent=1)}\n", encoding="utf-8")
    return path


def _build(root: Path, home: Path, todo: dict[str, Path], env: dict[str, str], log: object) -> None:
    bin_dir = root / "node_modules" / ".bin"
    tsc, tsdown = bin_dir / "tsc", bin_dir / "tsdown"
    for tool in (tsc, tsdown):
        if not tool.exists():
            raise AdapterInstallError(f"the tree has no {tool.relative_to(root)} after its install: cannot build it")
    dirs = [str(where.relative_to(root)) for where in todo.values()]
    _run([str(tsc), "-b", *dirs], root, env, log, f"tsc -b {' '.join(dirs)}")
    own = {n: w for n, w in todo.items() if (w / "tsdown.config.ts").is_file()}
    for name, where in own.items():
        _run([str(tsdown), "--log-level", "warn"], where, env, log, f"tsdown in {where.relative_to(root)}")
    rest = {n: w for n, w in todo.items() if n not in own}
    if rest:
        _run([str(tsdown), "-c", str(_tsdown_config(home, root, rest))], home, env, log,
             f"tsdown of {', '.join(sorted(rest))}")


def build_tree(path: str, log: object = sys.stderr, source: Path = ADAPTER, ignore_scripts: bool = False) -> dict[str, str]:
    """Install and build what the adapter needs of the tree at ``path``, rebuilding only the
    packages whose sources changed since the last build. Returns the packages built, each
    with why (empty: everything was up to date). This runs the tree's code with the user's
    rights: its install's lifecycle scripts (unless ``ignore_scripts``), its build tools and
    configs, and then its packages as the implementation (see the README's trust model)."""
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        raise AdapterSpecError(f"{path}: no such directory")
    packages = set_packages(root, source)
    if not packages:  # a directory of built packages: run as it is
        say(log, f"no package of the adapter's set has sources under {root} (a package.json of that name with "
                  "src/ and tsconfig.json beside it): nothing to build, its built packages run as they are")
        return {}
    home = tree_home(root)
    home.mkdir(parents=True, exist_ok=True)
    with turn(home, log):
        state = _state(home)
        todo = plan(root, packages, state)
        node, env = node_for(root, log) if todo or not (root / "node_modules").is_dir() else ("node", dict(os.environ))
        if todo or not (root / "node_modules").is_dir():
            _install(root, packages, manager_for(root, node, env, log), env, state, log, ignore_scripts)
        if todo:
            say(log, f"building {len(todo)} of the set's {len(packages)} packages: "
                      + ", ".join(f"{n.removeprefix('@deepseek-ai/')} ({why})" for n, why in todo.items()))
            _build(root, home, {n: packages[n] for n in todo}, env, log)
        else:
            say(log, f"the tree's {len(packages)} packages of the set are built from their current sources")
        recorded = state.setdefault("packages", {})
        for name, where in packages.items():
            if name in todo or name not in recorded:
                recorded[name] = {"source": source_digest(where), "built": runtime_digest(where)}
        _save_state(home, state)
    return todo


__all__ = ["StaleBuild", "build_tree", "check_fresh", "installed_packages", "plan", "provenance", "runtime_digest",
           "source_digest", "stale_reason"]
