"""What the judge works with and finds, as named types: an observation as compared
(``Compared``: the item, the oracle's ``Blame`` for it, its position in its trace), the
oracle's ``Reason``s (the decisions it took for a call without a probe to show them), and a
``Divergence`` (where two traces part, the rules to blame, and why)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from dsh_conformance.judge import masks as masking, value_diff
from dsh_conformance.spec.rules import rules


class Reason(NamedTuple):
    """A decision the oracle took for a call since its previous portable observation."""
    stage: str
    what: str
    rules: list[str]


class Blame(NamedTuple):
    """What an observation's divergence is put down to: the rules the observation witnesses;
    when it carries the call's outcome, the rules of the oracle's routing of it (else None);
    the routing itself; the oracle's reasons just before it."""
    rules: list[str]
    outcome: list[str] | None
    routing: list[str]
    reasons: list[Reason]


class Compared(NamedTuple):
    """An observation as compared: the item (stage, what, who, value), its blame, and its
    position in its trace (the earlier of two lanes' divergences is reported first)."""
    item: dict[str, Any]
    blame: Blame
    at: int


class Finding(NamedTuple):
    """A blame helper's answer: the rules it puts a divergence down to, and why, in words."""
    rules: list[str]
    reason: str


class Warnings(NamedTuple):
    """The warnings a profile set compares, both sides, and the rules they are put down to."""
    expected: list[str]
    actual: list[str]
    rules: list[str]


@dataclass(frozen=True)
class Divergence:
    """Where two traces first part: ``where`` is a readable place such as
    ``observations[c1][3]``, ``events[5]``, ``results[c1]`` or ``warnings``. Items are
    JSON objects (or the warnings list); None stands for "no item on this side"."""

    where: str
    expected: Any
    actual: Any
    rules: list[str] = field(default_factory=list)
    at: list[str | int] | None = None  # the path inside the items where they first disagree (value_diff)
    reason: str = ""  # the blame's reason, one line
    contract: str | None = None  # the actual item breaks the observation catalog: where and how
    # Of ``rules``, those blamed only because the call was routed otherwise than the oracle's
    # routing rules say (P2's table, the rule of a stage that ran on one side only): they
    # follow from whichever routing rule was broken (``running.explained`` reads them so).
    follows: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        doc = {"where": self.where, "expected": self.expected, "actual": self.actual, "rules": self.rules}
        if self.at is not None:
            doc["at"] = self.at
        if self.reason:
            doc["reason"] = self.reason
        if self.contract is not None:
            doc["contract"] = self.contract
        return doc

    def located(self, same: Callable[[Any, Any], bool]) -> Divergence:
        """This divergence with ``at`` found by the comparison that decided it."""
        return replace(self, at=value_diff.first_difference(self.expected, self.actual, same))

    def within(self, profiles: set[str]) -> Divergence:
        """This divergence blamed only on rules of the checked profiles (section 2: a verdict
        for a profile set depends only on its rules; nothing left: the case's rules), its
        reason saying what those rules are about (issue 39: words a port author can act on)."""
        kept = masking.within(self.rules, profiles)
        return replace(self, rules=kept, reason=self.reason + _what_rules_say(kept) if self.reason else self.reason)

    def describe(self) -> str:
        found = value_diff.locate(self.expected, self.actual, self.at)
        blame = (f"contract error: {self.contract}" if self.contract is not None
                 else f"rules {', '.join(self.rules) or '-'}")
        why = [f"  why:      {self.reason}"] if self.reason else []
        return "\n".join([f"first divergence at {self.where} ({blame}):", *found.lines(), *why])


def _what_rules_say(rule_ids: list[str]) -> str:
    """`` (P93: called once, on every outcome; ...)``: the titles of the first blamed rules."""
    known = rules()
    said = [f"{r}: {known[r].title[:1].lower()}{known[r].title[1:]}" for r in rule_ids[:3] if r in known]
    return f" ({'; '.join(said)})" if said else ""
