"""JavaScript values as the oracle sees them (spec section 3.10 and 3.11).

The oracle never decodes the wire form into Python objects of its own: a JS value is
plain JSON in which an object carrying a string ``"$js"`` key is a token for what JSON
cannot say (``undefined``, ``NaN``, a BigInt, a throwing getter, ...). Working on the
wire form keeps the oracle's inputs and outputs byte-comparable with any IUT's, and it
preserves property order, which decides which offending item a snapshot meets first
(P13).

This module holds the JavaScript semantics the pipeline leans on: the lossless-JSON
snapshot (P12, P13), ``ToString`` (section 3.1), ``message(x)``/``info(x)`` (P9),
``JSON.stringify`` as far as messages need it (P41), and equality of values.
"""

from __future__ import annotations

import copy
import json
import math
import re
from decimal import Decimal
from typing import Any

from . import jsontext, realm

JsValue = Any
"""A JSON value in which ``{"$js": ...}`` objects are tokens (section 3.11)."""

UNDEFINED: dict[str, str] = {"$js": "undefined"}

TOKEN_KINDS = frozenset({
    "undefined", "NaN", "Infinity", "-Infinity", "-0", "bigint", "function", "symbol",
    "date", "instance", "cycle", "hole", "array", "object", "null-proto",
    "getter-throws", "error", "hostile", "promise", "getter", "shared",
})

MAX_SAFE = 2**53


class NotLossless(Exception):
    """A snapshot met a value that is not lossless JSON (section 3.10)."""


class Thrown(Exception):
    """A JavaScript throw of ``value`` (a JS value in wire form) escaping a Python helper."""

    def __init__(self, value: JsValue) -> None:
        super().__init__(value)
        self.value = value


def token(v: JsValue) -> str | None:
    """The token kind of ``v``, or None when ``v`` is not a token."""
    if isinstance(v, dict):
        kind = v.get("$js")
        if isinstance(kind, str):
            return kind
    return None


def is_undefined(v: JsValue) -> bool:
    return isinstance(v, dict) and v.get("$js") == "undefined"  # token(v) == "undefined", inlined


def js_error(message: str, cls: str = "Error", **extra: Any) -> dict[str, Any]:
    """An Error instance token, as a participant or the registry would throw it."""
    out: dict[str, Any] = {"$js": "error", "class": cls, "message": message}
    out.update(extra)
    return out


def type_error(message: str) -> dict[str, Any]:
    return js_error(message, "TypeError")


HOSTILE_INSPECTION = js_error("hostile value")
"""What inspecting a hostile value throws: any read, ``typeof`` aside (spec 3.11)."""


def getter_thrown(prop: dict[str, Any]) -> JsValue:
    """The value thrown by reading a ``getter-throws`` property."""
    if "thrown" in prop:
        return prop["thrown"]
    return js_error(str(prop.get("message", "")))


def deref(v: JsValue) -> JsValue:
    """The object a ``shared`` token stands for (its definition's value); else ``v``."""
    if type(v) is not dict or v.get("$js") != "shared":  # token(v) != "shared", on the hot path
        return v
    if "value" in v:
        return v["value"]
    return realm.current().shared(str(v.get("id")))


def read(v: JsValue) -> JsValue:
    """What reading an own property that holds ``v`` gives: an accessor runs (a getter
    participant, or a getter that throws), a shared reference is its object, anything
    else is the value itself."""
    if type(v) is not dict:
        return v  # not a token: the value itself (the common case)
    kind = token(v)
    if kind == "getter-throws":
        raise Thrown(getter_thrown(v))
    if kind == "getter":
        return deref(realm.current().read_getter(str(v.get("id"))))
    return deref(v)


# An Error instance's own properties, when its token does not give them: what its prototype
# chain answers (``name`` is the class's, a HarnessError's own name is its class name too).
_ERROR_FIELDS = ("message", "name", "code", "cause")


def error_field(x: dict[str, Any], key: str) -> JsValue:
    """``x[key]`` for an error token ``x``: the token's field as a property read (a getter
    runs, a getter-throws token throws), else the default."""
    if key in x and key in _ERROR_FIELDS:
        return read(x[key])
    if key == "message":
        return ""
    if key == "name":
        return x.get("class", "Error")
    return UNDEFINED


