"""What changed between two runs: ``dsh-conformance diff OLD.jsonl NEW.jsonl``.

A maintainer runs the suite on the release, then on the working tree, and asks what the
change did. Two reports are compared:

- per rule and per case, the outcomes that changed, regressions first. Outcomes are ranked
  ``pass`` > not judged (``skip``, ``not-scored``, ``not-run``, a rule's ``inconclusive`` or
  ``no case``) > known failures (``expected-fail``, ``expected-error``) > failures
  (``fail``, ``error``, ``timeout``, ``invalid``); a move down is a regression, a move up an
  improvement, a move within a rank (``fail`` to ``error``) a change. A move between not
  judged and a known failure is a change too: ``not-scored -> expected-fail`` is a release
  that gained a feature and fails there as its expectations say, not a regression (nothing
  passed before; issue 44), and the way back is no improvement. A failing case that
  only the new run has is a regression too (a generated counterexample, say);
- the cases whose normalized trace changed where the outcome did not (the ``trace_digest``
  of each case record: two passing runs whose traces differ, or an expected failure that
  now fails differently, show here);
- the divergences (first divergences and broken invariants of failing cases) that are new
  in the new run, and those that vanished.

For a maintainer the text view leads with what to act on (``conformance.diff_groups``): the
packages that differ between the runs, the regressing cases grouped by first divergence (one
group per root cause, with its rules, its count and one replay command), the rules now
failing, and the side effects (rules only no longer judged) apart; ``--full`` adds the case
by case lists. The generated half of each run is one case, ``generated (seed S)``.

Rendered as text, Markdown or JSON. ``diff`` exits 1 when anything regressed, else 0.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any

from dsh_conformance.kit import jsontext

from dsh_conformance.reporting.diff_groups import (
    Group,
    blame_order,
    generated_key,
    generated_verdict,
    group_regressions,
    newly_failing,
    package_changes,
    side_effects,
    stage_differs,
    tree_line,
)
from dsh_conformance.judge import value_diff
from dsh_conformance.textio.markup import md_code, md_text
from dsh_conformance.textio.outputs import check_distinct, check_writable, write_atomic
from dsh_conformance.reporting.report import (
    INCONCLUSIVE,
    CaseRecord,
    Report,
    partial,
    read_report,
    refuse_partial,
    rule_outcomes,
)
from dsh_conformance.reporting.case_html import replay_command
from dsh_conformance.spec.rules import rules
from dsh_conformance.textio.terminal import json_visible, one_line, visible

NO_CASE = "no case"
UNJUDGED, KNOWN = 2, 1  # the ranks of not judged and of a known failure
RANK = {"pass": 3, "skip": UNJUDGED, "not-scored": UNJUDGED, "not-run": UNJUDGED, INCONCLUSIVE: UNJUDGED,
        NO_CASE: UNJUDGED, "expected-fail": KNOWN, "expected-error": KNOWN, "fail": 0, "error": 0, "timeout": 0,
        "invalid": 0}


def kind(old: str, new: str) -> str:
    """``regression``, ``improvement`` or ``change`` for an outcome moving from old to new."""
    a, b = RANK.get(old, 2), RANK.get(new, 2)
    if {a, b} == {KNOWN, UNJUDGED}:  # newly judged as expected, or no longer judged: neither better nor worse
        return "change"
    return "regression" if b < a else "improvement" if b > a else "change"


_ORDER = {"regression": 0, "improvement": 1, "change": 2}


@dataclass
class Change:
    what: str  # a rule id or a case id
    old: str
    new: str
    kind: str
    detail: str = ""  # a rule's title; for a case, what its worse outcome rests on (divergence or message)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.what, "old": self.old, "new": self.new, "kind": self.kind, "detail": self.detail}


@dataclass
class Divergence:
    case: str
    where: str  # a trace place, or "invariant <rule>"
    rules: list[str]
    expected: Any
    actual: Any
    at: list[str | int] | None = None  # where inside the items they differ, as the run recorded it

    def key(self) -> str:
        return jsontext.dumps([self.where, self.rules, self.expected, self.actual], sort_keys=True)

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "where": self.where, "rules": self.rules, "expected": self.expected,
                "actual": self.actual, "differs_at": value_diff.locate(self.expected, self.actual, self.at).at}

    def short(self, limit: int = 160) -> str:
        if self.where.startswith("invariant"):
            text = "(nothing)" if self.actual is None else str(self.actual)
            return f"{self.where}: {text if len(text) <= limit else text[:limit] + '...'}"
        found = value_diff.locate(self.expected, self.actual, self.at)
        expected, actual = found.values_at(limit)
        rules = blame_order(self.rules, stage_differs(found.at, value_diff.value_at(self.expected, found.path),
                                                      value_diff.value_at(self.actual, found.path)))
        return (f"at {self.where}{found.at} (rules {', '.join(rules) or '-'}): expected {expected}, "
                f"actual {actual}")


def first_difference(a: Any, b: Any) -> tuple[str, Any, Any]:
    """Where inside two JSON values they first differ (a path below them), and the values
    there: ``value_diff``'s path, in the shape ``diff_groups.Locate`` takes."""
    path = value_diff.first_difference(a, b)
    e, f = value_diff.value_at(a, path), value_diff.value_at(b, path)
    return value_diff.path_text(path), None if e is value_diff.MISSING else e, None if f is value_diff.MISSING else f


