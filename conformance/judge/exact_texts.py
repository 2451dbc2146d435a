"""Exact texts: when two strings agree under a profile set that compares texts (``reference``;
Code Mode's own texts under ``code-mode``), spec section 2.

The same text always agrees. Beyond that, failure content repeats its message after
``Error: `` (E(m), section 3.1); a message the spec leaves to the implementation (P63, P84) is
open, also where run_code's failure quotes it before the captured output (P128); a refused
write's wording is the engine's (section 1), quoted or not; a text whose tail the spec leaves
open (``oracle.texts.LOOSE_PREFIXES``, a schema violation's wording, section 1.3) is compared
by its fixed prefix. ``conformance.compare`` calls ``same_text`` for every string it compares
exactly.
"""

from __future__ import annotations

import re

from dsh_conformance.kit import jsontext
from dsh_conformance.oracle import texts

FIXED_VIOLATIONS = (texts.VALUE_NOT_LOSSLESS, "value snapshot failed: ", "output.render ",
                    "output.presentationMeta ")
_RUN_FAILED = re.compile(r"^(code run failed \([a-z-]+\): )")


def same_text(expected: str, actual: str) -> bool:
    """Whether ``actual`` is the text ``expected`` requires, texts compared (reference)."""
    e, a = expected, actual
    if e.startswith("Error: ") and a.startswith("Error: "):
        e, a = e[7:], a[7:]  # failure content repeats the message (E(m), section 3.1)
    if e in texts.IMPLEMENTATION_DEFINED:
        return True  # P63, P84: the spec leaves this message to the implementation
    inner = _open_part(e)
    if inner is not None:
        # such a message quoted by run_code's failure before the captured output
        # (P128): the text around it is fixed, it is open
        head, _, tail = e.partition(inner)
        return len(a) >= len(head) + len(tail) and a.startswith(head) and a.endswith(tail)
    if e.startswith(texts.WRITE_REFUSALS) and a.startswith(texts.WRITE_REFUSALS):
        return True  # a refused write: the TypeError's wording is the engine's (section 1)
    quoted = _quoted_refusals(e, a)
    if quoted is not None:
        return quoted
    prefix = _loose(e)
    return a.startswith(prefix) if prefix is not None else jsontext.same_units(e, a)


def code_mode_text(s: str) -> bool:
    """Whether ``s`` is one of Code Mode's own texts (or a failure content repeating one)."""
    return s.removeprefix("Error: ").startswith(texts.CODE_MODE_PREFIXES)


def _loose(s: str) -> str | None:
    """The fixed prefix of a string whose tail is implementation-defined, else None."""
    for prefix in texts.LOOSE_PREFIXES:
        if s.startswith(prefix):
            return prefix
    m = _RUN_FAILED.match(s)
    if m:  # P128 repeats the program's message, which may be one of these (an awaited rejection)
        if s[m.end():] in texts.IMPLEMENTATION_DEFINED:
            return m[1]  # a message the spec leaves wholly to the implementation (P63, P84)
        inner = _loose(s[m.end():])
        return m[1] + inner if inner is not None else None
    marker = texts.LOOSE_OUTPUT_SCHEMA
    if marker in s:
        head, tail = s.split(marker, 1)
        if not tail.startswith(FIXED_VIOLATIONS):
            return head + marker  # schema violation wording (section 1.3)
    return None


def _open_part(s: str) -> str | None:
    """The implementation-defined message (P63, P84) a run failure quotes before the
    program's captured output (P128), else None."""
    m = _RUN_FAILED.match(s)
    if m is None:
        return None
    rest = s[m.end():]
    return next((t for t in texts.IMPLEMENTATION_DEFINED
                 if rest.startswith(t) and rest[len(t):].startswith(texts.CAPTURED_OUTPUT)), None)


def _quoted_refusals(e: str, a: str) -> bool | None:
    """Two run failures (P128) that each quote a refused write, else None. The refusal's
    wording is the engine's (section 1), as when it is not quoted; the run's head and the
    program's captured output after it stay exact."""
    me, ma = _RUN_FAILED.match(e), _RUN_FAILED.match(a)
    if me is None or ma is None or me[1] != ma[1]:
        return None
    e_rest, a_rest = e[me.end():], a[ma.end():]
    if not (e_rest.startswith(texts.WRITE_REFUSALS) and a_rest.startswith(texts.WRITE_REFUSALS)):
        return None
    _, e_sep, e_out = e_rest.partition(texts.CAPTURED_OUTPUT)
    _, a_sep, a_out = a_rest.partition(texts.CAPTURED_OUTPUT)
    return e_sep == a_sep and e_out == a_out