# --------------------------------------------------------------------- key order

_INDEX_KEY = re.compile(r"^(0|[1-9][0-9]*)$")


def _is_index_key(k: str) -> bool:
    return bool(_INDEX_KEY.match(k)) and int(k) <= 4294967294


def js_keys(obj: dict[str, Any]) -> list[str]:
    """Own keys in JavaScript order: integer-like keys ascending, then insertion order."""
    for k in obj:
        if k[:1] in _DIGITS:
            break
    else:  # the common case: no key starts with a digit, insertion order as it is
        return list(obj)
    index = [k for k in obj if k[:1] in _DIGITS and _is_index_key(k)]
    if not index:  # no integer-like key
        return list(obj)
    index.sort(key=int)
    return index + [k for k in obj if not (k[:1] in _DIGITS and _is_index_key(k))]


_DIGITS = frozenset("0123456789")


# --------------------------------------------------------------------- copies

_ATOMS = (str, int, float, bool, type(None))
ATOMS = _ATOMS
"""What a copy of a wire value shares, not copies: JSON's primitives."""


def clone(v: JsValue, keep: dict[int, Any] | None = None) -> JsValue:
    """A deep copy of a value in wire form: ``copy.deepcopy`` for JSON, without its
    generic dispatch. Like it, an object reached twice within ``v`` is copied once (and
    reached twice in the copy); anything that is not JSON is left to ``copy.deepcopy``.
    An object whose id is in ``keep`` (one that never changes: the registry's deep-frozen
    objects) is not copied but shared."""
    if isinstance(v, _ATOMS):
        return v
    return _clone(v, {}, _NONE if keep is None else keep)


_NONE: dict[int, Any] = {}


def _clone(v: Any, memo: dict[int, Any], keep: dict[int, Any] = _NONE) -> Any:
    if isinstance(v, _ATOMS):
        return v
    if id(v) in keep:
        return v
    seen = memo.get(id(v))
    if seen is not None:
        return seen
    if type(v) is dict:
        out: Any = {}
        memo[id(v)] = out
        for k, x in v.items():
            out[k] = x if isinstance(x, _ATOMS) else _clone(x, memo, keep)
        return out
    if type(v) is list:
        out = []
        memo[id(v)] = out
        out.extend(x if isinstance(x, _ATOMS) else _clone(x, memo, keep) for x in v)
        return out

    return copy.deepcopy(v, memo)


# --------------------------------------------------------------------- numbers

def _is_number(v: JsValue) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def canonical_number(v: int | float) -> int | float:
    """A JS number in the wire's canonical form: integral doubles as ints (JS has one number type)."""
    f = float(v)
    if isinstance(v, int) and abs(v) <= MAX_SAFE:
        return v
    if f.is_integer() and abs(f) < 1e21:
        return int(f)
    return f


def number_to_string(v: int | float) -> str:
    """Number::toString (radix 10): the shortest round-trip digits, JS exponent rules."""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        if v == 0:
            return "0"
    f = float(v)
    if f == 0:
        return "0"
    sign = "-" if f < 0 else ""
    # repr() yields the shortest round-trip digits; Decimal splits them exactly.
    _, digit_tuple, exponent = Decimal(repr(abs(f))).as_tuple()
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    exponent = int(exponent)
    while len(digits) > 1 and digits.endswith("0"):
        digits, exponent = digits[:-1], exponent + 1
    k = len(digits)
    n = k + exponent  # the decimal point sits after n digits (ECMA-262 Number::toString)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + exp
    return sign + digits[0] + "." + digits[1:] + exp


# --------------------------------------------------------------------- snapshot

def snapshot(value: JsValue) -> JsValue:
    """The detached lossless-JSON snapshot of ``value`` (P12, P13).

    Raises NotLossless for the first offending item met depth-first in property order,
    and Thrown when a read throws first. Container-level checks (prototype, keys,
    density) come before the container's items are read, as in the reference walk.
    """
    return _snap(value, 0)


