"""``dsh-conformance kit py DIR``: write a Python starter port into DIR.

The starter is the kit's example, ``examples/core_pipeline.py`` (in the wheel as the package
data of ``dsh_conformance.examples``), copied byte for byte as ``DIR/core_pipeline.py``: a
whole ``core`` implementation on the Python kit that passes ``--profiles core``, whose
pipeline lies between two ``pipeline logic`` markers for the port to replace with its own.
As ``kit js`` does, it never overwrites: a file (or a link) already at that path is named
and nothing is written (exit 2); the file is created exclusively (``O_EXCL``, never through
a link); a write that fails once begun is exit 4.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from dsh_conformance.textio.outputs import OutputError, OutputLock, check_directory, create_new
from dsh_conformance.resources import EXAMPLES

STARTER = EXAMPLES / "core_pipeline.py"
NAME = STARTER.name
EXIT_OK = 0


def write_starter(directory: str | Path) -> Path:
    """Write the starter port into ``directory`` (created when missing); its path."""
    target = check_directory(directory, "kit py")
    path = target / NAME
    if os.path.lexists(path):
        raise OutputError(f"kit py {target}: {NAME} already there; the kit never overwrites a file "
                          "(choose a new directory, or move it away)")
    with OutputLock(path, "kit py"):
        create_new(path, STARTER.read_bytes())
    return path


def cmd_kit(args: argparse.Namespace) -> int:
    path = write_starter(args.directory)
    print(f"wrote {path}: a core pipeline on the Python kit (dsh_conformance.kit) that passes --profiles core")
    print(f"next: replace its pipeline logic (between the two markers) with yours, then "
          f"dsh-conformance run --impl \"python {path}\" --profiles core")
    return EXIT_OK


__all__ = ["write_starter", "cmd_kit", "STARTER"]
