"""The docs site's link check, an MkDocs hook (``mkdocs.yml``: ``hooks``).

The pages of docs/ link files of the repository outside docs/ (the corpus's case files, the
kit's sources): they hold in a clone and from ``.site/`` (built beside docs/), but MkDocs
only knows the files of its docs directory and would call each of them missing. So MkDocs's
own not-found warning is off (``validation.links.not_found: info``) and this hook checks every
relative link of every page instead, inside docs/ and out: a link whose target is not a file
or directory of the tree is a warning, which ``mkdocs build --strict`` turns into a failed
build. Anchors within the site are left to MkDocs (``validation.anchors``).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

LOG = logging.getLogger("mkdocs.plugins.dsh_site_links")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\[[^\]]+\]:\s*(\S+)", re.M)
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", re.I)


def broken_links(markdown: str, page: Path) -> list[str]:
    """The relative link targets of ``markdown`` (the text of the file ``page``) that name
    no file or directory; links inside code are not links."""
    text = CODE.sub("", FENCE.sub("", markdown))
    out = []
    for m in LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if EXTERNAL.match(target):
            continue
        path = unquote(target.split("#", 1)[0].split("?", 1)[0])
        if path and not (page.parent / path).exists():
            out.append(target)
    return out


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    for target in broken_links(markdown, Path(page.file.abs_src_path)):
        LOG.warning("Doc file '%s' links '%s', which is not a file of the tree", page.file.src_path, target)
    return markdown