def _snap(v: JsValue, depth: int) -> JsValue:
    if v is None or isinstance(v, (bool, str)):
        return v
    if type(v) is dict and "$js" not in v:  # a plain object, no token to look at (most objects)
        out = {}
        for k in js_keys(v):
            x = v[k]  # a string, a boolean or null is its own snapshot: no call for it
            out[k] = x if x is None or isinstance(x, (bool, str)) else _snap(x, depth + 1)
        return out
    if _is_number(v):
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v) or (v == 0 and math.copysign(1, v) < 0)):
            raise NotLossless()
        return canonical_number(v)
    if isinstance(v, list):
        return [_snap(item, depth + 1) for item in v]
    if not isinstance(v, dict):
        raise NotLossless()
    kind = token(v)
    if kind is None:
        return {k: _snap(v[k], depth + 1) for k in js_keys(v)}
    match kind:
        case "object" | "null-proto":
            if v.get("symbolKeys") or v.get("hidden"):
                raise NotLossless()
            entries = v.get("entries", {})
            return _plain_object({k: _snap(entries[k], depth + 1) for k in js_keys(entries)})
        case "getter-throws" | "getter":
            return _snap(read(v), depth)  # an accessor's one read (P13): its value, or its throw
        case "shared":
            return _snap(deref(v), depth)  # reached again: copied again (P13)
        case "hostile":
            raise Thrown(HOSTILE_INSPECTION)  # its first read throws, and that propagates (P13)
        case _:
            # hole, array-with-extras, cycle, class instances, non-finite numbers, ...
            raise NotLossless()


def _plain_object(props: dict[str, Any]) -> dict[str, Any]:
    """A plain object in wire form: one with its own ``"$js"`` key stays escaped (3.11)."""
    if "$js" in props:
        return {"$js": "object", "entries": props}
    return props


def is_lossless(v: JsValue) -> bool:
    try:
        snapshot(v)
    except (NotLossless, Thrown):
        return False
    return True


# --------------------------------------------------------------------- ToString and friends

# What String() gives for the instance a ``{"$js":"instance","class":C}`` token denotes (the
# scenario language makes each built-in empty: new Map(), /(?:)/, new Uint8Array(0),
# new String(''), new URL('about:blank')...). Classes with a Symbol.toStringTag, and the
# DataView, read "[object C]"; a RegExp its source; a typed array joins its (no) elements;
# the primitive wrappers and a URL their value; a user class has no tag: "[object Object]".
_TAGGED_INSTANCES = frozenset({"Map", "Set", "WeakMap", "WeakSet", "Promise", "ArrayBuffer", "DataView"})
_INSTANCE_TEXTS = {"RegExp": "/(?:)/", "String": "", "Number": "0", "Boolean": "false", "URL": "about:blank",
                   **{c: "" for c in ("Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
                                      "Int32Array", "Uint32Array", "Float32Array", "Float64Array",
                                      "BigInt64Array", "BigUint64Array")}}


# JSON.stringify of those instances: a primitive wrapper is unwrapped, a URL has a toJSON;
# every other one has no enumerable own property: "{}".
_JSON_INSTANCES = {"String": '""', "Number": "0", "Boolean": "false", "URL": '"about:blank"'}


def _instance_string(cls: str) -> str:
    if cls in _TAGGED_INSTANCES:
        return f"[object {cls}]"
    return _INSTANCE_TEXTS.get(cls, "[object Object]")


