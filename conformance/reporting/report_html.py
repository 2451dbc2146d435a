"""The HTML report: one self-contained page a person can open anywhere.

One ``.html`` file with its CSS and a little JavaScript inline and nothing fetched, so it
works from ``file://``, served statically, or attached to a CI run. For one report or
several side by side (a comparison across implementations or versions) it shows:

- a summary per implementation: identity (adapter included), suite and spec version,
  seed and examples, counts per outcome, the score per profile (``conformance.scores``)
  and the run time;
- the rule matrix (rules x implementations) grouped by profile and spec section, each
  rule's title linking to its statement (embedded: ``conformance.rule_text``), filterable
  by outcome and profile, expected failures with their reason;
- for each failing or expected-failing cell, a detail view (a dialog, opened by a click or
  by the page's ``#d-...`` fragment) with each of its cases: title and rules, the expected
  (oracle) and actual traces side by side, lane by lane (``conformance.trace_lanes``),
  with the first divergence highlighted and every lane's other divergences listed, the
  replay command, and the scenario (inline and downloadable for a generated case).

The oracle's trace is recomputed from the case (``conformance.evidence``): from the
embedded case, or, for a corpus case, from this suite's own corpus when it holds the same
case (by id, checked by digest). A report is input, not a pointer to files: nothing is read
from a path the report names.
The page holds no path of the machine that rendered it, and no time of its own: the
same reports give the same bytes.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from dsh_conformance.kit import jsontext
from dsh_conformance.reporting import skips
from dsh_conformance.reporting.case_html import case_html, case_view, esc, replay_command
from dsh_conformance.reporting.report import BROKEN, INCONCLUSIVE, Outcome, Report, rule_outcomes
from dsh_conformance.reporting.report_assets import CSS, JS
from dsh_conformance.reporting.report_formats import matrix
from dsh_conformance.reporting.scores import LEGEND, SCORE, RuleCount, case_totals, outcome_counts, scores
from dsh_conformance.spec.rule_text import section_of, statements
from dsh_conformance.spec.rules import PROFILES, rules


FAILING = {Outcome.FAIL.value, *(o.value for o in BROKEN)}


SHOWN = FAILING | {Outcome.XFAIL.value, Outcome.XERROR.value}  # cells that open a detail view


def _detail(report: Report, index: int, rule: dict[str, Any], cell: dict[str, Any], md: MarkdownIt) -> str:
    """The template of one cell's detail view."""
    key = f"d-{index}-{rule['rule']}"
    records = {c.id: c for c in report.cases}
    cases = [records[c["id"]] for c in cell["cases"] if c["id"] in records]
    st = statements().get(rule["rule"])
    head = (f'<header><h2><a href="#rule-{esc(rule["rule"])}" class="close-on-nav">{esc(rule["rule"])}</a> '
            f"{esc(rule['title'])}</h2><p>{esc(report.name)}: "
            f'<span class="badge {esc(cell["outcome"])}">{esc(cell["outcome"])}</span> '
            f"{esc(_words(cell))}</p></header>")
    statement = (f'<details class="statement"><summary>Statement of {esc(rule["rule"])}</summary>'
                 f"{md.render(st.text)}</details>") if st else ""
    nav = ""
    if len(cases) > 1:
        nav = '<nav class="case-list">' + " ".join(
            f'<a href="#{key}-c{n}" data-case="{key}-c{n}"><code>{esc(c.id)}</code></a>' for n, c in enumerate(cases)) + "</nav>"
    body = "".join(case_html(report, c, f"{key}-c{n}", n == 0) for n, c in enumerate(cases))
    bar = f"{rule['rule']} {rule['title']}: {report.name}"
    return f'<template id="{key}" data-title="{esc(bar)}">{head}{statement}{nav}{body}</template>'


