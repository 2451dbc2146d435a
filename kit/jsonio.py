"""JSON read at the edges of the oracle and the suite, within the input limits.

Every document the oracle or the suite reads (a scenario or case file, a protocol line, a
report line) goes through ``loads``/``load_file`` here, and every decoded scenario through
``check_limits`` (``kit.scenario.parse_scenario`` calls it), so that both sides accept and
refuse exactly the same inputs, each refusal one ``InputLimitError`` naming the JSON path or
the line and column. The limits (the spec sets none, P13: "nesting depth is unbounded"; these
are what this implementation handles, stated in the README):

- ``MAX_FILE_BYTES``: a scenario or case file (and an expectations file) is at most 16 MiB (the
  corpus's largest is a few KiB); a report is at most ``MAX_REPORT_BYTES`` (512 MiB); every
  file is read by ``read_limited``, which refuses what is no regular file (a directory, a
  pipe, a device such as ``/dev/zero``) before reading a byte, and never reads past the limit;
- ``MAX_DEPTH``: arrays and objects nest at most 200 levels, the document's root being level 1
  (a ``{"$js": ...}`` token counts as the object it is); values inside a scenario can nest
  about 190 levels, a trace nests them a few levels deeper still (``MAX_MESSAGE_DEPTH``
  allows for the protocol's envelope around both);
- numbers are IEEE-754 doubles (spec section 3.11): a literal must be finite as a double
  (``1e400`` and a 400-digit integer are not; write ``{"$js":"Infinity"}``), and an integer
  literal has at most ``MAX_INTEGER_DIGITS`` digits;
- text is UTF-8.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_REPORT_BYTES = 512 * 1024 * 1024
MAX_DEPTH = 200
MAX_MESSAGE_DEPTH = MAX_DEPTH + 16
MAX_INTEGER_DIGITS = 309  # 10**309 is past the largest double (about 1.8e308)


class InputLimitError(ValueError):
    """A document outside the limits or not JSON: ``where`` is a JSON path (``$...``), or
    ``$`` with the line and column in the message."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