def to_string(v: JsValue, _seen: tuple[int, ...] = ()) -> str:
    """``ToString(v)`` (section 3.1): template literals and ``+``. Raises Thrown where JS
    throws (a symbol, a null-prototype object, a throwing getter...)."""
    if isinstance(v, str):
        return v
    if (literal := _literal(v)) is not None:
        return literal
    if _is_number(v):
        if isinstance(v, float) and v == 0:
            return "0"
        return number_to_string(v)
    if isinstance(v, list):
        return _join(v, _seen)
    kind = token(v)
    match kind:
        case None | "object" | "null-proto":
            if kind == "null-proto":
                # String() of a null-prototype object has no toString to call.
                raise Thrown(type_error("Cannot convert object to primitive value"))
            return "[object Object]"
        case "undefined":
            return "undefined"
        case "NaN" | "Infinity" | "-Infinity":
            return kind
        case "-0":
            return "0"
        case "bigint":
            return str(v.get("value", "0"))
        case "symbol":
            raise Thrown(type_error("Cannot convert a Symbol value to a string"))
        case "function":
            return f"function {v.get('name', '')}() {{ [native code] }}"
        case "date":
            return str(v.get("value", "Invalid Date"))
        case "instance":
            return _instance_string(str(v.get("class", "Object")))
        case "promise":
            return "[object Promise]"
        case "error":  # Error.prototype.toString: name, then message
            name = error_field(v, "name")
            name = "Error" if is_undefined(name) else to_string(name, _seen)
            msg = error_field(v, "message")
            msg = "" if is_undefined(msg) else to_string(msg, _seen)
            if not name:
                return msg
            return f"{name}: {msg}" if msg else name
        case "array":
            return _join(v.get("items", []), _seen)
        case "hole" | "cycle":
            return ""
        case "getter-throws" | "getter":
            return to_string(read(v), _seen)
        case "shared":
            return to_string(deref(v), _seen)
        case "hostile":
            raise Thrown(HOSTILE_INSPECTION)
    return "[object Object]"


def js_string(v: JsValue) -> str:
    """``String(v)`` (section 3.1, revision 2026-12-01): ``ToString`` except that a symbol
    gives ``Symbol(<description>)``. Only P9 and P41 convert with it; a symbol nested in an
    array still throws, through ``ToString`` of the elements."""
    if token(v) == "symbol":
        description = v.get("description")
        return f"Symbol({description if isinstance(description, str) else ''})"
    return to_string(v)


def _join(items: list[JsValue], seen: tuple[int, ...]) -> str:
    if id(items) in seen:
        return ""
    parts = []
    for item in items:
        if token(item) not in ("hole", "cycle"):
            item = read(item)  # an element may be an accessor
        if item is None or token(item) in ("undefined", "hole", "cycle"):
            parts.append("")
        else:
            parts.append(to_string(item, seen + (id(items),)))
    return ",".join(parts)


UNPRINTABLE = "<unprintable thrown value>"


def message_value(x: JsValue) -> JsValue:
    """``message(x)`` of P9: an Error instance's ``message`` whatever it holds (a number, an
    object, ``undefined``...), else a string ``message`` property, else ``String(x)``; when
    an inspection throws, ``<unprintable thrown value>``."""
    with realm.reading(("P9",)):  # the accessors read here are message(x)'s
        return _message_value(x)


def _message_value(x: JsValue) -> JsValue:
    try:
        x = deref(x)
        kind = token(x)
        if kind == "hostile":
            raise Thrown(x)
        if kind == "error":
            return error_field(x, "message")
        if isinstance(x, dict):
            props = x.get("entries", {}) if kind in ("object", "null-proto") else (x if kind is None else {})
            if "message" in props:
                m = read(props["message"])
                if isinstance(m, str):
                    return m
        return js_string(x)  # String(x): a symbol describes itself (revision 2026-12-01)
    except Thrown:
        return UNPRINTABLE


def message_of(x: JsValue) -> str:
    """``message(x)`` as a text that embeds it shows it (a template literal: ``ToString``)."""
    m = message_value(x)
    if isinstance(m, str):
        return m
    try:
        return to_string(m)
    except Thrown:
        return UNPRINTABLE  # a symbol message: the spec does not say; the text stays printable


def info_of(x: JsValue) -> dict[str, Any] | None:
    """``info(x)`` of P9: ``{name, code}`` (read in that order) for a HarnessError
    instance, else None; None too when reading either throws."""
    if token(x) == "error" and x.get("harness"):
        try:
            with realm.reading(("P9",)):  # the accessors read here are info(x)'s
                name = error_field(x, "name")
                code = error_field(x, "code")
        except Thrown:
            return None
        return {"name": name, "code": code}
    return None


# --------------------------------------------------------------------- JSON text

def json_text(v: JsValue) -> str | None:
    """``JSON.stringify(v)`` in compact form; None where JS returns undefined. Raises Thrown."""
    return _stringify(v, ())


