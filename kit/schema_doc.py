"""One way to turn a typed model into a catalog JSON Schema document."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def schema_document(tp: Any, schema_id: str, **extra: Any) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``tp``, with its ``$id`` and any extra keywords."""
    adapter = tp if isinstance(tp, TypeAdapter) else TypeAdapter(tp)
    schema = adapter.json_schema(by_alias=True)
    return {"$schema": DRAFT, "$id": schema_id, **extra, **schema}