def divergences_of(c: CaseRecord) -> list[Divergence]:
    out = []
    if c.divergence:
        d = c.divergence
        out.append(Divergence(c.id, str(d.get("where")), list(d.get("rules") or []), d.get("expected"), d.get("actual"),
                              d.get("at")))
    for v in c.violations:
        out.append(Divergence(c.id, f"invariant {v.get('rule')}", [v.get("rule", "")], None, v.get("message")))
    return out


@dataclass
class RunDiff:
    old: Report
    new: Report
    rules: list[Change] = field(default_factory=list)
    cases: list[Change] = field(default_factory=list)
    traces: list[Change] = field(default_factory=list)  # old/new are the digests; detail the outcome
    new_divergences: list[Divergence] = field(default_factory=list)
    vanished_divergences: list[Divergence] = field(default_factory=list)
    only_old: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)  # the regressing cases by root cause
    side_effects: list[Change] = field(default_factory=list)  # rules only gone from pass to not judged
    packages: list[str] = field(default_factory=list)  # lines: the packages that differ

    @property
    def regressions(self) -> int:
        return sum(c.kind == "regression" for c in (*self.rules, *self.cases))

    def counts(self) -> dict[str, int]:
        changes = (*self.rules, *self.cases)
        return {"regressions": self.regressions - len(self.side_effects), "side effects": len(self.side_effects),
                "groups": len(self.groups), "improvements": sum(c.kind == "improvement" for c in changes),
                "changes": sum(c.kind == "change" for c in changes), "rules changed": len(self.rules),
                "cases changed": len(self.cases), "traces changed": len(self.traces),
                "new divergences": len(self.new_divergences), "vanished divergences": len(self.vanished_divergences)}


def _name(r: Report) -> str:
    impl = r.header.implementation
    source = f" ({impl['source']})" if impl.get("source") else ""
    return f"{r.name}{source}"


