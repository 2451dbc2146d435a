"""P16: a tool-call block's raw argument text as the call's arguments.

The loop parses each block's ``arguments`` string (``JSON.parse`` with JavaScript's number
semantics); the script interpreter parses it again where a write into the caller's input
needs the object the loop made. Both read it here.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..kit.jsvalue import JsValue, canonical_number

NEG_ZERO = {"$js": "-0"}


def parse_arguments(raw: str) -> JsValue:
    """P16: ``JSON.parse`` with JavaScript's number semantics; "" is ``{}``; else the raw text."""
    if raw == "":
        return {}
    try:
        return json_parse(raw)
    except ValueError:
        return raw


def json_parse(raw: str) -> JsValue:
    """``JSON.parse(raw)`` with JavaScript's number semantics; raises ValueError where it throws."""
    return _DECODER.decode(raw)


def _reject(name: str) -> Any:
    raise ValueError(name)


def _int(text: str) -> JsValue:
    if text.startswith("-") and int(text) == 0:
        return NEG_ZERO
    try:
        return canonical_number(float(int(text)) if abs(int(text)) > 2**53 else int(text))
    except OverflowError:
        return {"$js": "-Infinity" if text.startswith("-") else "Infinity"}


def _float(text: str) -> JsValue:
    f = float(text)
    if math.isinf(f):
        return {"$js": "-Infinity" if f < 0 else "Infinity"}
    if f == 0 and math.copysign(1, f) < 0:
        return NEG_ZERO
    return canonical_number(f)


def _object(pairs: list[tuple[str, Any]]) -> JsValue:
    out: dict[str, Any] = {}
    for k, v in pairs:
        out[k] = v  # the last of duplicate keys wins, in the first key's position (as in JS)
    if "$js" in out:
        return {"$js": "object", "entries": out}  # a model's literal "$js" key is data, not a token
    return out


# One decoder for every call's arguments (``json.loads`` with hooks makes one per text).
_DECODER = json.JSONDecoder(parse_constant=_reject, parse_int=_int, parse_float=_float, object_pairs_hook=_object)
