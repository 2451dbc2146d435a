"""Portable references: how reports name files and commands without the machine's paths.

A report is read on other machines (copied, published by CI, compared with another
run), so it never holds an absolute path of the machine that produced it. A file is
named relative to a base it belongs to (a corpus case relative to its corpus), else
relative to the working directory of the run, else relative to the suite's own tree
(a path every clone has), else by its file name alone.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from dsh_conformance.resources import CLONE, SUITE

SUITE_ROOT = CLONE if CLONE is not None else SUITE  # the suite's own tree
BUILTIN_CORPUS = "built-in"  # a header's ``corpus`` when the run used the suite's own cases


def _under(path: Path, base: Path) -> str | None:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return None


def portable_path(path: str | Path, *bases: Path) -> str:
    """``path`` relative to the first of ``bases``, the working directory or the suite's
    tree that holds it; else its file name."""
    p = Path(path)
    if not p.is_absolute():
        return p.as_posix()
    p = Path(os.path.normpath(p))
    for base in (*bases, Path.cwd(), SUITE_ROOT):
        rel = _under(p, Path(os.path.normpath(base.resolve())))
        if rel is not None:
            return rel
    return p.name


def portable_command(command: str) -> str:
    """A command line with each absolute path in it made portable (an interpreter outside
    the working directory keeps its name: ``/usr/bin/python3`` becomes ``python3``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    return shlex.join(portable_path(w) if os.path.isabs(w) else w for w in words)


def scrub(text: str) -> str:
    """Free text (an IUT's stderr, a traceback) with the run's working directory and the
    suite's tree taken out of the paths it holds."""
    for base in sorted({str(Path.cwd()), str(SUITE_ROOT)}, key=len, reverse=True):
        text = text.replace(base + os.sep, "")
    return text
