"""EN/ZH pairing records (``foo.i18n.yaml``) and the git blob hashes they hold.

A pair is three sibling files: ``foo.md``, ``foo.zh.md`` and ``foo.i18n.yaml``. The record
holds, for each side, the git blob hash of its exact bytes as of the last state known to be
consistent. The format is upstream's: blank lines and ``#`` lines are ignored; every other
line is ``<basename>.md: <40 lowercase hex>``; exactly the two sides' basenames, each once.
It is read with a regular expression, not a YAML library, so that a malformed record fails
the way upstream's gate fails.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

RECORD_LINE = re.compile(r"^([^:#]+\.md): ([0-9a-f]{40})$")


def blob_hash(data: bytes) -> str:
    """``git hash-object`` of ``data``: sha1 over ``blob <size>\\0`` and the bytes."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def pair_paths(source: Path) -> tuple[Path, Path, Path]:
    """(English, Chinese, record) for the English side ``foo.md``."""
    stem = source.name[: -len(".md")]
    return source, source.with_name(stem + ".zh.md"), source.with_name(stem + ".i18n.yaml")


def render_record(comment: str, en_name: str, en: bytes, zh_name: str, zh: bytes) -> str:
    """A record: the comment lines, then one hash line per side (English first)."""
    head = comment + "\n" if comment else ""
    return f"{head}{en_name}: {blob_hash(en)}\n{zh_name}: {blob_hash(zh)}\n"


@dataclass(frozen=True)
class RecordProblem:
    line: int
    message: str


def parse_record(text: str, expected: tuple[str, str]) -> tuple[dict[str, tuple[str, int]], list[RecordProblem]]:
    """The hashes by basename (with their 1-based lines), and what breaks the format."""
    hashes: dict[str, tuple[str, int]] = {}
    problems: list[RecordProblem] = []
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        m = RECORD_LINE.match(line)
        if m is None:
            problems.append(RecordProblem(n, f"malformed consistency record line {line!r} "
                                             "(expected `<name>.md: <40 lowercase hex digits>`)"))
            continue
        name, digest = m.groups()
        if name in hashes:
            problems.append(RecordProblem(n, f"duplicate entry for {name}"))
        elif name not in expected:
            problems.append(RecordProblem(n, f"unexpected entry {name} (expected exactly {expected[0]} and {expected[1]})"))
        hashes[name] = (digest, n)
    for name in expected:
        if name not in hashes:
            problems.append(RecordProblem(1, f"malformed consistency record: no entry for {name} "
                                             f"(expected exactly {expected[0]} and {expected[1]})"))
    return hashes, problems
