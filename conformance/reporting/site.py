"""``dsh-conformance site REPORT... -o DIR``: a static results site, as bowtie.report,
wpt.fyi and test262.fyi are for their specs, made from any number of reports.

What the site holds is worked out here, from the reports alone (``site_pages`` renders it
and has the command):

- the **runs**, one per report, named by its badges' file stem (``badges.badges``);
- the **implementations**: the runs grouped by the implementation's name, its versions in
  release order (semantic versions: a pre-release before its release), and for each two
  consecutive versions the rules whose outcome changed (``run_diff.diff_reports``), each
  with the cases that moved and their replay commands;
- the **rules** of the index and the **cases** of the reports, with each run's outcome.

Reports of another suite version, spec or corpus than the first report's do not compare:
they are shown apart, as a site of their own in a subdirectory, and the front page says why
in one line (``report.differs``, the check ``merge`` refuses shards of different runs with).
A report is input: its text is shown escaped, and nothing is read from a path it names.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from dsh_conformance.reporting.badges import badges
from dsh_conformance.reporting.report import CaseRecord, Report, differs, rule_outcomes
from dsh_conformance.reporting.case_html import replay_command
from dsh_conformance.reporting.run_diff import RunDiff, diff_reports
from dsh_conformance.reporting.scores import RuleCount, Score, rule_counts, scores
from dsh_conformance.spec.rules import PROFILES, rules

# What makes two reports comparable on one site: the suite and spec versions and the corpus.
SAME_SUITE = ("suite", "spec", "corpus")
COLUMNS = [*PROFILES, "all"]
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,119}")


def page_name(text: str) -> str:
    """A file name for a case id (report input): the id itself when it is a plain name, else
    ``_`` and a digest (no plain name starts with ``_``, so the two never meet)."""

    if _SAFE.fullmatch(text) and ".." not in text:
        return text
    return "_" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def version_key(version: str) -> tuple:
    """Release order: numbers as numbers, a pre-release (``-rc.7``) before its release."""
    core, _, pre = version.partition("-")

    def parts(text: str) -> tuple:
        return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.+]", text))

    return (parts(core), 0 if pre else 1, parts(pre))


@dataclass
class Run:
    report: Report
    stem: str  # its badges' file stem, and its name in the site
    name: str  # the implementation's name
    version: str
    scores: dict[str, Score]
    outcomes: dict[str, str]  # rule outcomes
    counts: dict[str, RuleCount]
    cases: dict[str, CaseRecord]
    badges: list[tuple[str, str, Score]]

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}".strip()

    @property
    def unfinished(self) -> str:
        """Why its scores are not the whole run's, or "" (a page says so beside them)."""
        footer = self.report.footer
        if footer is None:
            return "partial report: the run did not finish (no footer)"
        return f"the run stopped early: {footer.stopped}" if footer.stopped else ""

    def replay(self, rec: CaseRecord) -> str:
        return replay_command(self.report, rec)


@dataclass
class RuleChange:
    rule: str
    title: str
    old: str
    new: str
    kind: str
    cases: list[tuple[str, str, str, str]]  # case id, old outcome, new outcome, replay command


@dataclass
class Step:
    """Two consecutive versions of one implementation and what changed between them."""
    old: Run
    new: Run
    diff: RunDiff
    changes: list[RuleChange]


@dataclass
class Implementation:
    name: str
    slug: str
    runs: list[Run]  # in release order
    steps: list[Step] = field(default_factory=list)


@dataclass
class Site:
    runs: list[Run]
    implementations: list[Implementation]
    case_ids: list[str]  # every case of the runs, in the first report's order
    apart: list[tuple[str, "Site"]] = field(default_factory=list)  # why, and the reports shown apart

    def records(self, case_id: str) -> list[tuple[Run, CaseRecord | None]]:
        return [(run, run.cases.get(case_id)) for run in self.runs]

    def citing(self, rule: str) -> list[str]:
        """The cases some run records as citing ``rule`` or blames on it."""
        return [cid for cid in self.case_ids
                if any(rule in rec.rules or rule in rec.failing_rules
                       for _, rec in self.records(cid) if rec is not None)]