def diff_reports(old: Report, new: Report, allow_partial: bool = False) -> RunDiff:
    """What changed from ``old`` to ``new``; PartialReport if either is partial (a killed
    run's cases never reached would read as gone: improvements), unless ``allow_partial``."""
    if not allow_partial:
        for r in (old, new):
            refuse_partial(r, "a diff against it would count the cases it lacks as changes")
    out = RunDiff(old, new)
    for what, a, b in (("suite", old.header.suite, new.header.suite), ("spec", old.header.spec, new.header.spec)):
        if a != b:
            out.notes.append(f"the two runs were made by different {what} versions ({a} and {b}): outcomes compare, "
                             "trace digests may differ for that reason alone")
    if (old.header.seed, old.header.examples) != (new.header.seed, new.header.examples):
        out.notes.append(f"the generated scenarios differ (seed {old.header.seed}, {old.header.examples} examples; "
                         f"seed {new.header.seed}, {new.header.examples} examples)")
    for r, label in ((old, "OLD"), (new, "NEW")):
        if why := partial(r):  # only with allow_partial: the verdict is not that of whole runs
            out.notes.append(f"{label} ({r.path}) is a partial report: {why}")

    titles = {r.id: r.title for r in rules().values()}
    a_rules, b_rules = rule_outcomes(old.cases), rule_outcomes(new.cases)
    order = {rid: n for n, rid in enumerate(titles)}
    for rid in sorted(set(a_rules) | set(b_rules), key=lambda r: order.get(r, len(order))):
        a, b = a_rules.get(rid, NO_CASE), b_rules.get(rid, NO_CASE)
        if a != b:
            out.rules.append(Change(rid, a, b, kind(a, b), titles.get(rid, "")))

    out.packages = package_changes(old, new)
    a_cases, b_cases = _by_id(old), _by_id(new)
    failing: list[tuple[CaseRecord, str, str]] = []
    for cid, b in b_cases.items():
        a = a_cases.get(cid)
        if a is None:
            out.only_new.append(cid)
            if RANK.get(b.outcome.value, 2) == 0:
                out.cases.append(Change(cid, "(not in OLD)", b.outcome.value, "regression", _detail(b)))
                failing.append((b, f"(not in OLD) -> {b.outcome.value}", _detail(b)))
            out.new_divergences += divergences_of(b)
            continue
        if a.outcome != b.outcome:
            move = kind(a.outcome.value, b.outcome.value)
            detail = _detail(b if RANK.get(b.outcome.value, 2) < 3 else a)
            fresh = newly_failing(a, b) if RANK.get(a.outcome.value, 2) == 1 and RANK.get(b.outcome.value, 2) == 0 else []
            if fresh:  # expected-fail -> fail: what it fails at now, not the known divergence
                detail = f"now fails {', '.join(fresh)}: {detail}"
            if b.id != cid:  # the generated case: its counterexample's content id
                detail = f"counterexample {b.id}: {detail}"
            out.cases.append(Change(cid, a.outcome.value, b.outcome.value, move, detail))
            if move == "regression" and RANK.get(b.outcome.value, 2) < 2:
                failing.append((b, f"{a.outcome.value} -> {b.outcome.value}", detail))
        elif a.trace_digest and b.trace_digest and a.trace_digest != b.trace_digest:
            out.traces.append(Change(cid, a.trace_digest, b.trace_digest, "change", a.outcome.value))
        old_div = {d.key(): d for d in divergences_of(a)}
        new_div = {d.key(): d for d in divergences_of(b)}
        out.new_divergences += [d for k, d in new_div.items() if k not in old_div]
        out.vanished_divergences += [d for k, d in old_div.items() if k not in new_div]
    for cid, a in a_cases.items():
        if cid not in b_cases:
            out.only_old.append(cid)
            if RANK.get(a.outcome.value, 2) == 0:
                out.cases.append(Change(cid, a.outcome.value, "(not in NEW)", "improvement", _detail(a)))
            out.vanished_divergences += divergences_of(a)
    out.groups = group_regressions(failing, first_difference)
    out.side_effects = side_effects(out.rules)
    out.rules.sort(key=lambda c: _ORDER[c.kind])  # stable: the spec's order within a kind
    out.cases.sort(key=lambda c: (_ORDER[c.kind], c.what))
    out.traces.sort(key=lambda c: c.what)
    return out


def _by_id(r: Report) -> dict[str, CaseRecord]:
    """A report's cases by id; the property run's verdict under ``generated (seed S)``, the
    same in both runs whether it passed (``generated-seed-S``) or shrank a counterexample."""
    verdict = generated_verdict(r)
    return {(generated_key(r) if c is verdict else c.id): c for c in r.cases}


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _detail(c: CaseRecord) -> str:
    """What a case's outcome rests on, in a line: its first divergence, else its message."""
    found = divergences_of(c)
    return found[0].short() if found else _first_line(c.message)


# ------------------------------------------------------------------ views

def _summary(d: RunDiff) -> str:
    c = d.counts()
    cases = sum(ch.kind == "regression" for ch in d.cases)
    parts = f" ({cases} cases in {c['groups']} groups, {c['regressions'] - cases} rules; {c['side effects']} side " \
            "effects apart)" if c["regressions"] or c["side effects"] else ""
    return (f"{c['regressions']} regressions{parts}, {c['improvements']} improvements, {c['changes']} other changes; "
            f"{c['traces changed']} traces changed with the same outcome; "
            f"{c['new divergences']} new and {c['vanished divergences']} vanished divergences")


def _replay(d: RunDiff, g: Group) -> str:
    return replay_command(d.new, g.example)


def _group_lines(d: RunDiff, n: int, g: Group) -> list[str]:
    ids = [c.id for c in g.cases]
    shown = ", ".join(ids[:4]) + (f", ... (+{len(ids) - 4}, --full)" if len(ids) > 4 else "")
    moves = sorted(set(g.moves.values()))
    return [f"  [{n}] {len(ids)} case{'s' if len(ids) != 1 else ''} ({', '.join(moves)}), rules "
            f"{', '.join(g.rules) or '-'}: at {g.where}",
            f"      {g.example.id} {g.details.get(g.example.id, '')[:220]}",
            f"      replay: {_replay(d, g)}",
            f"      cases: {shown}"]