def _run_time(report: Report) -> str:
    try:
        t0 = datetime.strptime(report.header.started, "%Y-%m-%dT%H:%M:%SZ")
        t1 = datetime.strptime(report.footer.finished, "%Y-%m-%dT%H:%M:%SZ") if report.footer else None
    except ValueError:
        t1 = None
    if t1 is not None:
        seconds = (t1 - t0).total_seconds()
        return f"{seconds:.0f} s" if seconds >= 1 else "under 1 s"
    total = sum(c.duration_ms for c in report.cases) / 1000
    return f"{total:.1f} s in cases (partial run)"


def _value(v: Any) -> str:
    """An identity value: text, or a table of a mapping (``packages``: name, version)."""
    if isinstance(v, dict):
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{_value(x)}</td></tr>" for k, x in v.items())
        return f'<table class="kv"><tbody>{rows}</tbody></table>'
    if isinstance(v, list):
        return ", ".join(_value(x) for x in v)
    return esc(v)


def _failing_rules(report: Report, index: int) -> str:
    """The rules that did not pass, each opening its cell's detail view: the unexpected
    ones (the run's failures), then the expected ones."""
    outcomes = rule_outcomes(report.cases)
    groups = [("Failing rules", [r for r, o in outcomes.items() if o in FAILING]),
              ("Expected failures and errors", [r for r, o in outcomes.items() if o in (Outcome.XFAIL.value, Outcome.XERROR.value)])]
    out = []
    for label, ids in groups:
        if not ids:
            continue
        ids.sort(key=lambda r: int(r[1:]))
        links = " ".join(f'<button type="button" class="rule-link {esc(outcomes[r])}" data-detail="d-{index}-{esc(r)}" '
                         f'title="{esc(outcomes[r])}">{esc(r)}</button>' for r in ids)
        out.append(f'<p class="failing-rules"><span>{esc(label)} ({len(ids)}):</span> {links}</p>')
    if not out:
        out.append('<p class="failing-rules none">No rule failed.</p>')
    return "".join(out)


