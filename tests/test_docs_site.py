"""The docs site (issue 44, item 1): docs/ builds with ``mkdocs build --strict`` into a
temporary directory, so that a link between pages, an anchor, or a link to a file of the tree
that is broken fails the tests; the README stays a map of under 400 lines whose links hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.rules("P1")

pytest.importorskip("mkdocs")
from dsh_conformance.tools.site_links import broken_links  # noqa: E402


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, cwd=config.parent)


def test_the_docs_build_into_a_site_with_no_broken_link(tmp_path):
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "reliability.html").is_file()


@pytest.mark.parametrize("link, says", [
    ("[x](reference/gone.md)", "links 'reference/gone.md'"),
    ("[x](../conformance/cases/gone.json)", "links '../conformance/cases/gone.json'"),
    ("[x](page.md#no-such-heading)", "does not contain an anchor '#no-such-heading'"),
])
def test_a_broken_link_fails_the_build(tmp_path, link, says):
    tree = tmp_path / "tree"
    (tree / "docs").mkdir(parents=True)
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.split("\nnav:", 1)[0].replace("tools/site_links.py", str(ROOT / "tools" / "site_links.py"))
    (tree / "mkdocs.yml").write_text(config, encoding="utf-8")
    (tree / "docs" / "index.md").write_text(f"# Home\n\nSee {link}, and [a page](page.md).\n", encoding="utf-8")
    (tree / "docs" / "page.md").write_text("# Page\n\n## A heading\n\n`[not a link](gone.md)`\n", encoding="utf-8")
    done = _build(tree / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and says in done.stderr, done.stderr


def test_the_readme_is_a_map_whose_links_hold():
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 400
    assert not broken_links(text, readme)
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs" / "reference").glob("*.md")}
    assert pages and all(f"]({p})" in text for p in pages), "the README's map links every reference page"
    for said in ("make run", "make test", "inconclusive", "pip install pytest", "five steps"):
        assert said in text, said