def render_text(d: RunDiff, full: bool = False) -> str:
    """The diff for a maintainer: what to act on first, in a screen; ``full`` adds the case by
    case lists."""
    lines = [f"OLD {one_line(_name(d.old))}  ({d.old.path}, {len(d.old.cases)} cases)",
             f"NEW {one_line(_name(d.new))}  ({d.new.path}, {len(d.new.cases)} cases)"]
    lines += [f"    {t}" for t in (tree_line(d.old), tree_line(d.new)) if t]
    lines.append("")
    if d.packages:
        shown = d.packages if full else package_changes(d.old, d.new, most=6)
        lines += ["Packages that differ:"] + [f"  {ln}" for ln in shown] + [""]
    lines += [f"note: {n}" for n in d.notes] + ([""] if d.notes else [])
    lines.append(_summary(d))
    if d.groups:
        count = sum(len(g.cases) for g in d.groups)
        lines += ["", f"Regressions by first divergence ({count} case{'s' if count != 1 else ''}, {len(d.groups)} root "
                      f"cause{'s' if len(d.groups) != 1 else ''}):"]
        for n, g in enumerate(d.groups, 1):
            lines += _group_lines(d, n, g)
    side = {ch.what for ch in d.side_effects}
    failing_rules = [ch for ch in d.rules if ch.kind == "regression" and ch.what not in side]
    if failing_rules:
        lines += ["", "Rules that regressed: " + ", ".join(f"{ch.what} ({ch.old} -> {ch.new})" for ch in failing_rules)]
    if d.side_effects:
        n = len(d.side_effects)
        lines += ["", f"Side effects, not regressions of their own ({n} rule{'s' if n != 1 else ''} only no longer judged: "
                      "the cases citing them fail first at a rule above): "
                      + ", ".join(f"{ch.what} -> {ch.new}" for ch in d.side_effects)]
    others = [ch for ch in d.rules if ch.kind != "regression"]
    if others:
        lines += ["", "Rules that improved or changed:"]
        lines += [f"  {ch.kind:<11} {ch.what:<5} {ch.old:>14} -> {ch.new:<14} {ch.detail}" for ch in others]
    if full:
        lines += _full_lines(d)
    else:
        rest = [ch for ch in d.cases if ch.kind != "regression"]
        if rest:
            lines += ["", "Cases that improved or changed:"]
            lines += [f"  {ch.kind:<11} {ch.what}: {ch.old} -> {ch.new}" for ch in rest[:10]]
            lines += [f"  ... and {len(rest) - 10} more (--full)"] if len(rest) > 10 else []
        if d.traces:
            lines += ["", f"{len(d.traces)} cases whose trace changed with the same outcome: "
                          + ", ".join(ch.what for ch in d.traces[:8]) + (" ... (--full)" if len(d.traces) > 8 else "")]
    return "\n".join(lines) + "\n"


def _full_lines(d: RunDiff) -> list[str]:
    lines = []
    if d.rules:
        lines += ["", "Rules whose outcome changed:"]
        lines += [f"  {ch.kind:<11} {ch.what:<5} {ch.old:>14} -> {ch.new:<14} {ch.detail}" for ch in d.rules]
    if d.cases:
        lines += ["", "Cases whose outcome changed:"]
        for ch in d.cases:
            lines.append(f"  {ch.kind:<11} {ch.what}: {ch.old} -> {ch.new}")
            if ch.detail:
                lines.append(f"              {ch.detail[:200]}")
    if d.traces:
        lines += ["", "Cases whose trace changed, with the same outcome:"]
        lines += [f"  {ch.what} ({ch.detail}): {ch.old} -> {ch.new}" for ch in d.traces]
    for title, found in (("New divergences", d.new_divergences), ("Vanished divergences", d.vanished_divergences)):
        if found:
            lines += ["", f"{title}:"]
            lines += [f"  {x.case} {x.short()}" for x in found]
    for title, ids in (("Cases only in OLD", d.only_old), ("Cases only in NEW", d.only_new)):
        if ids:
            lines += ["", f"{title}: {', '.join(ids)}"]
    return lines


def _md(text: str) -> str:
    return md_text(text)  # a report's text stays text on the page (conformance.markup)


