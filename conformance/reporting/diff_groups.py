"""What a maintainer reads first in a diff: regressions grouped by root cause.

One planted bug in the pipeline fails a hundred cases at one place; listed case by case it
is a page of noise. So the regressing cases are grouped by their **first divergence**: the
place in the trace where the two traces part, with the call ids and step indexes taken out
(``observations[c1][9].value.frozen`` and ``observations[c2][4].value.frozen`` are one
place, ``observations[*][*].value.frozen``), and the rules that divergence is put down to.
A case that fails on broken invariants only is grouped by the first of them. Each group
shows its rules, how many cases, the case its line comes from (the one whose scenario is
smallest) and one replay command.

Beside the groups:

- **side effects**: rules that only went from ``pass`` to not judged (``inconclusive``, ``no
  case``) are not regressions of their own: the cases citing them now fail at another rule
  first. They are listed apart, in a line;
- **newly failing rules** of a case that went ``expected-fail`` -> ``fail``: the expectation
  was for a known divergence; what the case fails at now is named (``now fails P99``);
- **the generated half** of a run (the property run: ``generated-seed-<seed>`` when it
  passed, the shrunk counterexample's content id ``prop-...`` when it did not) is one case
  across the two runs, keyed ``generated (seed S)``;
- **the stage-order rule first**: when two trace items part at their stage (the trace has
  ``pre`` where ``guard`` was expected), the order of the stages is what differs, and P1
  leads the divergence's rules when it is among them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dsh_conformance.reporting.report import CaseRecord, Report

STAGE_ORDER = "P1"
_IDS = re.compile(r"\[[^\]]*\]")
NOT_JUDGED = {"skip", "not-scored", "not-run", "inconclusive", "no case"}


def blame_order(rules: list[str], stage_differs: bool = True) -> list[str]:
    """The rules of a divergence, P1 first when the order of the stages is what differs
    (the rest as given)."""
    if not stage_differs or STAGE_ORDER not in rules:
        return list(rules)
    return [STAGE_ORDER, *(r for r in rules if r != STAGE_ORDER)]


def stage_differs(below: str, expected: Any, actual: Any) -> bool:
    """Whether two trace items part at their stage (``pre`` where ``guard`` came): the order
    of the stages is what differs, not a value inside one."""
    if below.endswith(".stage"):
        return True
    return isinstance(expected, dict) and isinstance(actual, dict) and expected.get("stage") != actual.get("stage")


def place(where: str) -> str:
    """A trace place without its call ids and indexes: the same place in any case."""
    return _IDS.sub("[*]", where)


Locate = Callable[[Any, Any], tuple[str, Any, Any]]  # where inside two values they part (run_diff.first_difference)


def root_cause(c: CaseRecord, locate: Locate) -> tuple[str, tuple[str, ...]]:
    """What a failing case's failure rests on: (a place, its rules)."""
    if c.divergence:
        d = c.divergence
        below, e, a = locate(d.get("expected"), d.get("actual"))
        return place(str(d.get("where")) + below), tuple(blame_order(list(d.get("rules") or []),
                                                                     stage_differs(below, e, a)))
    if c.violations:
        rule = str(c.violations[0].get("rule", ""))
        return f"invariant {rule}", (rule,)
    return f"no divergence: {(c.message or c.outcome.value).splitlines()[0][:80]}", tuple(c.failing_rules)


def _size(c: CaseRecord) -> int:
    return len(json.dumps(c.scenario, sort_keys=True)) if c.scenario else 0


@dataclass
class Group:
    """The regressing cases sharing one root cause."""

    where: str
    rules: list[str]
    cases: list[CaseRecord] = field(default_factory=list)
    moves: dict[str, str] = field(default_factory=dict)  # case id -> "old -> new"
    details: dict[str, str] = field(default_factory=dict)  # case id -> what its new outcome rests on

    @property
    def example(self) -> CaseRecord:
        return min(self.cases, key=lambda c: (_size(c), c.id))

    def to_json(self, replay: str) -> dict[str, Any]:
        return {"where": self.where, "rules": self.rules, "cases": [c.id for c in self.cases],
                "example": self.example.id, "detail": self.details.get(self.example.id, ""), "replay": replay}


