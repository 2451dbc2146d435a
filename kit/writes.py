"""A participant's write into a JavaScript value in wire form (a ``mutate`` step): what
strict-mode ``obj[key] = v``, ``delete obj[key]`` and ``Object.defineProperty`` do, token by
token (spec section 3.11), so that the Python kit and the JavaScript kit (which runs the
real operations on decoded values) agree on every outcome.

A write first reads its way down the path (each part but the last is a property read: an
accessor runs, a ``getter-throws`` property throws, a ``hostile`` value throws on any
operation), then asks the last container for the key. The own properties a token has are
those its decoded JavaScript value has (``codec.mjs``): a function's ``name``, ``length``
(read-only, configurable) and ``prototype`` (not configurable); an array's ``length`` (not
configurable); a RegExp's ``lastIndex`` (not configurable); an Error's ``message`` and
``stack`` and the fields its token gives; an accessor (``getter``, ``getter-throws``) has no
setter. Inherited properties other than an Error's ``name`` are not modelled: a path that
runs through ``Object.prototype``'s methods is outside the scenario language.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import engine_texts as texts
from .jsvalue import (HOSTILE_INSPECTION, UNDEFINED, JsValue, Thrown, clone, error_field, is_undefined, read, to_string,
                      token, type_error)
from .session import RunState


@dataclass(frozen=True)
class Prop:
    """An own property: its raw wire value (an accessor token for an accessor) and attributes."""

    raw: Any
    writable: bool = True
    configurable: bool = True

    @property
    def accessor(self) -> bool:
        return token(self.raw) in ("getter", "getter-throws")


# Accessors without a setter that instances inherit from their class's prototype: a set of one
# throws in strict mode (an AbortSignal's `aborted` and `reason`).
INHERITED_GETTERS = {"AbortSignal": frozenset({"aborted", "reason"})}
SIGNAL = {"$js": "instance", "class": "AbortSignal"}
"""An AbortSignal as a write meets it (a record's or an input's ``signal``)."""

_PRIMITIVE_TOKENS = {"NaN": "number", "Infinity": "number", "-Infinity": "number", "-0": "number",
                     "bigint": "bigint", "symbol": "symbol"}


def primitive_kind(v: Any) -> str | None:
    """The ``typeof`` of a primitive other than null and undefined, else None."""
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (int, float)):
        return "number"
    return _PRIMITIVE_TOKENS.get(str(token(v)))


def own(node: Any, key: str) -> Prop | None:
    """``Object.getOwnPropertyDescriptor(node, key)`` for an object in wire form."""
    kind = token(node)
    if isinstance(node, list):
        if key == "length":
            return Prop(len(node), configurable=False)
        if key.isdigit() and int(key) < len(node) and token(node[int(key)]) != "hole":
            return Prop(node[int(key)])
        return None
    if not isinstance(node, dict):
        return None
    if kind is None:
        return Prop(node[key]) if key in node else None
    if kind in ("object", "null-proto"):
        for part in ("entries", "hidden"):
            if key in node.get(part, {}):
                return Prop(node[part][key])
        return None
    if kind == "array":
        items = node.get("items", [])
        if key == "length":
            return Prop(len(items), configurable=False)
        if key.isdigit() and int(key) < len(items) and token(items[int(key)]) != "hole":
            return Prop(items[int(key)])
        return Prop(node["extra"][key]) if key in node.get("extra", {}) else None
    if kind == "function":  # function () {}: name and length read-only, prototype fixed
        if key in ("name", "length"):
            return Prop(node.get("name", "") if key == "name" else 0, writable=False)
        return Prop({}, configurable=False) if key == "prototype" else None
    if kind == "instance" and node.get("class") == "RegExp" and key == "lastIndex":
        return Prop(0, configurable=False)
    if kind == "error":
        if key in ("message", "stack"):  # new Error(''): an own message even when empty
            return Prop(node.get("message", "") if key == "message" else "")
        harness = node.get("harness") is True
        if key == "name" and "name" in node and (harness or node.get("name") != node.get("class", "Error")):
            return Prop(node["name"])
        if key == "code" and ("code" in node or harness):
            return Prop(node.get("code", UNDEFINED))
        if key == "cause" and "cause" in node:
            return Prop(node["cause"])
    return None


def get_in(node: Any, key: str, up: list[Any]) -> Any:
    """``node[key]`` on the way down a write's path; ``up``: the containers above ``node``."""
    if token(node) == "hostile":
        raise Thrown(HOSTILE_INSPECTION)  # every operation on it throws (spec 3.11)
    if node is None or is_undefined(node):
        raise Thrown(type_error(texts.nullish_read("null" if node is None else "undefined", key)))
    if isinstance(node, str):
        if key == "length":
            return len(node.encode("utf-16-le")) // 2
        return node[int(key)] if key.isdigit() and int(key) < len(node) else UNDEFINED
    if primitive_kind(node) is not None:
        return UNDEFINED
    p = own(node, key)
    if p is None:
        return error_field(node, key) if token(node) == "error" and key == "name" else UNDEFINED
    value = read(p.raw)  # an accessor runs; a shared reference is its object
    if token(value) == "cycle":  # the n-th enclosing container, 1 = node itself
        chain = [*up, node]
        n = int(value.get("up", 1))
        return chain[-n] if 1 <= n <= len(chain) else UNDEFINED
    return value


