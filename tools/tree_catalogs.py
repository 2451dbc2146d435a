"""Catalogs found in a DSH-style docs tree (upstream's generated Markdown catalogs).

When the tree under check carries them, the docs checker also resolves the page's names
there. Only the English files are read; each catalog is optional:

- ``persistence-catalog.md``: ``#### `name` — surface|log-only`` per session-log event;
- ``event-producer-consumer.md``: table rows ``| `name` | `mode` | ...`` per live event;
- ``subsystems/*.md``: ``#### `name` — mode`` per live event and ``### `ctx.key` — `Type```
  per service, inside their generated Cordis regions;
- ``tool-catalog.md``: ``## `@scope/package``` sections holding ``### `tool``` entries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SESSION_EVENT = re.compile(r"^#### `([^`]+)` — (surface|log-only)$")
LIVE_EVENT_ROW = re.compile(r"^\| `([^`]+)` \| `(\w+)` \|")
LIVE_EVENT_HEADING = re.compile(r"^#### `([^`]+)` — (\w+)$")
SERVICE = re.compile(r"^### `(ctx\.[^`]+)` — `([^`]+)`$")
PACKAGE = re.compile(r"^## `(@[^`]+)`$")
TOOL = re.compile(r"^### `([^`]+)`$")


@dataclass(frozen=True)
class Where:
    file: Path
    line: int


@dataclass
class TreeCatalogs:
    session_events: dict[str, tuple[str, Where]] = field(default_factory=dict)  # name -> (badge, where)
    live_events: dict[str, tuple[str, Where]] = field(default_factory=dict)  # name -> (mode, where)
    services: dict[str, tuple[str, Where]] = field(default_factory=dict)
    tools: dict[tuple[str, str], Where] = field(default_factory=dict)  # (package, tool) -> where
    packages: dict[str, Where] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)  # which catalogs the tree has, by role

    def has(self, role: str) -> bool:
        return role in self.files


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def read_tree_catalogs(docs: Path) -> TreeCatalogs:
    out = TreeCatalogs()
    persistence = docs / "persistence-catalog.md"
    if persistence.is_file():
        out.files["session-event"] = persistence
        for n, line in enumerate(_lines(persistence), start=1):
            if m := SESSION_EVENT.match(line):
                out.session_events[m.group(1)] = (m.group(2), Where(persistence, n))
    matrix = docs / "event-producer-consumer.md"
    live_files = [matrix] if matrix.is_file() else []
    live_files += sorted((docs / "subsystems").glob("*.md")) if (docs / "subsystems").is_dir() else []
    for path in live_files:
        if path.name.endswith(".zh.md"):
            continue
        out.files.setdefault("live-event", path)
        for n, line in enumerate(_lines(path), start=1):
            m = LIVE_EVENT_ROW.match(line) or LIVE_EVENT_HEADING.match(line)
            if m and "/" in m.group(1):
                out.live_events.setdefault(m.group(1), (m.group(2), Where(path, n)))
            if m := SERVICE.match(line):
                out.files.setdefault("service", path)
                out.services.setdefault(m.group(1), (m.group(2), Where(path, n)))
    tools = docs / "tool-catalog.md"
    if tools.is_file():
        out.files["tool"] = tools
        out.files["package"] = tools
        package = None
        for n, line in enumerate(_lines(tools), start=1):
            if m := PACKAGE.match(line):
                package = m.group(1)
                out.packages[package] = Where(tools, n)
            elif (m := TOOL.match(line)) and package is not None:
                out.tools[(package, m.group(1))] = Where(tools, n)
    return out


def catalog_entries(docs: Path) -> list[tuple[str, str, str, Where]]:
    """Every entry of the tree's event catalogs, each occurrence: (name, "session-event" or
    "live-event", its badge or mode, where). English pages only: the Chinese sides' generated
    regions are held equal to them by the pair checks."""
    out: list[tuple[str, str, str, Where]] = []
    persistence = docs / "persistence-catalog.md"
    if persistence.is_file():
        out += [(m.group(1), "session-event", m.group(2), Where(persistence, n))
                for n, line in enumerate(_lines(persistence), start=1) if (m := SESSION_EVENT.match(line))]
    files = [docs / "event-producer-consumer.md"] + (sorted((docs / "subsystems").glob("*.md"))
                                                     if (docs / "subsystems").is_dir() else [])
    for path in files:
        if not path.is_file() or path.name.endswith(".zh.md"):
            continue
        for n, line in enumerate(_lines(path), start=1):
            m = LIVE_EVENT_ROW.match(line) or LIVE_EVENT_HEADING.match(line)
            if m and "/" in m.group(1):
                out.append((m.group(1), "live-event", m.group(2), Where(path, n)))
    return out