def json_string(s: str) -> str:
    """JSON.stringify of a string: Python's escapes for quotes, backslashes and control
    characters are JavaScript's, and a lone surrogate is written as its ``\\udXXX`` escape
    (well-formed JSON.stringify, ES2019)."""
    return jsontext.dumps(s)


def _literal(v: JsValue) -> str | None:
    """The text of ``null``, ``true`` and ``false``, the same in ``ToString`` and in JSON."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    return None


def _stringify(v: JsValue, stack: tuple[int, ...]) -> str | None:
    if (literal := _literal(v)) is not None:
        return literal
    if isinstance(v, str):
        return json_string(v)
    if _is_number(v):
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            return "null"
        return number_to_string(v)
    kind = token(v)
    if kind in ("undefined", "function", "symbol"):
        return None
    if kind in ("NaN", "Infinity", "-Infinity"):
        return "null"
    if kind == "-0":
        return "0"
    if kind == "bigint":
        raise Thrown(type_error("Do not know how to serialize a BigInt"))
    if kind == "date":
        return json.dumps(str(v.get("value", "")))
    if kind == "cycle":
        raise Thrown(type_error("Converting circular structure to JSON"))
    if kind in ("getter-throws", "getter", "shared"):
        return _stringify(read(v), stack)
    if kind == "instance" and v.get("class") in _JSON_INSTANCES:  # unwrapped, or its toJSON (a URL)
        return _JSON_INSTANCES[v["class"]]
    if kind in ("instance", "promise", "error", "hostile"):
        return "{}"
    if isinstance(v, list) or kind == "array":
        items = v if isinstance(v, list) else v.get("items", [])
        parts = []
        for item in items:
            text = None if token(item) == "hole" else _stringify(item, stack + (id(items),))
            parts.append("null" if text is None else text)
        return "[" + ",".join(parts) + "]"
    entries = v.get("entries", {}) if kind in ("object", "null-proto") else v
    parts = []
    for k in js_keys(entries):
        text = _stringify(entries[k], stack + (id(entries),))
        if text is not None:
            parts.append(json_string(k) + ":" + text)
    return "{" + ",".join(parts) + "}"


# --------------------------------------------------------------------- equality

def same_value(a: JsValue, b: JsValue) -> bool:
    """Structural equality of two wire values, numbers compared as JS numbers."""
    if _is_number(a) and _is_number(b):
        return float(a) == float(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, str):
        return jsontext.same_units(a, b)  # UTF-16 code units, as JavaScript compares strings
    return bool(a == b)


# --------------------------------------------------------------------- property reads

def get(obj: JsValue, key: str) -> JsValue:
    """``obj[key]`` for a JS value in wire form; an accessor runs (its throw is raised as
    Thrown), a shared reference is its object."""
    if type(obj) is dict and "$js" not in obj:  # a plain object, no token to look at (most reads)
        return read(obj[key]) if key in obj else UNDEFINED
    obj = deref(obj)
    kind = token(obj)
    if isinstance(obj, dict) and kind is None:
        props = obj
    elif kind in ("object", "null-proto"):
        props = obj.get("entries", {})
    elif kind == "error":
        return error_field(obj, key)
    else:
        return UNDEFINED
    if key not in props:
        return UNDEFINED
    return read(props[key])


def has_own(obj: JsValue, key: str) -> bool:
    obj = deref(obj)
    kind = token(obj)
    if isinstance(obj, dict) and kind is None:
        return key in obj
    if kind in ("object", "null-proto"):
        return key in obj.get("entries", {})
    return False


def is_object(v: JsValue) -> bool:
    """``typeof v === "object" && v !== null`` for a wire value."""
    if isinstance(v, list):
        return True
    if not isinstance(v, dict):
        return False
    return token(v) not in ("undefined", "NaN", "Infinity", "-Infinity", "-0", "bigint", "symbol",
                            "function", "hole")


def truthy(v: JsValue) -> bool:
    if v is None or v is False or v == "" or (isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0):
        return False
    return token(v) not in ("undefined", "NaN", "-0")
