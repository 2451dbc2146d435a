"""What ``--impl`` (and the plugin's ``--dsh-impl``) means: how an implementation under
test is started, behind one protocol class (``IUT``) that the runner, the CLI and the
pytest plugin hold without asking which kind it is.

The kinds (``make_iut``): ``oracle`` (the default) and ``oracle-inprocess``, the embedded
oracle over the protocol or called directly; ``dsh``, ``dsh@VERSION``, ``dsh:PATH``, the
real package through the Node adapter (``adapter_install``, ``tree``); ``py:MODULE``, a
Python implementation in a worker process (``iut.PythonIUT``); anything else, a command
line (``iut.ProcessIUT``). A spec that names no implementation is a ``UsageError`` before
anything starts; one that names an implementation that cannot be driven is an
``IUTFailure`` of kind ``start`` (exit 3).
"""

from __future__ import annotations

import collections
import importlib.util
import json
import shlex
import sys
from pathlib import Path
from typing import Any, Protocol

from dsh_conformance.argtypes import UsageError
from dsh_conformance.defaults import DEFAULT_START_TIMEOUT
from dsh_conformance.dsh.adapter_install import (
    AdapterInstallError,
    AdapterSpecError,
    CannotDrive,
    adapter_dir,
    check,
    linked_packages,
    tree_dir,
    version_dir,
)
from dsh_conformance.dsh.tree import StaleBuild, build_tree, check_fresh, installed_packages, provenance
from dsh_conformance.iut.connection import IUTFailure
from dsh_conformance.iut.in_process import embedded_oracle
from dsh_conformance.iut.process import ProcessIUT, PythonIUT
from dsh_conformance.iut.protocol import Errored, Skipped, Started, Traced


class Pipeline(Protocol):
    """An IUT that takes the next run while the suite judges the one before: runs are sent
    (``submit``) and their answers read in order (``collect``). ``generation`` counts the
    processes started, so that a run sent to one that has been replaced since is asked
    again; ``pending`` holds the runs sent and not answered yet."""

    generation: int
    pending: collections.deque[tuple[int, float]]

    def submit(self, seq: int, scenario: dict[str, Any], text: str | None = None) -> None: ...

    def collect(self, seq: int) -> Traced | Skipped | Errored: ...


class IUT(Protocol):
    """What the suite needs of an implementation under test, whatever starts it: the
    handshake (``start``, then ``started``), one run at a time (``run``), a fresh start
    after a crash or hang (``restart``), and an end (``close``). ``pipeline`` is the IUT
    itself when it can take runs ahead (a process reads its input while the suite judges),
    else None; ``pid`` its own process, None when it runs inside the suite's."""

    started: Started | None
    restarts: int
    timeout: float
    pid: int | None

    @property
    def pipeline(self) -> Pipeline | None: ...

    def start(self) -> Started: ...

    def run(self, seq: int, scenario: dict[str, Any]) -> Traced | Skipped | Errored: ...

    def restart(self) -> Started: ...

    def close(self, graceful: bool = True) -> None: ...


def make_iut(spec: str | None, timeout: float, validate: bool,
             start_timeout: float = DEFAULT_START_TIMEOUT, build: bool = False, ignore_scripts: bool = False) -> IUT:
    """``None``/``oracle``: the embedded oracle over the protocol; ``dsh``: the real DSH
    package through the Node adapter; ``py:MODULE``: a Python IUT in a worker process (the module
    has ``started()`` and ``answer(seq, scenario)``); anything else: a command line. A spec
    that names no implementation is a UsageError, before anything is started."""
    if spec in (None, "oracle"):
        return ProcessIUT([sys.executable, "-m", "dsh_conformance.oracle", "serve"], timeout, validate, start_timeout=start_timeout)
    if spec == "oracle-inprocess":
        return embedded_oracle(validate, timeout)
    if spec == "dsh" or spec.startswith(("dsh@", "dsh:")):
        return dsh_iut(spec, timeout, validate, start_timeout, build, ignore_scripts)
    if spec.startswith("py:"):
        return python_iut(spec, timeout, validate, start_timeout)
    if not spec.strip():
        raise UsageError("--impl '': an empty command line")
    try:
        argv = shlex.split(spec)
    except ValueError as e:
        raise UsageError(f"--impl {spec}: not a command line: {e}") from None
    return ProcessIUT(argv, timeout, validate, start_timeout=start_timeout)


def dsh_iut(spec: str, timeout: float, validate: bool, start_timeout: float, build: bool = False,
            ignore_scripts: bool = False) -> ProcessIUT:
    """The real package through the Node adapter: ``dsh`` the pinned release, ``dsh@VERSION``
    a published version (its package set installed once per version), ``dsh:PATH`` a DSH
    working tree's built packages (``conformance.adapter_install``)."""
    env: dict[str, str] = {}
    try:
        if build and not spec.startswith("dsh:"):
            raise UsageError(f"--build builds a DSH working tree: it goes with --impl dsh:PATH, not --impl {spec}")
        if ignore_scripts and not build:
            raise UsageError("--ignore-scripts is for the install of --build (with --impl dsh:PATH)")
        if spec == "dsh":
            home = adapter_dir()
        elif spec.startswith("dsh@"):
            if not spec[4:]:
                raise UsageError("--impl dsh@: name a version, as in dsh@0.1.0-rc.7")
            home = version_dir(spec[4:])
        else:
            if not spec[4:]:
                raise UsageError("--impl dsh:: name a directory, as in dsh:../deepseek-harness")
            root = Path(spec[4:]).expanduser().resolve()
            if build:
                build_tree(str(root), ignore_scripts=ignore_scripts)
            home = tree_dir(spec[4:])
            check_fresh(root)  # P1..P128 judged on old code is no verdict on the tree: refused, exit 3
            env["DSH_ADAPTER_SOURCE"] = f"tree {root.name}"
            env["DSH_ADAPTER_TREE"] = json.dumps(provenance(root, linked_packages(home)))
        if spec != "dsh":  # the pinned set is known to be drivable
            check(home, env)  # one the adapter cannot drive: its one line, exit 3
        if not spec.startswith("dsh:"):
            env["DSH_ADAPTER_TREE"] = json.dumps({"packages": installed_packages(home)})
    except AdapterSpecError as e:
        raise UsageError(str(e)) from None
    except (CannotDrive, StaleBuild) as e:
        raise IUTFailure("start", str(e)) from None
    except AdapterInstallError as e:
        raise IUTFailure("start", f"the DSH adapter cannot be installed: {e}") from None
    return ProcessIUT(["node", str(home / "adapter.mjs")], timeout, validate, env=env, start_timeout=start_timeout)


def python_iut(spec: str, timeout: float, validate: bool, start_timeout: float) -> PythonIUT:
    """A Python implementation module, run in a worker process (``iut.PythonIUT``): the
    suite's process never imports it. A top-level package that does not exist is refused
    here; the worker process finds every other reason a module is not an implementation."""
    name = spec[3:]
    if not name:
        raise UsageError(f"--impl {spec}: name a module, as in py:mypackage.iut")
    top = name.partition(".")[0]
    try:
        found = importlib.util.find_spec(top)  # a top-level name: found, not run
    except (ImportError, ValueError) as e:
        raise UsageError(f"--impl {spec}: cannot import {name}: {e}") from None
    if found is None:
        raise UsageError(f"--impl {spec}: cannot import {name}: no module named {top!r}")
    return PythonIUT(name, timeout, validate, start_timeout)