def group_regressions(failing: list[tuple[CaseRecord, str, str]], locate: Locate) -> list[Group]:
    """Group (new case record, "old -> new", detail) triples by root cause, biggest group
    first, then a group about the stage order, then by place."""
    groups: dict[tuple[str, tuple[str, ...]], Group] = {}
    for rec, move, detail in failing:
        where, rules = root_cause(rec, locate)
        g = groups.setdefault((where, rules), Group(where, list(rules)))
        g.cases.append(rec)
        g.moves[rec.id] = move
        g.details[rec.id] = detail
    return sorted(groups.values(), key=lambda g: (-len(g.cases), STAGE_ORDER not in g.rules, g.where))


def newly_failing(old: CaseRecord, new: CaseRecord) -> list[str]:
    """The rules ``new`` fails at that ``old``, a known failure, did not."""
    before = set(old.failing_rules) | {d for d in (old.divergence or {}).get("rules", [])}
    now = new.failing_rules or list((new.divergence or {}).get("rules") or [])
    return [r for r in now if r not in before]


def generated_key(report: Report) -> str:
    return f"generated (seed {report.header.seed})"


def generated_verdict(report: Report) -> CaseRecord | None:
    """The property run's verdict: the last property record (the drawn scenarios that errored
    come before it)."""
    found = [c for c in report.cases if c.source == "property"]
    return found[-1] if found else None


def side_effects(rule_changes: list[Any]) -> list[Any]:
    """Rule changes that are only a move from pass to not judged."""
    return [ch for ch in rule_changes if ch.old == "pass" and ch.new in NOT_JUDGED]


def package_changes(old: Report, new: Report, most: int | None = None) -> list[str]:
    """The packages that differ between two runs, in lines: versions grouped by their move
    (at most ``most`` names a line, then how many more), then the packages whose version is
    the same and whose built code is not."""
    a = _packages(old)
    b = _packages(new)
    if not a and not b:
        return []
    by_move: dict[tuple[str, str], list[str]] = {}
    same: dict[tuple[str, str], int] = {}
    code = []
    for name in sorted(set(a) | set(b)):
        va, vb = (a.get(name) or {}).get("version"), (b.get(name) or {}).get("version")
        short = name.removeprefix("@deepseek-ai/")
        if va != vb:
            move = (va or "absent", vb or "absent")
            by_move.setdefault(move, []).append(short)
            da, db = (a.get(name) or {}).get("digest"), (b.get(name) or {}).get("digest")
            same[move] = same.get(move, 0) + (da is not None and da == db)
        elif (a.get(name) or {}).get("digest") != (b.get(name) or {}).get("digest") and name in a and name in b:
            code.append(f"{short} {vb}: built code {a[name].get('digest')} -> {b[name].get('digest')}")
    def listed(names: list[str]) -> str:
        if most is None or len(names) <= most:
            return ", ".join(names)
        return f"{len(names)} packages: {', '.join(names[:most])}, ... (+{len(names) - most}, --full)"
    def alike(move: tuple[str, str]) -> str:  # a version bump over the same built code is no change of code
        n = same.get(move, 0)
        return "" if not n else " (the same built code)" if n == len(by_move[move]) else f" ({n} with the same built code)"
    lines = [f"{va} -> {vb}: {listed(names)}{alike((va, vb))}"
             for (va, vb), names in sorted(by_move.items(), key=lambda kv: kv[1])]
    return lines + code


def _packages(r: Report) -> dict[str, Any]:
    build = r.header.implementation.get("build") or {}
    return dict(build.get("packages") or {})


def tree_line(r: Report) -> str | None:
    """The tree a run was made on: path, commit, dirty."""
    build = r.header.implementation.get("build") or {}
    if "commit" not in build:
        return None
    commit = (build.get("commit") or "no git")[:10]
    dirty = "dirty: " + ", ".join(build.get("changed") or []) if build.get("dirty") else "clean"
    return f"tree {build.get('path')} at {commit} ({dirty})"


__all__ = ["Group", "blame_order", "stage_differs", "generated_key", "generated_verdict", "group_regressions", "newly_failing",
           "package_changes", "place", "root_cause", "side_effects", "tree_line"]
