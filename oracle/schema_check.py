"""Validating a value against a JSON Schema, as the output contract (P72, P73) and
``defineTool``'s argument check (P75) do."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from ..kit.jsvalue import JsValue, json_text


def schema_violations(schema: dict[str, Any], value: JsValue, label: str) -> list[str]:
    """Violations of ``schema``, in schema-walk order. Their wording is implementation-defined
    (section 1.3); only the prefix and the "; " join are specified (P73, P75)."""
    if schema == {} or schema is True:
        return []  # the empty schema holds every value
    # The schema sees the JSON the value stands for, not its wire form: a model's literal
    # "$js" key is an ordinary key there, and -0 a number. Callers validate lossless values.
    text = json_text(value)
    instance = json.loads(text) if text is not None else value
    validator = _validator(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: (list(e.absolute_path), e.validator))
    out = []
    for e in errors:
        where = label + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
        out.append(f"{where}: {e.message}")
    return out


_VALIDATORS: dict[str, Any] = {}
_MAX_VALIDATORS = 256


def _validator(schema: Any) -> Any:
    """One validator per schema (by its JSON text, key order kept): building one resolves
    the schema's references each time, which cost more than the validation itself."""
    key = json.dumps(schema)
    validator = _VALIDATORS.get(key)
    if validator is None:
        if len(_VALIDATORS) >= _MAX_VALIDATORS:
            _VALIDATORS.clear()
        validator = _VALIDATORS[key] = jsonschema.Draft202012Validator(schema)
    return validator
