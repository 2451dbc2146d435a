"""JSON text of JavaScript strings, which may hold lone surrogates (spec section 3.11).

A JavaScript string is a sequence of UTF-16 code units, and a lone surrogate is lossless.
Python holds one as a surrogate code point, which no UTF-8 stream can carry: written raw,
it fails (``UnicodeEncodeError``) or is replaced by ``?``, and pydantic's JSON mode refuses
it. Every JSON text the project writes (traces, protocol messages, reports, case files)
therefore goes through ``dumps``: like ``json.dumps(ensure_ascii=False)`` except that each
lone surrogate is written as its ``\\udXXX`` escape, exactly as JavaScript's
``JSON.stringify`` writes it. The text stays readable (other characters are kept as they
are), is valid UTF-8, and reads back as the same code units with ``json.loads``.

``same_units`` compares two strings as JavaScript does (code unit by code unit): Python
keeps a high and a low surrogate built separately as two code points where JSON text
decodes the same pair as one.
"""

from __future__ import annotations

import codecs
import json
import re
from json.encoder import encode_basestring, encode_basestring_ascii

try:
    from _json import make_encoder as c_make_encoder
except ImportError:  # a Python without the C accelerator: json.dumps each time
    c_make_encoder = None
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """``text`` with every surrogate code point written as a JSON ``\\uXXXX`` escape (lower
    case hex, as ``JSON.stringify``). Only for JSON text: a surrogate can occur there only
    inside a string literal, where the escape means the same code unit."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` with non-ASCII kept and lone surrogates escaped (see the module)."""
    kwargs.setdefault("ensure_ascii", False)
    encode = _encoder(kwargs)
    text = "".join(encode(value, 0)) if encode is not None else json.dumps(value, **kwargs)
    return escape_surrogates(text)


def _encoder(options: dict[str, Any]) -> Any:
    """The C encoder for ``options`` (what ``json.dumps`` itself uses, made once instead of
    once per call: the suite writes thousands of small documents a second), or None where
    only ``json.dumps`` does what the options ask (an indent, a default function...)."""
    key = tuple(sorted(options.items()))
    try:
        found = _ENCODERS.get(key, False)
    except TypeError:  # an unhashable option
        return None
    if found is not False:
        return found
    encoder = None
    plain = set(options) <= {"ensure_ascii", "separators", "sort_keys"} and c_make_encoder is not None
    if plain:
        item_sep, key_sep = options.get("separators") or (", ", ": ")
        basestring = encode_basestring_ascii if options["ensure_ascii"] else encode_basestring
        # No circular check (json.dumps keeps a table of open containers for it): values
        # here are trees, and a cycle still ends, in a RecursionError.
        encoder = c_make_encoder(None, _not_json, basestring, None, key_sep, item_sep,
                                 bool(options.get("sort_keys")), False, True)
    _ENCODERS[key] = encoder
    return encoder


def _not_json(o: Any) -> Any:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


_ENCODERS: dict[tuple[tuple[str, Any], ...], Any] = {}


def utf16(text: str) -> str:
    """``text`` with surrogate pairs held as two code points joined into one, so that
    equal UTF-16 strings are equal Python strings."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def same_units(a: str, b: str) -> bool:
    return a == b or utf16(a) == utf16(b)


# ------------------------------------------------------------------ reading an IUT's output

STREAM_ERRORS = "dsh-wtf8"
"""The error handler for text streams from an implementation: a surrogate an IUT wrote
raw, in the generalized UTF-8 of WTF-8 (bytes ``ED A0..BF xx``), reads back as that code
unit; any other invalid byte as U+FFFD. The suite itself only writes ``dumps`` text, which
is plain UTF-8."""


def _wtf8(exc: UnicodeError) -> tuple[str, int]:
    if isinstance(exc, UnicodeDecodeError):
        try:
            return codecs.lookup_error("surrogatepass")(exc)
        except UnicodeDecodeError:
            return "\ufffd", exc.start + 1
    if isinstance(exc, UnicodeEncodeError):
        # Only text from ``dumps`` is written; should a surrogate slip through anyway, it
        # goes out as its JSON escape rather than as a replacement character.
        return escape_surrogates(exc.object[exc.start:exc.end]), exc.end
    raise exc


codecs.register_error(STREAM_ERRORS, _wtf8)
