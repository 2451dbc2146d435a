"""Where two JSON values differ, and how to show it: the one place every view asks.

A divergence holds two trace items that may run to thousands of characters; cut at a fixed
length, the printed expected and actual read the same when the difference lies further in.
Every view (the console's failures, ``replay`` and ``replay --all``, the Markdown, HTML and
JSON reports, JUnit messages, ``diff``) therefore shows the first differing *path* inside
the two values (``.value.frozen: expected true, actual false``) and, when a value is too
long to print whole, a window of its text around that path rather than its beginning.

``same`` is the comparison that decided the divergence (``agreement.agree`` under the run's
profiles: masked messages, loose prefixes): a difference it allows is walked past, so the
path names what the comparison objected to. Without it, plain equality.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dsh_conformance.kit import jsontext

Step = str | int
Same = Callable[[Any, Any], bool]

LIMIT = 400  # characters of a value's text printed whole
AT_LIMIT = 160  # characters of each value at the differing path
NOTHING = "(nothing)"
_NAME = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


def _equal(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b  # true is not 1: JSON tells them apart


def first_difference(a: Any, b: Any, same: Same | None = None) -> list[Step]:
    """The path (keys and indexes) of the first place inside ``a`` and ``b`` that differs;
    [] when the values differ as wholes (a different type, a list of another length, one
    side missing) or ``same`` finds no single part to blame."""
    same = same or _equal
    path: list[Step] = []
    while True:
        step = _differing_child(a, b, same)
        if step is None:
            return path
        path.append(step)
        if isinstance(step, str) and (step not in a or step not in b):
            return path  # a key only one side has
        a, b = a[step], b[step]


def _differing_child(a: Any, b: Any, same: Same) -> Step | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in [*a, *(k for k in b if k not in a)]:
            if k not in a or k not in b or not same(a[k], b[k]):
                return k
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if not same(x, y):
                return i
    return None


class _Missing:
    def __repr__(self) -> str:
        return NOTHING


MISSING: Any = _Missing()  # what a path reaches on the side that lacks it


def value_at(v: Any, path: list[Step]) -> Any:
    """What ``path`` reaches inside ``v``, or ``MISSING``."""
    for step in path:
        if isinstance(step, str) and isinstance(v, dict) and step in v:
            v = v[step]
        elif isinstance(step, int) and isinstance(v, list) and 0 <= step < len(v):
            v = v[step]
        else:
            return MISSING
    return v


def path_text(path: list[Step]) -> str:
    """``.value.result.additionalContexts[2]``; a key that is not a plain name is quoted."""
    out = []
    for step in path:
        if isinstance(step, int):
            out.append(f"[{step}]")
        elif _NAME.match(step):
            out.append(f".{step}")
        else:
            out.append(f"[{jsontext.dumps(step)}]")
    return "".join(out)


def text(v: Any) -> str:
    """A value as compact JSON text; ``(nothing)`` for no value."""
    return NOTHING if v is None or v is MISSING else jsontext.dumps(v, separators=(",", ":"))


class _Encoder:
    """Compact JSON text of a value (as ``text``) that also records where a path begins."""

    def __init__(self, target: list[Step]) -> None:
        self.target = target
        self.parts: list[str] = []
        self.length = 0
        self.offset = 0

    def emit(self, s: str) -> None:
        self.parts.append(s)
        self.length += len(s)

    def encode(self, v: Any, here: list[Step]) -> None:
        if here == self.target:
            self.offset = self.length
        on_way = here == self.target[: len(here)]
        if isinstance(v, dict) and on_way:
            self.emit("{")
            for n, (k, x) in enumerate(v.items()):
                self.emit(("," if n else "") + jsontext.dumps(str(k)) + ":")
                self.encode(x, [*here, k])
            self.emit("}")
        elif isinstance(v, list) and on_way:
            self.emit("[")
            for n, x in enumerate(v):
                self.emit("," if n else "")
                self.encode(x, [*here, n])
            self.emit("]")
        else:
            self.emit(jsontext.dumps(v, separators=(",", ":")))  # a JSON null inside is null


def window(v: Any, path: list[Step], limit: int = LIMIT, none: str = NOTHING) -> str:
    """``text(v)``, or when longer than ``limit`` a window of it that shows where ``path``
    begins (``...`` marks what is cut on either side). ``none``: how a None value reads (a
    trace item of None is no item; a None inside a value is JSON null)."""
    if v is MISSING:
        return NOTHING
    if v is None:
        return none
    enc = _Encoder(path)
    enc.encode(v, [])
    whole = "".join(enc.parts)
    if len(whole) <= limit:
        return whole
    start = max(0, min(enc.offset - limit // 4, len(whole) - limit))
    cut = whole[start:start + limit]
    return ("..." if start else "") + cut + ("..." if start + limit < len(whole) else "")


@dataclass(frozen=True)
class Located:
    """Two values and the first place inside them that differs."""

    expected: Any
    actual: Any
    path: list[Step]

    @property
    def at(self) -> str:
        return path_text(self.path)

    def values_at(self, limit: int = AT_LIMIT) -> tuple[str, str]:
        e, a = value_at(self.expected, self.path), value_at(self.actual, self.path)
        inner = first_difference(e, a)
        none = "null" if self.path else NOTHING
        return window(e, inner, limit, none), window(a, inner, limit, none)

    def headline(self) -> str | None:
        """``.value.frozen: expected true, actual false``; None when the values differ as
        wholes (the two texts below say it all)."""
        if not self.path or self.expected is None or self.actual is None:
            return None
        e, a = self.values_at()
        return f"{self.at}: expected {e}, actual {a}"

    def texts(self, limit: int = LIMIT) -> tuple[str, str]:
        """Both values' texts, each cut to a window around the path when too long."""
        return window(self.expected, self.path, limit), window(self.actual, self.path, limit)

    def lines(self, indent: str = "  ", limit: int = LIMIT) -> list[str]:
        """The console's lines: where inside, then expected and actual."""
        e, a = self.texts(limit)
        head = self.headline()
        return ([f"{indent}differs at {head}"] if head else []) + [f"{indent}expected: {e}", f"{indent}actual:   {a}"]


def locate(expected: Any, actual: Any, path: list[Step] | None = None, same: Same | None = None) -> Located:
    """``expected`` and ``actual`` with their first differing path: ``path`` when the
    comparison recorded one (a divergence's ``at``), else found with ``same``."""
    if path is None:
        path = first_difference(expected, actual, same)
    return Located(expected, actual, list(path))


def locate_record(d: dict[str, Any]) -> Located:
    """A divergence as a report's case record holds it (``where``, ``expected``,
    ``actual``, and ``at`` when the run recorded the path)."""
    at = d.get("at")
    path = [s for s in at if isinstance(s, (str, int))] if isinstance(at, list) else None
    return locate(d.get("expected"), d.get("actual"), path)


__all__ = ["Located", "MISSING", "first_difference", "locate", "locate_record", "path_text", "text", "value_at",
           "window"]
