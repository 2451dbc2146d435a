"""The name table of the docs check, generated from the catalog index (never written by hand):
every name of rc.8's public surface that the catalogs hold, with its kind.

- session-log events, live events, tools and packages by name;
- services (``ctx.approval``, ``ctx.tools``) and each of their methods (``ctx.tools.execute``);
- type members with their type (``ToolDefinition.finalizeContent``, the decision variants
  ``PreToolDecision.ask``), and the types themselves;
- event scopes (``fs/*``, ``tools/*``) of the live and session events.

tests/test_docs_claims.py holds it to the installed package's declarations when they are there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .catalog_index import CatalogIndex

METHOD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(")


@dataclass(frozen=True)
class NameEntry:
    name: str
    kind: str  # session-event, live-event, service, service-method, tool, type, type-member, package, event-scope
    of: str | None = None  # the type of a member, the service of a method


@dataclass(frozen=True)
class NameTable:
    entries: tuple[NameEntry, ...]

    def entries_of(self, name: str) -> list[NameEntry]:
        return [e for e in self.entries if e.name == name]

    def kind_of(self, name: str, of: str | None = None) -> NameEntry | None:
        """The entry of ``name`` (a member of ``of`` when given)."""
        return next((e for e in self.entries if e.name == name and (of is None or e.of == of)), None)


_TABLES: dict[int, tuple[CatalogIndex, NameTable]] = {}


def name_table(index: CatalogIndex) -> NameTable:
    """The table of ``index`` (built once per index object)."""
    cached = _TABLES.get(id(index))
    if cached is not None and cached[0] is index:
        return cached[1]
    table = _build(index)
    _TABLES[id(index)] = (index, table)
    return table


def _build(index: CatalogIndex) -> NameTable:
    out: list[NameEntry] = []
    out += [NameEntry(e.name, "session-event") for e in index.sessionEvents]
    out += [NameEntry(e.name, "live-event") for e in index.liveEvents]
    for s in index.services:
        out.append(NameEntry(s.name, "service"))
        for m in s.methods:
            if found := METHOD.match(m):
                out.append(NameEntry(f"{s.name}.{found.group(1)}", "service-method", s.name))
    out += [NameEntry(t.name, "tool") for t in index.tools]
    for ty in index.types:
        out.append(NameEntry(ty.name, "type"))
        out += [NameEntry(m.name, "type-member", ty.name) for m in ty.members]
    out += [NameEntry(p.name, "package") for p in index.packages]
    scopes = sorted({e.name.rsplit("/", 1)[0] + "/*" for e in (*index.liveEvents, *index.sessionEvents)
                     if "/" in e.name})
    out += [NameEntry(s, "event-scope") for s in scopes]
    return NameTable(tuple(out))