def render_markdown(d: RunDiff) -> str:
    c = d.counts()
    out = ["# What changed between two runs", "",
           f"- OLD: {_md(_name(d.old))} ({md_code(d.old.path)}, {len(d.old.cases)} cases)",
           f"- NEW: {_md(_name(d.new))} ({md_code(d.new.path)}, {len(d.new.cases)} cases)", ""]
    out += [f"> note: {_md(n)}" for n in d.notes] + ([""] if d.notes else [])
    out[-1:-1] = [f"- {_md(t)}" for t in (tree_line(d.old), tree_line(d.new)) if t]
    if d.packages:
        out += ["Packages that differ:", ""] + [f"- {_md(ln)}" for ln in d.packages] + [""]
    if d.groups:
        out += ["## Regressions by first divergence", "", "| | cases | rules | where | replay |", "|---|---|---|---|---|"]
        out += [f"| {n} | {len(g.cases)} | {', '.join(g.rules)} | {md_code(g.where)} | {md_code(_replay(d, g))} |"
                for n, g in enumerate(d.groups, 1)] + [""]
    if d.side_effects:
        out += [f"Side effects (rules only no longer judged): {', '.join(ch.what for ch in d.side_effects)}", ""]
    out.append(f"**{c['regressions']} regressions**, {c['improvements']} improvements, {c['changes']} other changes; "
               f"{c['traces changed']} traces changed with the same outcome; {c['new divergences']} new and "
               f"{c['vanished divergences']} vanished divergences.")
    if d.rules:
        out += ["", "## Rules whose outcome changed", "", "| | rule | title | OLD | NEW |", "|---|---|---|---|---|"]
        out += [f"| {ch.kind} | {ch.what} | {_md(ch.detail)} | {ch.old} | {ch.new} |" for ch in d.rules]
    if d.cases:
        out += ["", "## Cases whose outcome changed", "", "| | case | OLD | NEW | detail |", "|---|---|---|---|---|"]
        out += [f"| {ch.kind} | {md_code(ch.what)} | {ch.old} | {ch.new} | {_md(ch.detail[:200])} |" for ch in d.cases]
    if d.traces:
        out += ["", "## Cases whose trace changed, with the same outcome", "", "| case | outcome | OLD | NEW |",
                "|---|---|---|---|"]
        out += [f"| {md_code(ch.what)} | {_md(ch.detail)} | {md_code(ch.old)} | {md_code(ch.new)} |" for ch in d.traces]
    for title, found in (("New divergences", d.new_divergences), ("Vanished divergences", d.vanished_divergences)):
        if found:
            out += ["", f"## {title}", ""]
            out += [f"- {md_code(x.case)} {_md(x.short())}" for x in found]
    for title, ids in (("Cases only in OLD", d.only_old), ("Cases only in NEW", d.only_new)):
        if ids:
            out += ["", f"## {title}", "", ", ".join(md_code(i) for i in ids)]
    return "\n".join(out) + "\n"


def render_json(d: RunDiff) -> str:
    doc = {
        "old": {"path": d.old.path, "implementation": d.old.header.implementation, "cases": len(d.old.cases)},
        "new": {"path": d.new.path, "implementation": d.new.header.implementation, "cases": len(d.new.cases)},
        "notes": d.notes,
        "counts": d.counts(),
        "packages": d.packages,
        "groups": [g.to_json(_replay(d, g)) for g in d.groups],
        "sideEffects": [c.to_json() for c in d.side_effects],
        "rules": [c.to_json() for c in d.rules],
        "cases": [c.to_json() for c in d.cases],
        "traces": [{"id": c.what, "outcome": c.detail, "old": c.old, "new": c.new} for c in d.traces],
        "newDivergences": [x.to_json() for x in d.new_divergences],
        "vanishedDivergences": [x.to_json() for x in d.vanished_divergences],
        "onlyOld": d.only_old,
        "onlyNew": d.only_new,
    }
    return json_visible(jsontext.dumps(doc, indent=1)) + "\n"  # a terminal may show it: no raw control


def cmd_diff(args: argparse.Namespace) -> int:
    if args.output:
        check_writable(args.output, "--output")
        check_distinct(args.output, "--output", [args.old, args.new])
    d = diff_reports(read_report(args.old), read_report(args.new), args.allow_partial)
    text = visible(render_text(d, args.full)) if args.format == "text" else \
        {"md": render_markdown, "json": render_json}[args.format](d)
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 1 if d.regressions else 0


__all__ = ["RunDiff", "diff_reports", "render_text", "render_markdown", "render_json", "kind", "RANK"]
