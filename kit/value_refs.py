"""Tokens that refer beyond themselves, checked where a scenario is parsed (see ``realm``).

``{"$js":"getter","id":g}`` names a declared getter (``Scenario.getters``) and stands only
where a property value stands. ``{"$js":"shared","id":s,"value":v}`` defines the shared
object ``s`` (``v`` an object or an array); ``{"$js":"shared","id":s}`` reaches it again.
A reference must follow its definition in the same value, in the order a JavaScript
decoder builds the value (integer-like keys first, then insertion order; a token's fields
in the order below), and never inside its own definition: a value that contains itself is
a cycle (``{"$js":"cycle"}``), not a shared reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .jsvalue import TOKEN_KINDS, js_keys, token

# The order a decoder visits the parts of a token (tools/dsh-adapter/kit/codec.mjs decodes
# in the same order).
TOKEN_PARTS: dict[str, tuple[str, ...]] = {
    "object": ("entries", "hidden"), "null-proto": ("entries",), "array": ("items", "extra"),
    "error": ("cause", "message", "name", "code"), "promise": ("resolves", "rejects"),
    "getter-throws": ("thrown",), "shared": ("value",),
}


class ValueRefError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path, self.message = path, message


def has_refs(value: Any) -> bool:
    """Whether ``value`` holds a getter or shared token anywhere (a look at every object,
    tokens' parts included, without the paths ``walk`` builds): most values hold none, and
    then nothing in them needs a walk."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            kind = v.get("$js")
            if type(kind) is str and kind in REF_KINDS:
                return True
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


REF_KINDS = frozenset({"getter", "shared"})


def _unknown_token(v: Any, path: str, _open: tuple[str, ...]) -> None:
    """Refuse an object that claims to be a token of a kind section 3.11 does not name: the
    oracle would read it as a plain object where an adapter refuses it. (``walk`` visits
    an object token's entries, not the map that holds them, so the escape of a literal
    "$js" key is never taken for a token.)"""
    if isinstance(v, dict) and "$js" in v:
        kind = v["$js"]
        if not (type(kind) is str and kind in TOKEN_KINDS):
            raise ValueRefError(f"{path}.$js", f"unknown token kind {kind!r}: a token is one of "
                                f"{', '.join(sorted(TOKEN_KINDS))}; write an object with a \"$js\" key "
                                "as {\"$js\": \"object\", \"entries\": {...}}")


def check_value(value: Any, path: str, getters: set[str]) -> None:
    """Raise ValueRefError when ``value`` holds a token of no known kind, or when a getter
    or shared token in it refers to nothing."""
    walk(value, path, _unknown_token)
    defined: set[str] = set()
    if token(value) == "getter":
        raise ValueRefError(path, "a getter token stands where a property value stands, not for a whole value")
    if has_refs(value):
        walk(value, path, lambda v, p, open_: _check(v, p, getters, defined, open_))


def definitions(value: Any) -> dict[str, Any]:
    """The shared objects ``value`` defines, by id."""
    out: dict[str, Any] = {}
    if not has_refs(value):
        return out

    def visit(v: Any, _p: str, _open: tuple[str, ...]) -> None:
        if token(v) == "shared" and "value" in v:
            out.setdefault(str(v.get("id")), v["value"])
    walk(value, "$", visit)
    return out


def walk(value: Any, path: str, visit: Callable[[Any, str, tuple[str, ...]], None],
         open_: tuple[str, ...] = ()) -> None:
    """Visit every item of ``value`` in decoding order; ``open_`` lists the shared
    definitions the item sits inside."""
    visit(value, path, open_)
    if isinstance(value, list):
        for i, item in enumerate(value):
            walk(item, f"{path}[{i}]", visit, open_)
        return
    if not isinstance(value, dict):
        return
    kind = token(value)
    if kind is None:
        for k in js_keys(value):
            walk(value[k], f"{path}.{k}", visit, open_)
        return
    inner = open_ + (str(value.get("id")),) if kind == "shared" else open_
    for part in TOKEN_PARTS.get(kind, ()):
        if part not in value:
            continue
        sub = value[part]
        if part in ("entries", "hidden", "extra") and isinstance(sub, dict):
            for k in js_keys(sub):
                walk(sub[k], f"{path}.{part}.{k}", visit, inner)
        elif part == "items" and isinstance(sub, list):
            for i, item in enumerate(sub):
                walk(item, f"{path}.items[{i}]", visit, inner)
        else:
            walk(sub, f"{path}.{part}", visit, inner)


def _check(v: Any, path: str, getters: set[str], defined: set[str], open_: tuple[str, ...]) -> None:
    kind = token(v)
    if kind == "getter":
        gid = v.get("id")
        if gid not in getters:
            raise ValueRefError(path, f"no getter has id {gid!r} (declare it in $.getters)")
    elif kind == "shared":
        sid = v.get("id")
        if not isinstance(sid, str):
            raise ValueRefError(path, "a shared token needs a string id")
        if sid in open_:
            raise ValueRefError(path, f"shared object {sid!r} inside itself: write a cycle token for a value that contains itself")
        if "value" in v:
            if sid in defined:
                raise ValueRefError(path, f"shared object {sid!r} is defined twice in this value")
            if not isinstance(v["value"], (dict, list)) or token(v["value"]) not in (None, "object", "null-proto", "array"):
                raise ValueRefError(f"{path}.value", "a shared object is an object or an array")
            defined.add(sid)
        elif sid not in defined:
            raise ValueRefError(path, f"shared object {sid!r} is reached before it is defined in this value")