def _summary(report: Report, index: int) -> str:
    h = report.header
    impl = h.implementation
    identity = "".join(f"<dt>{esc(k)}</dt><dd>{_value(v)}</dd>" for k, v in impl.items() if v not in (None, ""))
    run = [("suite", f"dsh-conformance {h.suite.get('version', '?')}"),
           ("spec", f"rules {h.spec.get('rules', '?')}, upstream {h.spec.get('upstream', '?')}"),
           ("protocol", h.protocol), ("profiles", ", ".join(h.profiles)),
           ("seed", "-" if h.seed is None else h.seed), ("examples", h.examples),
           ("corpus", h.corpus or "none"), ("started", h.started), ("run time", _run_time(report))]
    if report.footer:
        run.append(("exit code", report.footer.exit))
    run.append(("skipped", skips.describe(report.cases) or "none"))
    if report.footer and report.footer.too_many_skipped:
        run.append(("too many skipped", report.footer.too_many_skipped))
    facts = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in run)
    counts = outcome_counts(report.cases)
    chips = "".join(f'<span class="badge {esc(k)}" data-count="{esc(k)}">{esc(k)} <b>{v}</b></span> '
                    for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
    score_rows = []
    for s in scores(report):
        pct = f"{100 * s.ratio:.0f}%" if s.scored else "-"
        score_rows.append(f'<tr data-profile="{esc(s.profile)}"><th>{esc(s.profile)}</th>'
                          f'<td class="score">{s}</td><td><span class="meter"><span style="width:{100 * s.ratio:.1f}%">'
                          f"</span></span></td><td>{pct}</td></tr>")
    stale = ""
    if report.footer and report.footer.stale:
        stale = '<p class="stale">Stale expectations:</p><ul>' + "".join(
            f"<li>{esc(s)}</li>" for s in report.footer.stale) + "</ul>"
    partial = "" if report.footer else '<p class="note">Partial run: the report has no footer.</p>'
    failing = _failing_rules(report, index)
    return (f'<section class="summary" data-impl="{index}"><h2>{esc(report.name)}</h2>{partial}'
            '<div class="columns"><div>'
            f'<p class="counts">{esc(case_totals(report.cases, h.examples))}: {chips}</p>'
            f'<table class="scores"><thead><tr><th>profile</th><th>{esc(SCORE)}</th><th></th><th></th>'
            f'</tr></thead><tbody>{"".join(score_rows)}</tbody></table>{failing}{stale}</div>'
            f'<dl class="facts identity">{identity}</dl><dl class="facts run">{facts}</dl></div></section>')


_CONSEQUENCE = re.compile(r"^(?P<why>.*) \(and, as a consequence, (?P<rules>P\d+(?:, P\d+)*)\)$", re.S)


# A failure a listed departure explains (``conformance.explained``): "WHY (P4 follows from it:
# the reference computed with ... gives this answer)"; reports of earlier releases have the
# hand-listed form above.
_DERIVED = re.compile(r"^(?P<why>.*) \((?:(?P<rules>P\d+(?:, P\d+)*) follows? from it: )?"
                      r"(?P<how>the reference computed with the listed departures? .*)\)$", re.S)


def merged_reasons(cell: dict[str, Any]) -> list[str]:
    """The cell's expectation reasons, each once: a reason that only adds consequences
    ("WHY (P4 follows from it: the reference computed with ...)", or an earlier report's
    "WHY (and, as a consequence, P4)") is merged with the others of its cause, their
    consequences listed together."""
    merged: dict[str, dict[str, None]] = {}
    hows: dict[str, dict[str, None]] = {}
    for case in cell["cases"]:
        if not case["reason"]:
            continue
        m = _DERIVED.match(case["reason"]) or _CONSEQUENCE.match(case["reason"])
        why, extra = (m["why"], m["rules"].split(", ") if m["rules"] else []) if m else (case["reason"], [])
        merged.setdefault(why, {}).update(dict.fromkeys(extra))
        if m is not None and "how" in m.groupdict():
            hows.setdefault(why, {})[m["how"]] = None
    out = []
    for why, extra in merged.items():
        rules = ", ".join(sorted(extra, key=lambda r: int(r[1:])))
        if why in hows:
            follows = f"{rules} follow{'s' if len(extra) == 1 else ''} from it: " if extra else ""
            out.append(f"{why} ({follows}{'; '.join(hows[why])})")
        else:
            out.append(why + (f" (and, as a consequence, {rules})" if extra else ""))
    return out


def _words(cell: dict[str, Any]) -> str:
    """A cell's counts in words (``conformance.scores``): ``9 citing, 15 blamed``."""
    c = cell["counts"]
    return RuleCount(c["citing"], c["outcomes"], c["blamed"]).words()


def _cell(report: Report, index: int, rule: dict[str, Any], cell: dict[str, Any]) -> str:
    outcome = cell["outcome"]
    label = esc(outcome)
    c = cell["counts"]
    counts = f' <small class="counts">{esc(_words(cell))}</small>' if c["citing"] or c["blamed"] else ""
    if outcome in SHOWN and cell["cases"]:
        reason = "".join(f'<span class="reason">{esc(r)}</span>' for r in merged_reasons(cell))
        return (f'<td class="cell {esc(outcome)}" data-outcome="{esc(outcome)}">'
                f'<button type="button" data-detail="d-{index}-{esc(rule["rule"])}">{label}{counts}</button>'
                f"{reason}</td>")
    return f'<td class="cell {esc(outcome.replace(" ", "-"))}" data-outcome="{esc(outcome)}">{label}{counts}</td>'


def _matrix(reports: list[Report], rows: list[dict[str, Any]], md: MarkdownIt) -> str:
    head = "".join(f"<th>{esc(r.name)}</th>" for r in reports)
    out = []
    span = 2 + len(reports)
    for profile in PROFILES:
        prow = [r for r in rows if r["profile"] == profile]
        if not prow:
            continue
        # A profile's rows fold under its header (a button): a phone shows one profile at a time.
        out.append(f'<tbody data-profile="{profile}"><tr class="profile"><th colspan="{span}">'
                   f'<button type="button" class="fold" aria-expanded="true">Profile <code>{profile}</code> '
                   f'<small>({len(prow)} rules)</small></button></th></tr>')
        section = None
        for row in prow:
            if section_of(row["rule"]) != section:
                section = section_of(row["rule"])
                out.append(f'<tr class="section"><th colspan="{span}">{md.renderInline(section)}</th></tr>')
            kinds = {c["outcome"].replace(" ", "-") for c in row["cells"]}
            outcomes = " ".join(sorted(kinds))
            differs = ' data-differs="1"' if len(kinds) > 1 else ""
            # No report has a case of it (a selection, a partial run): folded with its kind.
            nocase = ' data-nocase="1"' if kinds == {"no-case"} else ""
            cells = "".join(_cell(r, i, row, c) for i, (r, c) in enumerate(zip(reports, row["cells"])))
            out.append(f'<tr class="rule" id="m-{row["rule"]}" data-rule="{row["rule"]}" data-profile="{profile}" '
                       f'data-outcomes="{outcomes}"{differs}{nocase}>'
                       f'<th scope="row">{row["rule"]}</th><td class="title"><a href="#rule-{row["rule"]}">'
                       f'{esc(row["title"])}</a></td>{cells}</tr>')
        out.append("</tbody>")
    return (f'<table class="matrix"><thead><tr><th>rule</th><th>title</th>{head}</tr></thead>'
            f'{"".join(out)}</table>')


def _case_index(reports: list[Report], rows: list[dict[str, Any]]) -> str:
    """The index by case: each case that did not pass, per report, with its outcome and the
    rules it is blamed on, each opening that rule's detail view at the case."""
    places: dict[tuple[int, str], list[tuple[str, int]]] = {}  # (report, case) -> (rule, place in the view)
    for row in rows:
        for i, (report, cell) in enumerate(zip(reports, row["cells"])):
            if cell["outcome"] not in SHOWN:
                continue
            known = {c.id for c in report.cases}
            for n, case in enumerate(c for c in cell["cases"] if c["id"] in known):
                places.setdefault((i, case["id"]), []).append((row["rule"], n))
    if not places:
        return ""
    body = []
    for i, report in enumerate(reports):
        for rec in report.cases:
            where = places.get((i, rec.id))
            if not where:
                continue
            links = " ".join(f'<button type="button" data-detail="d-{i}-{esc(rule)}" data-focus="d-{i}-{esc(rule)}-c{n}">'
                             f"{esc(rule)}</button>" for rule, n in where)
            impl = f"<td>{esc(report.name)}</td>" if len(reports) > 1 else ""
            body.append(f'<tr data-case="{esc(rec.id)}">{impl}<td><code>{esc(rec.id)}</code></td>'
                        f'<td><span class="badge {esc(rec.outcome.value)}">{esc(rec.outcome.value)}</span></td>'
                        f"<td>{links}</td></tr>")
    head = "<th>implementation</th>" if len(reports) > 1 else ""
    return ('<section id="cases"><h2>Cases that did not pass</h2><div class="wide"><table class="case-index">'
            f"<thead><tr>{head}<th>case</th><th>outcome</th><th>blamed on (opens the detail view)</th></tr></thead>"
            f'<tbody>{"".join(body)}</tbody></table></div></section>')


def _statements(md: MarkdownIt) -> str:
    known = rules()
    out = []
    for rid, st in statements().items():
        rule = known.get(rid)
        heading = f"{rid} · {rule.profile} · {rule.title}" if rule else rid
        out.append(f'<article id="rule-{esc(rid)}"><details><summary><h3>{esc(heading)}</h3></summary>'
                   f'<p class="section">{md.renderInline(st.section)}</p>{md.render(st.text)}</details></article>')
    # Folded, each statement too: a rule's title in the matrix opens its own (report_assets).
    return ('<section id="statements"><details class="all"><summary><h2>Rule statements</h2> '
            f'<small>({len(out)}; a rule\'s title opens its own)</small></summary>' + "".join(out) + "</details></section>")


# The outcome filter: groups, then every outcome a rule can have (each rule is reachable).
FILTER_GROUPS = [("all", "all outcomes"), ("failing", "failing (fail, error, timeout, invalid)"),
                 ("expected", "expected (expected-fail, expected-error)"),
                 ("unscored", "not scored (skip, not-scored, no case)")]


DIFFERS = ("differs", "differs between reports")


RULE_OUTCOMES = [o.value for o in Outcome] + [INCONCLUSIVE, "no-case"]


def filter_options(rows: list[dict[str, Any]], several: bool) -> list[tuple[str, str]]:
    """The outcome filter's options: the groups, "differs between reports" when the page
    compares several, then each outcome some rule has (in the report's outcome order)."""
    present = {c["outcome"].replace(" ", "-") for row in rows for c in row["cells"]}
    return [*FILTER_GROUPS, *([DIFFERS] if several else []),
            *((o, o.replace("-", " ") if o == "no-case" else o) for o in RULE_OUTCOMES if o in present)]


def page_title(reports: list[Report], title: str) -> str:
    """The tab's and the bookmark's name: the implementations and their versions (issue 44),
    then the page's title unless it names them already."""
    names = [r.name for r in reports]
    if all(n in title for n in names):
        return title
    return f"{', '.join(names)}: {title}" if names else title


def render_html(reports: list[Report], title: str = "Compliance matrix", base: Path | None = None,
                note: str | None = None) -> str:
    """The self-contained page, as UTF-8 text (a lone surrogate shown as its escape)."""
    return jsontext.escape_surrogates(render(reports, title, note))


def render(reports: list[Report], title: str = "Compliance matrix", note: str | None = None) -> str:
    md = MarkdownIt("commonmark").enable("table")
    rows = matrix(reports)
    details = [_detail(r, i, row, row["cells"][i], md)
               for row in rows for i, r in enumerate(reports)
               if row["cells"][i]["outcome"] in SHOWN and row["cells"][i]["cases"]]
    profiles = [p for p in PROFILES if any(row["profile"] == p for row in rows)]
    options_o = "".join(f'<option value="{v}">{esc(t)}</option>' for v, t in filter_options(rows, len(reports) > 1))
    options_p = '<option value="all">all profiles</option>' + "".join(
        f'<option value="{p}">{p}</option>' for p in profiles)
    without = sum(1 for row in rows if {c["outcome"] for c in row["cells"]} == {"no case"})
    nocase = (f' <label><input type="checkbox" id="f-nocase"> the {without} rule{"s" * (without != 1)} '
              f'without a case</label>') if without else ""
    filters = (f'<form class="filters" onsubmit="return false"><label>Outcome <select id="f-outcome">{options_o}'
               f'</select></label> <label>Profile <select id="f-profile">{options_p}</select></label>{nocase} '
               '<label>Search <input type="search" id="f-search" size="24" placeholder="rule id, title words or case id" '
               'aria-label="search rules and cases"></label> <span id="f-count"></span></form>'
               f'<p class="legend">Each cell: the rule\'s outcome, then its counts ({esc(LEGEND)}).</p>')
    summaries = "".join(_summary(r, i) for i, r in enumerate(reports))
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(page_title(reports, title))}</title><style>{CSS}</style></head><body>"
            f"<header class=\"page\"><h1>{esc(title)}</h1>{f'<p>{esc(note)}</p>' if note else ''}"
            f'<p class="gen">dsh-conformance report of {len(reports)} run{"s" * (len(reports) != 1)}</p></header>'
            f'<main><div class="summaries">{summaries}</div><h2>Rules</h2>{filters}'
            f'<div class="wide">{_matrix(reports, rows, md)}</div>'
            f"{_case_index(reports, rows)}{_statements(md)}</main>"
            '<dialog id="detail"><form method="dialog" class="bar"><span class="bar-title"></span>'
            '<button class="close" value="close">Close (Esc)</button></form><div class="body"></div></dialog>'
            f'<div hidden id="details">{"".join(details)}</div>'
            f"<script>{JS}</script></body></html>\n")


__all__ = ["render", "case_view", "replay_command", "page_title"]