def _run(report: Report, stem: str, own: list[tuple[str, str, Score]]) -> Run:
    impl = report.header.implementation
    cases: dict[str, CaseRecord] = {}
    for rec in report.cases:
        cases.setdefault(rec.id, rec)
    return Run(report, stem, str(impl.get("name") or "?"), str(impl.get("version") or ""),
               {s.profile: s for s in scores(report)}, rule_outcomes(report.cases), rule_counts(report.cases),
               cases, own)


def _touches(rule: str, rec: CaseRecord | None) -> bool:
    return rec is not None and (rule in rec.rules or rule in rec.failing_rules)


def _replay(old: Run, new: Run, cid: str) -> str:
    """The replay command of the case in the new version, or in the old one when it is gone."""
    return new.replay(new.cases[cid]) if cid in new.cases else old.replay(old.cases[cid])


def _step(old: Run, new: Run) -> Step:
    d = diff_reports(old.report, new.report)
    moved = {c.what: c for c in d.cases}
    changes = []
    for ch in d.rules:
        # The cases that moved and cite the rule or are blamed on it, in either version (a
        # case now passing carries no failing rules); else, when none moved (the rule's
        # outcome changed with the blame of cases that did not), the new version's cases
        # citing it.
        related = [(cid, c.old, c.new, _replay(old, new, cid)) for cid, c in moved.items()
                   if _touches(ch.what, old.cases.get(cid)) or _touches(ch.what, new.cases.get(cid))]
        if not related:
            related = [(cid, old.cases[cid].outcome.value if cid in old.cases else "(not in old)", rec.outcome.value,
                        new.replay(rec)) for cid, rec in new.cases.items() if _touches(ch.what, rec)]
        changes.append(RuleChange(ch.what, ch.detail, ch.old, ch.new, ch.kind, related))
    return Step(old, new, d, changes)


def build(reports: list[Report]) -> Site:
    """The site of reports that compare (one suite, spec and corpus); others shown apart."""
    first = reports[0]
    together = [r for r in reports if differs(r, first, SAME_SUITE) is None]
    others = [r for r in reports if differs(r, first, SAME_SUITE) is not None]
    stems: dict[int, list[tuple[str, str, Score]]] = {}
    made = badges(together)
    n = 0
    for i, r in enumerate(together):
        count = len(scores(r))
        stems[i] = made[n:n + count]
        n += count
    runs = [_run(r, stems[i][-1][0], stems[i]) for i, r in enumerate(together)]
    by_name: dict[str, list[Run]] = {}
    for run in runs:
        by_name.setdefault(run.name, []).append(run)
    impls = []
    taken: set[str] = set()
    for name, group in by_name.items():
        base = re.sub(r"[^A-Za-z0-9._]+", "-", name).strip("-.")[:80] or "implementation"
        s, k = base, 1
        while s in taken:
            k += 1
            s = f"{base}-{k}"
        taken.add(s)
        group.sort(key=lambda r: (version_key(r.version), r.report.header.started))
        impl = Implementation(name, s, group)
        impl.steps = [_step(a, b) for a, b in zip(group, group[1:])]
        impls.append(impl)
    case_ids: list[str] = []
    seen: set[str] = set()
    for run in runs:
        for cid in run.cases:
            if cid not in seen:
                seen.add(cid)
                case_ids.append(cid)
    site = Site(runs, impls, case_ids)
    while others:
        why = differs(others[0], first, SAME_SUITE)
        assert why is not None
        group = [r for r in others if differs(r, others[0], SAME_SUITE) is None]
        others = [r for r in others if differs(r, others[0], SAME_SUITE) is not None]
        site.apart.append((why, build(group)))
    return site


def rule_title(rule: str) -> str:
    known = rules().get(rule)
    return known.title if known else ""


__all__ = ["Site", "Run", "Implementation", "Step", "RuleChange", "build", "page_name",
           "version_key", "rule_title", "SAME_SUITE", "COLUMNS"]
