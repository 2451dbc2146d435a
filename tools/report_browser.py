"""The HTML report in a real browser: headless Chromium driven by Playwright.

Playwright's own browser download is not used: the system's Chromium (Debian's package
``chromium``) is launched with flags that keep it off the network. The tests open
reports with ``open_report`` and check what a person would see; ``make screenshots``
takes the README's pictures of the rc.8 report with ``screenshots``:

    python -m tools.report_browser REPORT.html OUT_DIR [--rule P11]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright



# Headless, no sandbox (CI runs as root), and nothing that reaches out on its own.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    """The system's Chromium: ``$DSH_CHROMIUM``, else ``chromium`` on the PATH."""
    for candidate in (os.environ.get("DSH_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def why_no_browser() -> str | None:
    """Why the report cannot be shown in a browser here, or None when it can."""
    if find_chromium() is None:
        return "no Chromium installed (apt-get install chromium, or set DSH_CHROMIUM)"

    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[dev]')"
    return None


@contextmanager
def browser_page(width: int = 1440, height: int = 1000, timeout_ms: float | None = None) -> Iterator[Any]:
    """A fresh page of a headless Chromium with a fresh profile; ``timeout_ms``: Playwright's
    limit on each wait (0: none, for a caller that guards against hangs otherwise; default
    Playwright's 30 s)."""
    executable = find_chromium()
    if executable is None:
        raise RuntimeError(why_no_browser())
    with tempfile.TemporaryDirectory(prefix="dsh-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=executable, headless=True, args=FLAGS,
            viewport={"width": width, "height": height}, offline=True)
        if timeout_ms is not None:
            context.set_default_timeout(timeout_ms)
            context.set_default_navigation_timeout(timeout_ms)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            yield page
        finally:
            context.close()


def open_report(page: Any, path: Path) -> None:
    page.goto(Path(path).resolve().as_uri())
    page.wait_for_selector("table.matrix")


def open_cell(page: Any, rule: str, implementation: int = 0) -> Any:
    """Click the matrix cell of ``rule`` (of the ``implementation``-th report) and return
    the detail dialog once it shows."""
    row = page.locator(f'tr.rule[data-rule="{rule}"]')
    row.locator("td.cell").nth(implementation).locator("button").click()
    dialog = page.locator("dialog#detail")
    dialog.wait_for(state="visible")
    return dialog


def screenshots(report: Path, out: Path, rule: str = "P11") -> list[Path]:
    """The summary and matrix, and the detail view of ``rule``'s cell, as PNG files."""
    out.mkdir(parents=True, exist_ok=True)
    summary, detail = out / "report-summary.png", out / "report-detail.png"
    with browser_page() as page:
        open_report(page, report)
        page.screenshot(path=str(summary))
        page.set_viewport_size({"width": 1440, "height": 1200})
        dialog = open_cell(page, rule)
        # The open case from its title down: its rules, the first divergence, the traces.
        dialog.locator("details.case[open] > summary").first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(detail))
    return [summary, detail]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.report_browser", description=__doc__.splitlines()[0])
    p.add_argument("report", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--rule", default="P11", help="the rule whose cell's detail view is pictured (default P11)")
    args = p.parse_args(argv)
    reason = why_no_browser()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    for path in screenshots(args.report, args.out, args.rule):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
