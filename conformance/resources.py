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

from importlib.util import find_spec
from pathlib import Path


def folder(package: str) -> Path:
    """The directory of ``package`` on disk (packages are installed as plain files), found
    without importing it: ``importlib.resources.files`` imports the package, and the
    oracle's ``__init__`` is most of the suite's import time (``dsh-conformance --help``
    reads these paths and must not pay for it)."""
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{package}: not a package of this installation")
    return Path(next(iter(spec.submodule_search_locations)))


SUITE = folder("dsh_conformance")  # conformance/
KIT = folder("dsh_conformance.kit")
ORACLE = folder("dsh_conformance.oracle")
TOOLS = folder("dsh_conformance.tools")
CATALOGS = folder("dsh_conformance.catalogs")
EXAMPLES = folder("dsh_conformance.examples")  # the starter examples, one on each kit (examples/)
CASES = SUITE / "cases"  # the built-in corpus
EXPECTATIONS = SUITE / "expectations"
ADAPTER = TOOLS / "dsh-adapter"  # the Node adapter's sources (its node_modules only in a clone)
EXAMPLES = folder("dsh_conformance.examples")  # examples/: the starter ports (`kit py` writes the Python one)
COVERAGE_EXCEPTIONS = SUITE / "data" / "coverage-exceptions.yaml"  # the branches no draw can reach, with why


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
