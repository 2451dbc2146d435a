"""The oracle's reference traces kept on disk between runs (issue 25).

A corpus case's reference (its parsed scenario and the oracle's trace of it) is a
deterministic function of the oracle's code and the case's document, so it is computed
once per suite build and kept in the per-user cache directory
(``conformance.adapter_install.cache_root()``, under ``references/``), keyed by

- the **source digest**: the bytes of every Python file of the oracle and the kit (the
  packages ``dsh_conformance.oracle`` and ``dsh_conformance.kit``, whose code computes the
  reference), the Python version and pydantic's (the pickle's format); a changed line of
  either package is a new digest, a new directory, and every reference is computed anew;
- the **document key**: the digest of the case's JSON text, key order included (the
  runner's in-memory key).

So a run never reads a reference computed by other code: a mutant is a copy under another
package name (its own code is the implementation under test, never the reference), and an
edited oracle has a digest of its own. ``DSH_CONFORMANCE_REFERENCE_CACHE=off`` turns the
cache off. The files are pickles, read only from a directory of the current user that no
one else can write (anything else is ignored and the reference computed), each naming the
key it holds; a file that cannot be read, or holds another key, is computed anew. Writing
is best-effort: a read-only or full disk costs the speed, never the run.

Reading a reference back costs about half of computing it (issue 25: some 0.3 against 0.6 ms
a corpus case), most of it making the pydantic models again. Pickle's own way with a
model builds a state dictionary for each and calls pydantic's ``__setstate__`` on it; the
files hold each model as ``kit.trace.unvalidated(class, fields, fields given)`` instead
(``_Pickler``), which restores the same object (its ``__dict__`` and its set of fields
given; a reference's models hold no extra and no private values), for some 30% less.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import io
import os
import pickle
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic
from pydantic import BaseModel

import dsh_conformance.kit
import dsh_conformance.oracle
from dsh_conformance.dsh.adapter_install import cache_root
from dsh_conformance.kit.trace import unvalidated

if TYPE_CHECKING:
    from dsh_conformance.kit.trace import Trace
    from dsh_conformance.oracle import Scenario

SWITCH = "DSH_CONFORMANCE_REFERENCE_CACHE"  # "off": neither read nor written
_FORMAT = b"dsh-conformance/reference/v2"  # v2: models as kit.trace.unvalidated(...)
_STALE_DAYS = 7  # a digest directory unused this long is removed when another is made


def enabled() -> bool:
    return os.environ.get(SWITCH, "").strip().lower() not in ("off", "0", "no", "false")


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """The digest of the code that computes a reference: the oracle's and the kit's Python
    files, the Python version and pydantic's."""

    return digest_of({p.__name__: Path(p.__file__).parent for p in (dsh_conformance.oracle, dsh_conformance.kit)})


def digest_of(packages: dict[str, Path]) -> str:
    """The digest of the Python files (path and bytes) of each package, by name and folder,
    with the Python version and pydantic's."""

    h = hashlib.sha256(_FORMAT)
    h.update(f"\0python {sys.version}\0pydantic {pydantic.VERSION}\0".encode())
    for name, root in sorted(packages.items()):
        for path in sorted(root.rglob("*.py")):
            h.update(f"\0{name}/{path.relative_to(root).as_posix()}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def directory(digest: str | None = None) -> Path:
    env = os.environ
    return _directory(env.get("DSH_CONFORMANCE_CACHE"), env.get("XDG_CACHE_HOME"), env.get("HOME"),
                      digest or source_digest())


@functools.lru_cache(maxsize=8)
def _directory(explicit: str | None, xdg: str | None, home: str | None, digest: str) -> Path:
    """The folder of ``digest`` under the cache root that the environment variables given
    name (the key: ``cache_root`` reads them), made once (asked twice a case)."""

    return cache_root() / "references" / digest[:32]


def load(doc_key: str) -> tuple[Scenario, Trace] | None:
    """The kept reference of the document whose key is ``doc_key``, or None (not kept, the
    cache off, or a file this process must not trust)."""
    if not enabled():
        return None
    path = directory() / f"{doc_key}.pickle"
    try:
        with open(path, "rb") as f:
            if not _trusted(os.fstat(f.fileno())) or not _trusted(os.stat(path.parent)):
                return None
            data = f.read()
    except OSError:
        return None
    # Unpickling makes many objects at once: the collector would walk them, and everything
    # else alive, several times over for nothing (most of what the load costs otherwise).
    was = gc.isenabled()
    gc.disable()
    try:
        kept = pickle.loads(data)
    except Exception:  # noqa: BLE001 - a torn or foreign file is a miss, computed anew
        return None
    finally:
        if was:
            gc.enable()
    if not (isinstance(kept, tuple) and len(kept) == 4 and kept[0] == _FORMAT and kept[1] == doc_key):
        return None
    return kept[2], kept[3]


def holds(doc_key: str) -> bool:
    """Whether ``load`` would find a file for ``doc_key`` that this process may read (its
    content is checked only when it is read)."""
    if not enabled():
        return False
    path = directory() / f"{doc_key}.pickle"
    try:
        st, folder = os.stat(path), os.stat(path.parent)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and _trusted(st) and _trusted(folder)


def store(doc_key: str, scenario: Scenario, trace: Trace) -> None:
    """Keep a reference for the next run (best-effort: any failure is ignored)."""
    if not enabled():
        return
    try:
        buffer = io.BytesIO()
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump((_FORMAT, doc_key, scenario, trace))
        data = buffer.getvalue()
    except Exception:  # noqa: BLE001 - a value pickle cannot take: not kept
        return
    try:
        folder = directory()
        if not folder.is_dir():
            folder.mkdir(parents=True, mode=0o700, exist_ok=True)
            _prune(folder)
        fd, tmp = tempfile.mkstemp(prefix=f".{doc_key}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, folder / f"{doc_key}.pickle")
    except OSError:
        return


class _Pickler(pickle.Pickler):
    """Pickles a model without extra or private values as ``kit.trace.unvalidated(class,
    fields, fields given)``, which restores what pydantic's ``__setstate__`` would, without
    the state dictionary around it; anything else (another model included) as pickle does."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, BaseModel) and obj.__pydantic_extra__ is None and obj.__pydantic_private__ is None:
            return unvalidated, (type(obj), obj.__dict__, obj.__pydantic_fields_set__)
        return NotImplemented


def _trusted(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (a pickle runs code when read)."""
    uid = os.getuid() if hasattr(os, "getuid") else st.st_uid
    return st.st_uid == uid and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _prune(made: Path) -> None:
    """Remove the digest directories beside ``made`` that no run has written to for a week
    (each edit of the oracle makes a new one)."""

    cutoff = time.time() - _STALE_DAYS * 86400
    for other in made.parent.iterdir():
        try:
            if other != made and other.is_dir() and other.stat().st_mtime < cutoff:
                shutil.rmtree(other, ignore_errors=True)
        except OSError:
            continue


__all__ = ["SWITCH", "digest_of", "directory", "enabled", "holds", "load", "source_digest", "store"]