def refusal(w: RunState, node: Any, key: str, op: str) -> JsValue | None:
    """What ``op`` (``set``, ``delete``, ``define``) of ``key`` on ``node`` throws, or None."""
    if token(node) == "hostile":
        return HOSTILE_INSPECTION  # writes, deletes and definitions included (spec 3.11)
    if node is None or is_undefined(node):
        return type_error(nullish_write(op, key, node))
    kind = primitive_kind(node)
    if kind is not None:
        return None if op == "delete" else type_error(
            "Object.defineProperty called on non-object" if op == "define"
            # The engine's wording names the primitive; only the prefix is compared (WRITE_REFUSALS).
            else f"Cannot create property '{key}' on {kind} '{'Symbol()' if kind == 'symbol' else to_string(node)}'")
    p = own(node, key)
    frozen = w.is_frozen(node) and isinstance(node, (dict, list))
    match op:
        case "set":
            inherited = INHERITED_GETTERS.get(str(node.get("class"))) if token(node) == "instance" else None
            if (p is not None and p.accessor) or (p is None and inherited and key in inherited):
                return type_error(texts.getter_only(key))
            if (p is not None and not p.writable) or (frozen and p is not None):
                return type_error(texts.frozen_set(key))
            return type_error(texts.frozen_add(key)) if frozen else None
        case "delete":
            if p is None:
                return None  # deleting an absent key succeeds
            return type_error(texts.frozen_delete(key)) if frozen or not p.configurable else None
        case _:  # define: a configurable, writable, enumerable data property
            if p is not None and (frozen or not p.configurable):
                return type_error(texts.frozen_define(key))
            return type_error(texts.frozen_define_new(key)) if frozen else None


def attempt(w: RunState, root: Any, path: list[str], op: str) -> tuple[JsValue | None, Any]:
    """Try ``op`` at ``path`` below ``root``: (what it throws or None, the container written)."""
    node, up = root, []
    try:
        for part in path[:-1]:
            node, up = get_in(node, part, up), [*up, node]
    except Thrown as t:
        return t.value, None
    return refusal(w, node, path[-1], op), node


def apply(node: Any, key: str, op: str, value: JsValue) -> None:
    """Carry out an allowed write on a plain object or array the kit keeps (the caller's
    input, a result the registry left unfrozen): later reads see it, as they see a real
    object's."""
    if isinstance(node, dict) and token(node) is None:
        if op == "delete":
            node.pop(key, None)
        else:
            node[key] = clone(value)
    elif isinstance(node, list) and key.isdigit():
        i = int(key)
        if op == "delete" and i < len(node):
            node[i] = {"$js": "hole"}
        elif op != "delete":
            node.extend([{"$js": "hole"}] * (i + 1 - len(node)))
            node[i] = clone(value)


def nullish_write(op: str, key: str, node: Any) -> str:
    """A write, delete or define through ``null`` or ``undefined``: each throws."""
    what = "null" if node is None else "undefined"
    match op:
        case "delete":
            return texts.NULLISH_DELETE
        case "define":
            return "Object.defineProperty called on non-object"
    return f"Cannot set properties of {what} (setting '{key}')"


__all__ = ["attempt", "apply", "own", "refusal", "primitive_kind", "SIGNAL"]
