"""Where the suite's own files are: its package data, found through importlib.resources,
whether it is installed from a wheel or runs from a clone (an editable install).

The distribution has one import package, ``dsh_conformance`` (the repository's
``conformance/``), whose subpackages ``oracle``, ``tools`` and ``catalogs`` are the
repository's folders of those names; the corpus, the rule index, the catalogs, the flow
model, the prose sources and the Node adapter's sources all travel as their package data.
What only a clone has (the generated pages under ``docs/``, ``../shared`` beside it) is
``None`` when installed.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def folder(package: str) -> Path:
    """The directory of ``package`` on disk (packages are installed as plain files)."""
    return Path(str(files(package)))


SUITE = folder("dsh_conformance")  # conformance/
KIT = folder("dsh_conformance.kit")
ORACLE = folder("dsh_conformance.oracle")
TOOLS = folder("dsh_conformance.tools")
CATALOGS = folder("dsh_conformance.catalogs")
CASES = SUITE / "cases"  # the built-in corpus
EXPECTATIONS = SUITE / "expectations"
ADAPTER = TOOLS / "dsh-adapter"  # the Node adapter's sources (its node_modules only in a clone)


def _clone() -> Path | None:
    root = SUITE.parent
    if (root / "pyproject.toml").is_file() and CATALOGS == root / "catalogs" and TOOLS == root / "tools":
        return root
    return None


CLONE = _clone()
"""The repository's root when the package runs from a clone, else None."""
DOCS = CLONE / "docs" if CLONE is not None else None
"""The project's own pages (generated and checked in a clone)."""
SHARED = CLONE.parent / "shared" if CLONE is not None else None
"""``../shared`` beside a clone: the spec, the seed page, upstream's docs (absent when installed)."""
