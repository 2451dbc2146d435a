"""Text for a terminal: what came from an implementation or a file, shown, never obeyed.

An implementation's name, version and messages, a case id (a file name), an expectation's
reason, a stderr tail: all of it is printed for a person to read, and any of it may hold
control characters that a terminal would act on (ESC starting a CSI or OSC sequence that
clears the screen, sets the window title or writes the clipboard; BEL; a ``\\r`` or a
backspace that overwrites the line a person reads; C1 controls; bidirectional overrides
that reorder what is shown). ``visible`` writes each such character as its escape
(``\\x1b``, ``\\r``, ``\\u202e``), so that what is printed is what was sent, made visible;
a line break and a tab stay as they are (messages are laid out in lines). ``say`` is
``print`` with every value made visible: the commands print through it. ``json_visible``
does the same for JSON text by writing those characters as JSON escapes (the same value).
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

# C0 controls but tab and line feed, DEL, C1 controls, the bidirectional marks, embeddings,
# overrides and isolates, the line and paragraph separators, a byte-order mark, and lone
# surrogates (which no terminal encoding can carry).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                     "\ufeff\ud800-\udfff]")
_NAMED = {"\r": "\\r", "\b": "\\b", "\f": "\\f", "\v": "\\v", "\x00": "\\0"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every character a terminal would act on written as its escape."""
    return _UNSAFE.sub(_escape, text)


def one_line(text: str) -> str:
    """``visible`` and on one line (a line break shown as ``\\n``): for a place in a line,
    such as an error message or a table cell."""
    return visible(text).replace("\n", "\\n").replace("\t", "\\t")


def say(*values: Any, sep: str = " ", end: str = "\n", file: TextIO | None = None, flush: bool = False) -> None:
    """``print``, with every value made ``visible``."""
    stream = sys.stdout if file is None else file
    stream.write(visible(sep.join(str(v) for v in values)) + end)
    if flush:
        stream.flush()


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def json_visible(text: str) -> str:
    """JSON text with the characters ``json.dumps(ensure_ascii=False)`` leaves raw and a
    terminal acts on (DEL, C1 controls, bidirectional controls) written as ``\\uXXXX``
    escapes: the same JSON value. (JSON escapes C0 controls itself; every such character
    of JSON text lies inside a string, where an escape means the character.)"""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def readable_streams() -> None:
    """What this command prints is text for people (JSON it prints is escaped already, see
    kit.jsontext): a lone surrogate an implementation sent in a message is shown as its
    escape instead of ending the command with a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


__all__ = ["json_visible", "one_line", "readable_streams", "say", "visible"]
