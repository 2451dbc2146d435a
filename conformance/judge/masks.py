"""What is compared under a profile set (spec section 2, "Verdicts per profile").

A verdict for a set of profiles depends only on the rules of those profiles (and of the
profiles they require). The observation catalog (``conformance.contract.PARTS``) names each
part of an observed value that only some rules fix, with those rules; under a profile set,
a part none of whose rules belongs to a checked profile is masked. The oracle's trace stays
the same: ``Masks.result_pair`` and ``Masks.item_pair`` rewrite the two sides of one
comparison so that a masked part reads the same on both, and ``conformance.compare``
compares what is left as it always does.

The same table tells blame which rule fixes a difference (``parts_to_blame``): the first part
whose masking alone makes two items agree names its rules (a message text's rule is the one that
gave it, which the routing tells: that part is masked, never blamed by itself).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from dsh_conformance.kit.jsvalue import is_undefined

from dsh_conformance.spec import contract
from dsh_conformance.spec.rules import rules

MASK = "<masked>"
REQUEST_ROOT = "request."  # a mutate step's target inside the approval request
_REQUEST_KEYS = frozenset(contract.REQUEST_VIEW["required"])
_REQUEST_PROPS = frozenset(contract.REQUEST_VIEW["properties"])
_RECORD_KEYS = frozenset(contract.RECORD_VIEW["required"])
_RECORD_PROPS = frozenset(contract.RECORD_VIEW["properties"])
_RECORD_PARTS = (("record rootCallId", "rootCallId"), ("record signal", "signal"))  # part, key of the view
_KEPT_PROPS = frozenset(contract.KEPT_VIEW["properties"])
Agree = Callable[[Any, Any, "Masks"], bool]


@dataclass(frozen=True)
class Masks:
    """The parts (``contract.PARTS`` names) the comparison does not see."""

    hidden: frozenset[str]

    def hides(self, part: str) -> bool:
        return part in self.hidden

    @property
    def texts(self) -> bool:
        """Whether exact texts are compared (failure messages are the reference's texts)."""
        return "error.message" not in self.hidden

    def with_hidden(self, part: str) -> Masks:
        return Masks(self.hidden | {part})

    # ------------------------------------------------------------------ results

    def result_pair(self, e: dict[str, Any], a: dict[str, Any],
                    keep_text: Callable[[str], bool]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Two results (dicts with a boolean ``isError``) with their hidden parts made the same.
        ``keep_text``: a text some checked profile fixes all the same (Code Mode's own)."""
        if not self.hidden:
            return e, a
        e, a = self._presence(e), self._presence(a)
        ee, ae = e.get("error"), a.get("error")
        if isinstance(ee, dict) and isinstance(ae, dict):
            ee, ae = self._errors(ee, ae, keep_text)
            e, a = {**e, "error": ee}, {**a, "error": ae}
        if self.hides("content[].text (failure)") and e.get("isError") is True:
            ec, ac = e.get("content"), a.get("content")
            if isinstance(ec, list) and isinstance(ac, list) and len(ec) == len(ac):
                e, a = {**e, "content": _texts_masked(ec, ac, keep_text, True)}, \
                       {**a, "content": _texts_masked(ec, ac, keep_text, False)}
        return e, a

    def _presence(self, r: dict[str, Any]) -> dict[str, Any]:
        """P92's key presence, masked: an empty context list, an undefined ``meta`` and a
        ``concludesTurn`` that is not ``true`` read as no key."""
        drop = []
        if self.hides("additionalContexts (key presence)") and r.get("additionalContexts") == []:
            drop.append("additionalContexts")
        if self.hides("meta (key presence)") and "meta" in r and is_undefined(r["meta"]):
            drop.append("meta")
        if (self.hides("concludesTurn (key presence)") and r.get("isError") is False
                and "concludesTurn" in r and r["concludesTurn"] is not True):
            drop.append("concludesTurn")
        return {k: v for k, v in r.items() if k not in drop} if drop else r

    def _errors(self, e: dict[str, Any], a: dict[str, Any],
                keep_text: Callable[[str], bool]) -> tuple[dict[str, Any], dict[str, Any]]:
        if self.hides("error.info"):  # P9, P10: info is the reference's
            e, a = _without(e, "info"), _without(a, "info")
        if "message" in e and "message" in a:  # P4, P8: a failure has a message (core)
            em, am = e["message"], a["message"]
            strings = type(em) is str and type(am) is str
            if ((not strings and self.hides("error.message (non-string)"))
                    or (strings and self.hides("error.message") and not keep_text(em))):
                e, a = {**e, "message": MASK}, {**a, "message": MASK}
        return e, a

    # ------------------------------------------------------------------ observations

    def error_pair(self, e: dict[str, Any], a: dict[str, Any],
                   keep_text: Callable[[str], bool]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Two Error tokens (``{"$js": "error"}``, section 3.11) with their message texts made the
        same when the ``Error message`` part is hidden (the implementation's or engine's wording).
        A plain object's ``message`` is its own data: only a token is an Error."""
        if not self.hides("Error message"):
            return e, a
        em, am = e.get("message"), a.get("message")
        if type(em) is str and type(am) is str and a.get("$js") == "error" and not keep_text(em):
            return {**e, "message": MASK}, {**a, "message": MASK}
        return e, a

    def event_pair(self, e: dict[str, Any], a: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Two ``tool/result`` events with their ``error`` (the outcome's ``error.info``, P104)
        made the same when ``error.info`` is hidden: P104 (loop) says the event carries the
        info, P9 and P10 (reference) what it is."""
        ed, ad = e.get("data"), a.get("data")
        if not self.hides("error.info") or not (isinstance(ed, dict) and isinstance(ad, dict)):
            return e, a
        if "error" not in ed and "error" not in ad:
            return e, a
        return {**e, "data": {**ed, "error": MASK}}, {**a, "data": {**ad, "error": MASK}}

    def item_pair(self, e: Any, a: Any, keep_text: Callable[[str], bool] = lambda _t: False) -> tuple[Any, Any]:
        """Two observation items (stage, what, who, value) of the same step with their hidden
        parts made the same; anything else as it is."""
        if not self.hidden or not (isinstance(e, dict) and isinstance(a, dict) and "stage" in e and "what" in e):
            return e, a
        key = (e.get("stage"), e.get("what"), e.get("who"))
        if key != (a.get("stage"), a.get("what"), a.get("who")):
            return e, a
        ev, av = e.get("value"), a.get("value")
        if (self.hides("program failure message") and e["stage"] == "program" and e["what"] in ("settle", "end")
                and isinstance(ev, dict) and isinstance(av, dict)):
            ee, ae = ev.get("error"), av.get("error")
            if (isinstance(ee, dict) and isinstance(ae, dict) and type(ee.get("message")) is str
                    and type(ae.get("message")) is str and not keep_text(ee["message"])):
                # P9, P10: the text of the failure the program saw (the catalog's program steps)
                return ({**e, "value": {**ev, "error": {**ee, "message": MASK}}},
                        {**a, "value": {**av, "error": {**ae, "message": MASK}}})
            return e, a
        if self.hides("approval request") and (_is_request_probe(e) or (e["what"] == "observe" and _is_request_view(ev))):
            return {**e, "value": MASK}, {**a, "value": MASK}  # P39: what the request holds
        if (e["what"] == "observe" and self.hides("record signal") and _is_view(ev, frozenset({"kept"}), _KEPT_PROPS)
                and isinstance(av, dict)):  # P60: a kept signal is the record's signal as it was
            return {**e, "value": {**ev, "signal": MASK}}, {**a, "value": {**av, "signal": MASK}}
        if e["what"] == "observe" and _is_view(ev, _RECORD_KEYS, _RECORD_PROPS) and isinstance(av, dict):
            hidden = [key for part, key in _RECORD_PARTS if self.hides(part) and key in ev and key in av]
            if hidden:  # P23, P52, P60: what the record's root id and signal are is the reference's
                return ({**e, "value": {**ev, **dict.fromkeys(hidden, MASK)}},
                        {**a, "value": {**av, **dict.fromkeys(hidden, MASK)}})
        if (self.hides("approval request writes") and e["what"] == "mutate" and isinstance(ev, dict)
                and isinstance(av, dict) and str(ev.get("target", "")).startswith(REQUEST_ROOT)
                and ev.get("target") == av.get("target")):
            return {**e, "value": {**ev, "outcome": MASK}}, {**a, "value": {**av, "outcome": MASK}}
        return e, a


def _without(d: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key} if key in d else d


def _texts_masked(ec: list[Any], ac: list[Any], keep_text: Callable[[str], bool], expected: bool) -> list[Any]:
    """One side of a failure's content with each text the registry wrote (E(m): the expected
    text starts with ``Error: ``) masked where the other side has a text block there too."""
    out = []
    for eb, ab in zip(ec, ac):
        mine = eb if expected else ab
        if (_text_block(eb) and _text_block(ab) and eb["text"].startswith("Error: ")
                and not keep_text(eb["text"])):
            mine = {**mine, "text": MASK}
        out.append(mine)
    return out


def _text_block(b: Any) -> bool:
    return isinstance(b, dict) and b.get("type") == "text" and type(b.get("text")) is str


def _is_request_probe(item: dict[str, Any]) -> bool:
    return (item["stage"], item["what"], item["who"]) == ("approval", "request", None)


def _is_request_view(v: Any) -> bool:
    """Whether an ``observe`` value is the request view of the catalog (``REQUEST_VIEW``)."""
    return _is_view(v, _REQUEST_KEYS, _REQUEST_PROPS)


def _is_view(v: Any, required: frozenset[str], props: frozenset[str]) -> bool:
    return isinstance(v, dict) and required <= v.keys() <= props


def checked(profiles: set[str] | frozenset[str]) -> frozenset[str]:
    """The profiles a set checks: itself and what its profiles require (every one: core)."""
    return frozenset(profiles) | {"core"}


@cache
def _masks(profiles: frozenset[str]) -> Masks:
    known = rules()
    on = checked(profiles)
    return Masks(frozenset(p.name for p in contract.PARTS if not any(known[r].profile in on for r in p.rules)))


def masks_for(profiles: set[str] | frozenset[str]) -> Masks:
    """What a profile set does not compare: every part no rule of its profiles fixes."""
    return _masks(frozenset(profiles))


NOTHING_HIDDEN = Masks(frozenset())


def core_masks() -> Masks:
    return masks_for({"core"})


def part_to_blame(e: Any, a: Any, masks: Masks, agree: Agree) -> contract.Part | None:
    """The first part (catalog order) whose masking alone makes ``e`` and ``a`` agree: its
    rules fix the difference. None when no one part explains it."""
    return next((part for part in contract.PARTS if part.blamed and not masks.hides(part.name)
                 and agree(e, a, masks.with_hidden(part.name))), None)


def parts_to_blame(e: Any, a: Any, masks: Masks, agree: Agree) -> list[str]:
    """The rules of ``part_to_blame``, empty when no one part explains the difference."""
    part = part_to_blame(e, a, masks, agree)
    return list(part.rules) if part is not None else []


def within(rule_ids: list[str], profiles: set[str] | frozenset[str]) -> list[str]:
    """The rules of ``rule_ids`` a verdict for ``profiles`` may name (section 2)."""
    known, on = rules(), checked(profiles)
    return [r for r in rule_ids if r not in known or known[r].profile in on]
