"""The results site (``dsh-conformance site``) in headless Chromium, as ``report_browser``
shows the HTML report: pages opened with what the console says kept, and the README's
pictures of the front page and of an implementation's page, at a desktop width and at
420 px (a phone):

    python -m dsh_conformance.tools.site_browser SITE_DIR OUT_DIR --impl SLUG
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .report_browser import browser_page, why_no_browser

WIDTHS = {"desktop": 1440, "420": 420}


@contextmanager
def watched_page(width: int = 1440, timeout_ms: float | None = None) -> Iterator[tuple[Any, list[str]]]:
    """A page and the list its console errors, uncaught exceptions and dialogs (an
    ``alert`` a hostile report would raise) are added to (``timeout_ms``: ``browser_page``'s)."""
    problems: list[str] = []
    with browser_page(width=width, timeout_ms=timeout_ms) as page:
        page.on("console", lambda m: problems.append(f"{page.url}: console {m.type}: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"{page.url}: uncaught {e}"))
        page.on("dialog", lambda d: (problems.append(f"{page.url}: dialog {d.message}"), d.dismiss()))
        yield page, problems


def open_page(page: Any, path: Path, query: str = "") -> None:
    page.goto(Path(path).resolve().as_uri() + query)
    page.wait_for_load_state("load")


def screenshots(site: Path, out: Path, impl: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for label, width in WIDTHS.items():
        with watched_page(width) as (page, problems):
            pages = (("site-front", site / "index.html"), ("site-implementation", site / "impl" / f"{impl}.html"))
            for name, path in pages:
                open_page(page, path)
                target = out / f"{name}-{label}.png"
                page.screenshot(path=str(target), full_page=False)
                written.append(target)
            if problems:
                raise RuntimeError("; ".join(problems))
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dsh_conformance.tools.site_browser",
                                description=__doc__.splitlines()[0])
    p.add_argument("site", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--impl", required=True, help="the implementation whose page is pictured (its file name in impl/)")
    args = p.parse_args(argv)
    reason = why_no_browser()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    for path in screenshots(args.site, args.out, args.impl):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
