"""``dsh-conformance kit js DIR``: write the JS kit and a binding skeleton into DIR.

The JS kit is the generic half of the Node adapter (``tools/dsh-adapter/kit/``: the protocol
loop, the scenario interpreter, the scripted participants, the Code Mode program
interpreter, the value codec, virtual time) with its entry ``adapter.mjs``; the skeleton
(``kit/skeleton/binding.mjs``) has one commented function per seam, each throwing
NotImplemented. The real package's adapter is the same files with its ``binding.mjs`` filled
in, so what this writes is byte for byte what ``--impl dsh`` runs, less the binding.

Nothing is ever overwritten: when any file the kit would write is already there (a file, a
directory or a link), the command names them and writes nothing (exit 2). Each file is
created exclusively (``O_EXCL``, never through a link planted meanwhile); a write that fails
once begun (a full disk) is exit 4, naming the file.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from dsh_conformance.textio.outputs import OutputError, OutputLock, check_directory, create_new
from dsh_conformance.resources import ADAPTER

KIT = ADAPTER / "kit"
SKELETON = KIT / "skeleton" / "binding.mjs"
EXIT_OK = 0


def kit_files() -> dict[str, Path]:
    """What the kit writes: path inside DIR -> the source file it copies."""
    files = {"adapter.mjs": ADAPTER / "adapter.mjs", "binding.mjs": SKELETON}
    for p in sorted(KIT.glob("*.mjs")):
        files[f"kit/{p.name}"] = p
    files["kit/README.md"] = KIT / "README.md"
    return files


def _occupied(directory: Path, names: list[str]) -> list[str]:
    """The names of ``names`` something already has in ``directory`` (a dangling link counts)."""
    return [n for n in names if os.path.lexists(directory / n)]


def write_kit(directory: str | Path) -> list[str]:
    """Write the JS kit and the binding skeleton into ``directory`` (created when missing).
    Returns the paths written, relative to it. Raises OutputError (nothing written) when a
    file of the kit is already there or the directory cannot be written."""
    target = check_directory(directory, "kit js")
    files = kit_files()
    kit_dir = target / "kit"
    if kit_dir.is_symlink() or (kit_dir.exists() and not kit_dir.is_dir()):
        raise OutputError(f"kit js {target}: {kit_dir} is not a directory (the kit is never written through a link)")
    taken = _occupied(target, list(files))
    if taken:
        shown = ", ".join(taken[:5]) + (f" and {len(taken) - 5} more" if len(taken) > 5 else "")
        raise OutputError(f"kit js {target}: {shown} already there; the kit never overwrites a file "
                          "(choose a new directory, or move them away)")
    with OutputLock(target / "binding.mjs", "kit js"):
        try:
            kit_dir.mkdir(exist_ok=True)
        except OSError as e:
            raise OutputError(f"kit js {target}: cannot create {kit_dir} ({e.strerror or e})") from None
        for name, source in files.items():
            create_new(target / name, source.read_bytes())
    return list(files)


def cmd_kit(args: argparse.Namespace) -> int:
    written = write_kit(args.directory)
    modules = sum(1 for n in written if n.startswith("kit/") and n.endswith(".mjs"))
    print(f"wrote {args.directory}: adapter.mjs, binding.mjs (the skeleton: one function per seam) and kit/ "
          f"({modules} modules and README.md)")
    print(f"next: fill in {Path(args.directory) / 'binding.mjs'}, then "
          f"dsh-conformance run --impl \"node {Path(args.directory) / 'adapter.mjs'}\"")
    return EXIT_OK


__all__ = ["kit_files", "write_kit", "cmd_kit"]