class _LongInteger:
    """An integer literal too long to convert (the walk reports it with its path)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _parse_int(text: str) -> int | _LongInteger:
    if len(text) - text.startswith("-") > MAX_INTEGER_DIGITS:
        return _LongInteger(text)
    return int(text)


def _reject_constant(name: str) -> Any:
    raise InputLimitError("$", f"{name} is not JSON; write {{\"$js\":\"{name}\"}}")


def loads(text: str | bytes, max_depth: int = MAX_DEPTH, surrogates: bool = False) -> Any:
    """Decode one JSON document within the limits (any top-level value). With
    ``surrogates``, bytes may carry lone surrogates raw, as WTF-8 writes them (an
    implementation's output: a lone surrogate is a lossless JS string, section 3.11)."""
    if isinstance(text, bytes):
        text = decode_utf8(text, surrogates)
    try:
        # The common case first: integers parsed by the decoder itself (a Python call per
        # integer, _parse_int, costs the decoder most of its speed). Only a document that
        # breaks a limit, or holds an integer too long for int(), is decoded again with
        # _parse_int, so that a refusal names an over-long literal as such.
        doc = _decode(text, None, max_depth)
        if _within(doc, max_depth):
            return doc
    except _TooLong:
        pass
    doc = _decode(text, _parse_int, max_depth)
    check_limits(doc, max_depth)
    return doc


class _TooLong(Exception):
    """An integer literal that int() refuses (more than sys.get_int_max_str_digits())."""


def _decode(text: str, parse_int: Any, max_depth: int) -> Any:
    try:
        return json.loads(text, parse_int=parse_int, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise InputLimitError("$", f"not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        # The decoder recurses once per level; far past the limit, say where the limit is crossed.
        line, column = _too_deep_at(text, max_depth)
        raise InputLimitError("$", f"nested deeper than {max_depth} levels (at line {line} column {column})") from None
    except InputLimitError:
        raise  # NaN or Infinity (_reject_constant)
    except ValueError:
        if parse_int is None:
            raise _TooLong() from None
        raise


def decode_utf8(data: bytes, surrogates: bool = False) -> str:
    try:
        # surrogatepass reads an encoded surrogate (ED A0..BF xx) and refuses every other bad byte
        return data.decode("utf-8", "surrogatepass" if surrogates else "strict")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputLimitError("$", f"not UTF-8: byte 0x{data[e.start]:02x} at offset {e.start} (line {line}) "
                                   f"{e.reason}") from None


def read_limited(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes. A directory, a pipe, a socket
    or a device is refused before a byte is read (opened without blocking: a FIFO with no
    writer does not hang the reader), and a file that grows while it is read is read only
    up to the limit. InputLimitError for those; OSError (cannot open) propagates."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputLimitError("$", f"not a regular file ({_file_kind(st.st_mode)}); name a file")
        if st.st_size > limit:
            raise InputLimitError("$", f"the file has {st.st_size} bytes; the limit is {limit} ({limit >> 20} MiB)")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise InputLimitError("$", f"the file has more than {limit} bytes; the limit is {limit} ({limit >> 20} MiB)")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a pipe"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "a special file"


def load_file(path: str | Path, max_depth: int = MAX_DEPTH) -> Any:
    """Read and decode a JSON file within the limits. OSError propagates to the caller."""
    return loads(read_limited(path), max_depth)


def check_limits(doc: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise InputLimitError at the first place (depth-first) where a decoded document is
    nested too deep or holds a number that is no finite double. Iterative: a document built
    in memory may be nested deeper than Python's stack. The common case (nothing wrong)
    walks without building paths; only a refusal walks again to name the place."""
    if not _within(doc, max_depth):
        where, message = _violation(doc, max_depth, named=True)  # type: ignore[misc]
        raise InputLimitError(where, message)


def as_doubles(doc: Any) -> Any:
    """``doc`` with each integer beyond 2^53 replaced by its nearest double, as JSON.parse in a
    JavaScript implementation reads it (spec 3.11: a wire integer denotes its nearest double).
    The document itself is left as it is; containers are copied only where a number changed."""
    if type(doc) is int:
        if -2**53 <= doc <= 2**53:
            return doc
        f = float(doc)
        return int(f) if abs(f) < 1e21 else f
    if isinstance(doc, dict):
        out = None
        for k, v in doc.items():
            if type(v) in _PLAIN:
                continue
            n = as_doubles(v)
            if n is not v:
                out = dict(doc) if out is None else out
                out[k] = n
        return doc if out is None else out
    if isinstance(doc, list):
        items = [as_doubles(v) for v in doc]
        return items if any(a is not b for a, b in zip(items, doc)) else doc
    return doc


_INF, _NEG_INF = float("inf"), float("-inf")
_PLAIN = frozenset({str, bool, type(None)})


def _within(doc: Any, max_depth: int) -> bool:
    """Whether ``doc`` is within the limits: the walk of ``_violation`` without paths,
    visiting containers only (a leaf is looked at where its container is)."""
    if not isinstance(doc, (dict, list)):
        return _number_problem(doc) is None
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > max_depth:
            return False
        for item in (value.values() if isinstance(value, dict) else value):
            kind = type(item)
            if kind in _PLAIN:
                continue
            if kind is dict or kind is list:
                stack.append((item, depth + 1))
            elif kind is int:
                if not -2**1023 < item < 2**1023 and _number_problem(item) is not None:
                    return False
            elif kind is float:
                if item != item or item == _INF or item == _NEG_INF:
                    return False
            elif isinstance(item, (dict, list)):
                stack.append((item, depth + 1))
            elif _number_problem(item) is not None:
                return False
    return True


def _violation(doc: Any, max_depth: int, named: bool) -> tuple[str, str] | None:
    stack: list[tuple[Any, int, Any]] = [(doc, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > max_depth:
                return _path(path), f"nested deeper than {max_depth} levels"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            if named:
                stack.extend((v, depth + 1, (*path, k)) for k, v in reversed(list(items)))
            else:
                stack.extend((v, depth + 1, ()) for _, v in items)
            continue
        problem = _number_problem(value)
        if problem is not None:
            return _path(path), problem
    return None


def _number_problem(value: Any) -> str | None:
    if isinstance(value, _LongInteger):
        return (f"an integer literal of {len(value.text.lstrip('-'))} digits; a number is a double and has at "
                f"most {MAX_INTEGER_DIGITS} digits here")
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return "a number literal beyond the range of a double; write {\"$js\":\"Infinity\"} or {\"$js\":\"-Infinity\"}"
    if isinstance(value, int) and not isinstance(value, bool) and not -2**1023 < value < 2**1023:
        try:
            float(value)
        except OverflowError:
            return "an integer beyond the range of a double; write {\"$js\":\"Infinity\"}, or a BigInt token"
    return None


def _path(parts: tuple[str | int, ...]) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    if len(out) > 200:  # a path 200 levels down: its head and tail say where
        out = out[:90] + " ... " + out[-90:]
    return out


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _too_deep_at(text: str, max_depth: int) -> tuple[int, int]:
    depth = 0
    for m in _TOKENS.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth > max_depth:
                offset = m.start()
                line = text.count("\n", 0, offset) + 1
                return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
        elif ch in "]}":
            depth -= 1
    return 1, 1


__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "MAX_INTEGER_DIGITS", "MAX_MESSAGE_DEPTH", "MAX_REPORT_BYTES",
           "InputLimitError", "check_limits", "decode_utf8", "load_file", "loads", "read_limited"]
