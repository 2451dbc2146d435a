"""``dsh-conformance tree PATH``: the maintainer's loop in one command.

Builds what the adapter needs of the DSH checkout at PATH (``conformance.tree``: the tree's
Node and package manager, only the adapter's packages, only what changed), runs the suite on
it, and prints the diff against a baseline: by default the pinned release (rc.8), whose run
is kept in the per-user cache (``baselines/``) and reused while the suite, its adapter, the
expectations and the run's options are the same. The tree's report is kept beside its build
state (``tree-<digest>/tree.jsonl``, the previous one as ``tree.previous.jsonl``), each run's
counterexamples in a directory of its own. Exit: the diff's (1 when anything regressed), 2
for bad input, 3 when the tree cannot be built or run.
"""

from __future__ import annotations

import argparse
import hashlib
import shlex
import subprocess
import sys
import time
from pathlib import Path

from dsh_conformance import __version__
from dsh_conformance.dsh.adapter_install import (
    AdapterInstallError,
    AdapterSpecError,
    cache_root,
    lock_digest,
    tree_home,
)
from dsh_conformance.reporting.report import read_report
from dsh_conformance.resources import ADAPTER, CASES, ORACLE
from dsh_conformance.reporting.run_diff import diff_reports, render_json, render_markdown, render_text
from dsh_conformance.dsh.tree import build_tree

EXIT_BROKEN = 3


class _Stop(Exception):
    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.code = code


def _run(impl: str, report: Path, failures: Path, args: argparse.Namespace) -> None:
    """One suite run through the CLI (its table is not printed: the diff says what matters)."""
    cmd = [sys.executable, "-m", "dsh_conformance.cli", "run", "--impl", impl, "--report", str(report),
           "--failures", str(failures), "--examples", str(args.examples), "--seed", str(args.seed), "--quiet"]
    if args.expectations:
        cmd += ["--expectations", args.expectations]
    if args.cases:
        cmd += ["--cases", args.cases]
    print(f"dsh-conformance: {shlex.join(['dsh-conformance', *cmd[3:]])}", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
    if done.returncode not in (0, 1) or not report.is_file():
        raise _Stop(done.returncode if done.returncode in (2, 3) else EXIT_BROKEN,
                    f"the run on {impl} did not finish (exit {done.returncode}); see its message above")


def _files_digest(root: Path, pattern: str) -> bytes:
    """What a baseline run depends on in a directory (the adapter, the corpus, the oracle)."""
    h = hashlib.sha256()
    for p in sorted(root.glob(pattern)):
        if p.is_file() and "node_modules" not in p.parts and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.digest()


def _baseline(args: argparse.Namespace) -> Path:
    """The report to compare against: a file given, or the baseline run, made once per key."""
    if args.against.endswith(".jsonl"):
        path = Path(args.against)
        if not path.is_file():
            raise _Stop(2, f"--against {args.against}: no such report")
        return path
    if not args.against.startswith("dsh") or args.against.startswith("dsh:"):
        raise _Stop(2, f"--against {args.against}: a report (.jsonl), dsh or dsh@VERSION")
    expectations = Path(args.expectations).read_bytes() if args.expectations and Path(args.expectations).is_file() \
        else (args.expectations or "").encode()
    key = hashlib.sha256("\0".join([__version__, lock_digest(ADAPTER), args.against, str(args.examples),
                                    str(args.seed)]).encode() + expectations
                         + _files_digest(ADAPTER, "**/*.mjs") + _files_digest(Path(args.cases or CASES), "**/*")
                         + _files_digest(ORACLE, "**/*.py")).hexdigest()[:16]
    home = cache_root() / "baselines"
    path = home / f"{args.against}-{key}.jsonl"
    if path.is_file():
        print(f"dsh-conformance: the baseline {args.against} was run before with these options: {path}",
              file=sys.stderr)
        return path
    home.mkdir(parents=True, exist_ok=True)
    _run(args.against, path.with_suffix(".partial"), home / f"failures-{key}", args)
    path.with_suffix(".partial").rename(path)
    return path


def cmd_tree(args: argparse.Namespace) -> int:
    root = Path(args.path).expanduser().resolve()
    try:
        if not args.no_build:
            build_tree(str(root), ignore_scripts=args.ignore_scripts)
        baseline = _baseline(args)
        home = tree_home(root)
        home.mkdir(parents=True, exist_ok=True)
        report = Path(args.report) if args.report else home / "tree.jsonl"
        if report.is_file() and not args.report:
            report.replace(home / "tree.previous.jsonl")
        _run(f"dsh:{root}", report, home / "failures" / time.strftime("%Y%m%dT%H%M%S"), args)
    except _Stop as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code
    except AdapterSpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except AdapterInstallError as e:
        print(f"error: the tree cannot be built: {e}", file=sys.stderr)
        return EXIT_BROKEN
    d = diff_reports(read_report(str(baseline)), read_report(str(report)))
    text = render_text(d, args.full) if args.format == "text" else \
        {"md": render_markdown, "json": render_json}[args.format](d)
    sys.stdout.write(text)
    print(f"dsh-conformance: the tree's report: {report}; the baseline's: {baseline}", file=sys.stderr)
    return 1 if d.regressions else 0


__all__ = ["cmd_tree"]
