"""When two items agree: under a profile set's masks (what no rule of the checked profiles
fixes is not compared, spec section 2), with Code Mode's own texts compared under
code-mode, ``kit.trace.ANY`` a value the spec leaves open, and P101's warnings compared
head by head."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsh_conformance.oracle import texts

from dsh_conformance.kit import jsontext
from dsh_conformance.kit.jsvalue import same_value
from dsh_conformance.kit.trace import ANY

from dsh_conformance.judge import exact_texts, masks as masking
from dsh_conformance.judge.masks import Masks
from dsh_conformance.judge.same_json import same_json


def agree(expected: Any, actual: Any, exact: bool, code_mode: bool = False, masks: Masks | None = None) -> bool:
    """Whether ``actual`` is what ``expected`` requires under ``masks`` (a profile set's,
    ``conformance.masks``; without it ``exact`` picks none or core's); Code Mode's own texts
    stay compared under code-mode (section 2); ``kit.trace.ANY`` is a value the spec leaves open."""
    if masks is None:
        masks = masking.NOTHING_HIDDEN if exact else masking.core_masks()
    return agree_under(expected, actual, masks, code_mode)


def agree_under(expected: Any, actual: Any, masks: Masks, code_mode: bool) -> bool:
    exact = masks.texts
    kind = type(expected)
    if kind is str:
        if type(actual) is not str:
            return False
        if expected == actual:
            return True  # what every rule below allows: the same text
        if code_mode and not exact and exact_texts.code_mode_text(expected):
            return agree_under(expected, actual, masking.NOTHING_HIDDEN, code_mode)
        if exact:
            return exact_texts.same_text(expected, actual)
        # Texts core does not fix are masked by the part that holds them (masks.py); any other
        # string is data some core rule fixes (a value, arguments, a key), compared exactly.
        return jsontext.same_units(expected, actual)
    if kind is dict:
        if expected == ANY:
            return True
        if type(actual) is not dict:
            return False
        if masks.hidden:
            # Section 2: what no rule of the checked profiles fixes is not compared (the
            # catalog's parts): inside a result, an Error, and the observations that carry them.
            keep = (lambda t: exact_texts.code_mode_text(t)) if code_mode else (lambda _t: False)
            if type(expected.get("isError")) is bool:
                expected, actual = masks.result_pair(expected, actual, keep)
            elif expected.get("$js") == "error":
                expected, actual = masks.error_pair(expected, actual, keep)
            elif expected.get("type") == "tool/result" and "data" in expected:
                expected, actual = masks.event_pair(expected, actual)
            elif "stage" in expected and "what" in expected:
                expected, actual = masks.item_pair(expected, actual, keep)
        if expected.keys() != actual.keys():
            return False
        for k, e in expected.items():
            a = actual[k]
            if not agree_under(e, a, masks, code_mode):
                return False
        return True
    if kind is list:
        if type(actual) is not list or len(expected) != len(actual):
            return False
        for e, a in zip(expected, actual):
            if not agree_under(e, a, masks, code_mode):
                return False
        return True
    return same_value(expected, actual)


def warnings_agree(expected: list[str], actual: list[str]) -> bool:
    """P101's warnings: the text before the observer's message is the spec's; the message
    is compared as any failure message is (a refused write's wording is the engine's)."""
    if len(expected) != len(actual):
        return False
    for e, a in zip(expected, actual):
        marker = texts.OBSERVER_FAILED
        if marker in e and marker in a:
            (e_head, e_msg), (a_head, a_msg) = e.split(marker, 1), a.split(marker, 1)
            if e_head != a_head or not agree(e_msg, a_msg, True):
                return False
        elif not agree(e, a, True):
            return False
    return True


def matcher(profiles: set[str]) -> Callable[[Any, Any], bool]:
    """``agree`` at the strictness of ``profiles``. Two items that are the same JSON agree
    under every profile, and ``same_json.same_json`` tells so at C speed (``==`` alone would take
    ``True`` for ``1``); ``==`` comes first, as it is cheaper on items that differ."""
    masks, code_mode = masking.masks_for(profiles), "code-mode" in profiles
    return lambda e, a: (e == a and same_json(e, a)) or agree_under(e, a, masks, code_mode)
