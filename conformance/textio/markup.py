"""Text from an implementation or a file, put into Markdown and XML so that it stays text.

A report's implementation name, case ids, expectation reasons and messages come from the
implementation or from files others wrote: in a Markdown page they must not end a table
cell (``|``), start a line of their own (a line break: a heading, a list), open HTML
(``<script>``) or a link, or end a code span (a backtick); in JUnit XML they must not hold a
character XML 1.0 cannot carry at all (most C0 controls, lone surrogates), which makes CI
readers reject the whole file. Control characters are shown as their escapes
(``conformance.terminal.visible``) in both.
"""

from __future__ import annotations

import re

from dsh_conformance.textio.terminal import one_line, visible

# CommonMark's backslash escapes: any ASCII punctuation may be escaped; these are the ones
# that can start markup in the middle of a line (or in a table cell).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#!&~])")


def md_text(text: object) -> str:
    """``text`` as literal Markdown inline text, on one line."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(str(text)))


def md_code(text: object) -> str:
    """``text`` as a Markdown code span, on one line, safe inside a table cell."""
    s = one_line(str(text)).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


# What XML 1.0 allows (section 2.2); anything else is shown as its escape.
_XML_UNSAFE = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: object) -> str:
    """``text`` with every character XML 1.0 cannot carry shown as its escape (``\\x1b``);
    the rest of the terminal's controls too, for a CI page that shows the text raw."""
    return _XML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", visible(str(text)))


__all__ = ["md_code", "md_text", "xml_text"]
