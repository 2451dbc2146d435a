"""The catalog index (catalogs/pipeline.catalog.json): every name the pipeline's docs may
use, with its kind and facts: session-log events (badge, writer, payload schema), live
events (mode, signature, schemas), services, tools, type members and packages.

It is built from the typed tables of kit/session_events.py, live_events.py and
tool_definitions.py; the docs checker resolves the page's names in it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from dsh_conformance.kit import session_events
from dsh_conformance.kit.schema_doc import schema_document
from dsh_conformance.oracle import live_events, tool_definitions

INDEX_FILE = "pipeline.catalog.json"
INDEX_FORMAT = "dsh-conformance/catalog/v1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionEventEntry(_Model):
    name: str
    badge: Literal["surface", "log-only"]
    writtenBy: str
    writtenByOracle: bool = Field(description="the oracle's traces carry this event")
    rules: list[str]
    summary: str
    schema_: str = Field(alias="schema", description="JSON pointer to the event's schema")


class ArgumentEntry(_Model):
    name: str
    type: str
    schema_: str | None = Field(default=None, alias="schema")


class LiveEventEntry(_Model):
    name: str
    mode: Literal["waterfall", "emit"]
    signature: str
    arguments: list[ArgumentEntry]
    returns: str
    returnsSchema: str | None
    dispatchedBy: str
    rules: list[str]
    summary: str


class ServiceEntry(_Model):
    name: str
    type: str
    methods: list[str]
    mechanism: str = Field(description="the live event its answerers listen to")
    rules: list[str]


class ToolEntry(_Model):
    name: str
    package: str
    description: str
    parameters: dict[str, Any]
    rules: list[str]


class MemberEntry(_Model):
    name: str
    signature: str
    optional: bool
    summary: str


class TypeEntry(_Model):
    name: str
    members: list[MemberEntry]


class PackageEntry(_Model):
    name: str
    package: str
    dispatches: list[str]
    summary: str


class CatalogIndex(_Model):
    format: Literal["dsh-conformance/catalog/v1"] = Field(alias="$format")
    sessionEvents: list[SessionEventEntry]
    liveEvents: list[LiveEventEntry]
    services: list[ServiceEntry]
    tools: list[ToolEntry]
    types: list[TypeEntry]
    packages: list[PackageEntry]

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # -------------------------------------------------------------- look-ups

    def session_event(self, name: str) -> SessionEventEntry | None:
        return next((e for e in self.sessionEvents if e.name == name), None)

    def live_event(self, name: str) -> LiveEventEntry | None:
        return next((e for e in self.liveEvents if e.name == name), None)

    def kinds_of(self, name: str, of: str | None = None) -> list[str]:
        """Every kind under which the index knows ``name`` (namespaces may overlap)."""
        kinds = []
        if self.session_event(name):
            kinds.append("session-event")
        if self.live_event(name):
            kinds.append("live-event")
        if any(s.name == name for s in self.services):
            kinds.append("service")
        if any(t.name == name for t in self.tools):
            kinds.append("tool")
        if any(m.name == name for t in self.types if of in (None, t.name) for m in t.members):
            kinds.append("type-member")
        if any(p.name == name for p in self.packages):
            kinds.append("package")
        if name.endswith("/*") and any(e.name.startswith(name[:-1]) for e in self.liveEvents):
            kinds.append("event-scope")
        return kinds


def build_index() -> CatalogIndex:
    return CatalogIndex(
        format=INDEX_FORMAT,
        sessionEvents=[SessionEventEntry(
            name=e.name, badge=e.badge, writtenBy=e.written_by,
            writtenByOracle=e.written_by in session_events.WRITTEN_BY_ORACLE, rules=list(e.rules),
            summary=e.summary, schema=f"session-events.schema.json#/$defs/{session_events.event_class_name(e.name)}")
            for e in session_events.EVENTS],
        liveEvents=[LiveEventEntry(
            name=e.name, mode=e.mode, signature=e.signature,
            arguments=[ArgumentEntry(name=a.name, type=a.type, schema=a.schema) for a in e.arguments],
            returns=e.returns, returnsSchema=e.returns_schema, dispatchedBy=e.dispatched_by,
            rules=list(e.rules), summary=e.summary) for e in live_events.EVENTS],
        services=[ServiceEntry(name=s.name, type=s.type, methods=list(s.methods), mechanism=s.mechanism,
                               rules=list(s.rules)) for s in live_events.SERVICES],
        tools=[ToolEntry(name=t.schema.name, package=t.package, description=t.schema.description,
                         parameters=t.schema.parameters, rules=list(t.rules)) for t in tool_definitions.TOOLS],
        types=[TypeEntry(name=type_name, members=[MemberEntry(name=m.name, signature=m.signature,
                                                              optional=m.optional, summary=m.summary)
                                                  for m in members])
               for type_name, members in (("ToolDefinition", tool_definitions.MEMBERS),
                                          ("ToolExecutionResult", tool_definitions.RESULT_MEMBERS),
                                          ("ToolExecution", tool_definitions.EXECUTION_MEMBERS),
                                          ("ToolRunContext", tool_definitions.RUN_CONTEXT_MEMBERS),
                                          ("PreToolDecision", tool_definitions.PRE_DECISIONS),
                                          ("PostToolDecision", tool_definitions.POST_DECISIONS))],
        packages=[PackageEntry(name=p.name, package=p.package, dispatches=list(p.dispatches), summary=p.summary)
                  for p in tool_definitions.PACKAGES],
    )


_ADAPTER: TypeAdapter[CatalogIndex] = TypeAdapter(CatalogIndex)


def index_json(index: CatalogIndex) -> dict[str, Any]:
    return _ADAPTER.dump_python(index, mode="json", by_alias=True, exclude_none=False)


def index_json_schema() -> dict[str, Any]:
    return schema_document(_ADAPTER, "pipeline.catalog.schema.json")


class CatalogError(ValueError):
    pass


def load_index(catalogs: Path) -> CatalogIndex:
    path = catalogs / INDEX_FILE
    try:
        return _ADAPTER.validate_python(json.loads(path.read_text(encoding="utf-8")))
    except OSError as e:
        raise CatalogError(f"{path}: cannot read: {e.strerror or e}") from None
    except (json.JSONDecodeError, ValidationError) as e:
        raise CatalogError(f"{path}: not a catalog index: {e}") from None
