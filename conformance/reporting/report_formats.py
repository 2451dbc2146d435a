"""What ``report`` and ``run --junit`` write besides the HTML page (``report_html``): the
compliance matrix of one or more reports (a row per rule, a cell per report: its outcome,
its counts and the cases blamed on it, ``conformance.scores``) in Markdown and JSON, and a
run's JUnit XML for CI."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from dsh_conformance.kit import jsontext

from dsh_conformance.reporting import skips
from dsh_conformance.judge import value_diff
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.textio.markup import md_code, md_text, xml_text
from dsh_conformance.textio.portable import BUILTIN_CORPUS, SUITE_ROOT
from dsh_conformance.reporting.report import BROKEN, Outcome, Report, rule_outcomes
from dsh_conformance.spec.rule_text import section_of
from dsh_conformance.spec.rules import rules
from dsh_conformance.reporting.scores import (
    LEGEND,
    NO_COUNT,
    SCORE,
    RuleCount,
    blamed_cases,
    case_totals,
    outcome_counts,
    rule_counts,
    scores,
)
from dsh_conformance.textio.terminal import json_visible


def matrix(reports: list[Report]) -> list[dict[str, Any]]:
    """Rows of the compliance matrix: one per rule, a cell per report (its outcome, its
    counts, and the cases blamed on it: ``conformance.scores``)."""
    per = [rule_outcomes(r.cases) for r in reports]
    counted = [rule_counts(r.cases) for r in reports]
    blamed = [blamed_cases(r.cases) for r in reports]
    rows = []
    for rule in rules().values():
        cells = []
        for outcomes, counts, index in zip(per, counted, blamed):
            cases = index.get(rule.id, [])
            cells.append({"outcome": outcomes.get(rule.id, "no case"),
                          "counts": counts.get(rule.id, NO_COUNT).to_json(),
                          "cases": [{"id": c.id, "source": c.source, "file": c.case_file, "outcome": c.outcome.value,
                                     "divergence": c.divergence, "reason": c.expected_reason,
                                     "differs_at": value_diff.locate_record(c.divergence).at if c.divergence else None}
                                    for c in cases]})
        rows.append({"rule": rule.id, "profile": rule.profile, "title": rule.title, "cells": cells})
    return rows


def _link_cases(rows: list[dict[str, Any]], reports: list[Report], base: Path | None) -> None:
    """Give each case a link where one holds wherever the page is read: a case of the
    built-in corpus, on a page that lies in the suite's own tree (the relative link then
    holds in every clone). Other cases are named by id and portable path, not linked."""
    inside = base is not None and base.resolve().is_relative_to(SUITE_ROOT)
    for row in rows:
        for cell, report in zip(row["cells"], reports):
            for case in cell["cases"]:
                builtin = report.header.corpus == BUILTIN_CORPUS and case["source"] == "corpus"
                # By id in the suite's own corpus, never the path the report names.
                safe = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", case["id"]) and ".." not in case["id"]
                case["link"] = (os.path.relpath(CASES / f"{case['id']}.json", base)
                                if inside and builtin and safe else None)


def render_markdown(reports: list[Report], title: str = "Compliance matrix", base: Path | None = None,
                    note: str | None = None) -> str:
    rows = matrix(reports)
    _link_cases(rows, reports, base)
    # The title and the note are the user's own Markdown; everything from a report is text
    # (conformance.markup): an implementation's name, ids, reasons and values cannot add
    # markup, HTML or lines to the page.
    out = [f"# {title}", ""]
    if note:
        out += [note, ""]
    for r in reports:
        h = r.header
        counts = outcome_counts(r.cases)
        out.append(f"- **{md_text(r.name)}** ({md_text(h.implementation.get('language', '?'))}), profiles "
                   f"{md_text(', '.join(h.profiles))}; {case_totals(r.cases, h.examples)}: "
                   + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                   + ("" if r.footer else " (partial run)") + "; score "
                   + ", ".join(f"{s.profile} {s}" for s in scores(r)) + f" ({SCORE})")
        if skipped := skips.describe(r.cases):
            out.append(f"  - {md_text(skipped)}" + (f" (**too many**: {md_text(r.footer.too_many_skipped)})"
                                                    if r.footer and r.footer.too_many_skipped else ""))
    out += ["", f"Each cell: the rule's outcome, then its counts ({LEGEND}).", ""]
    names = [md_text(r.name) for r in reports]
    for profile in ("core", "reference", "loop", "code-mode"):
        prow = [row for row in rows if row["profile"] == profile]
        if not prow:
            continue
        out += [f"## Profile `{profile}`", ""]
        section = None
        for row in prow:
            if section_of(row["rule"]) != section:
                section = section_of(row["rule"])
                out += ["", f"### {section}", "", "| rule | title | " + " | ".join(names) + " |",
                        "|---|---|" + "---|" * len(names)]
            cells = [_md_cell(c) for c in row["cells"]]
            out.append(f"| {row['rule']} | {row['title']} | " + " | ".join(cells) + " |")
        out.append("")
    details = [(row, i, c) for row in rows for i, c in enumerate(row["cells"]) if c["cases"]]
    if details:
        out += ["## Failures", ""]
        for row, i, cell in details:
            out.append(f"### {row['rule']} {row['title']} ({names[i]})")
            out.append("")
            for case in cell["cases"]:
                if case["link"]:
                    link = f"[{md_code(case['id'])}]({case['link']})"
                elif case["file"] and case["source"] != "corpus":
                    link = f"{md_code(case['id'])} ({md_code(case['file'])})"
                else:
                    link = md_code(case["id"])
                line = f"- {link}: {case['outcome']}"
                if case["reason"]:
                    line += f" (expected: {md_text(case['reason'])})"
                out.append(line)
                d = case["divergence"]
                if isinstance(d, dict):
                    found = value_diff.locate_record(d)
                    expected, actual = found.texts(300)
                    out.append(f"  - first divergence at {md_code(d.get('where', '?'))}")
                    if found.headline():
                        out.append(f"  - differs at {md_code(found.headline() or '')}")
                    out.append(f"  - expected: {md_code(expected)}")
                    out.append(f"  - actual: {md_code(actual)}")
            out.append("")
    return jsontext.escape_surrogates("\n".join(out).rstrip() + "\n")  # a page is UTF-8 text


def _md_cell(cell: dict[str, Any]) -> str:
    outcome = cell["outcome"]
    n = cell["counts"]
    words = RuleCount(n["citing"], n["outcomes"], n["blamed"]).words()
    text = f"{outcome} ({words})" if n["citing"] or n["blamed"] else outcome
    if cell["cases"]:
        target = cell["cases"][0]["link"]
        return f"[{text}]({target})" if target else text
    return text


def _skipped_json(r: Report) -> dict[str, Any]:
    """The skips of a run: per profile, all of them, the scenarios asked, and why they were
    too many (``conformance.skips``)."""
    per, skipped, asked = skips.skip_counts(r.cases)
    return {"profiles": per, "all": skipped, "asked": asked,
            "too_many": r.footer.too_many_skipped if r.footer else None}


def render_json(reports: list[Report], title: str = "", base: Path | None = None, note: str | None = None) -> str:
    doc = {"legend": {"counts": LEGEND, "scores": SCORE},
           "implementations": [{"name": r.name, "report": Path(r.path).name, "header": r.header.model_dump(mode="json"),
                                "totals": case_totals(r.cases, r.header.examples).to_json(),
                                "outcomes": outcome_counts(r.cases),
                                "scores": {s.profile: {"passing": s.passing, "scored": s.scored} for s in scores(r)},
                                "skipped": _skipped_json(r)}
                               for r in reports],
           "rules": matrix(reports)}
    return json_visible(jsontext.dumps(doc, indent=1)) + "\n"  # a terminal may show it: no raw control


def render_junit(report: Report) -> str:
    """JUnit XML, always well-formed: every text from the report (an implementation's name,
    ids, messages, reasons) goes through ``markup.xml_text``, so that a control character or
    a lone surrogate an implementation sent is shown as its escape (XML 1.0 cannot carry it,
    not even as a character reference)."""
    suite = ET.Element("testsuite", name=xml_text(f"dsh-conformance {report.name}"), tests=str(len(report.cases)))
    counts = {"failures": 0, "errors": 0, "skipped": 0}
    for c in report.cases:
        tc = ET.SubElement(suite, "testcase", classname=c.source, name=xml_text(f"{c.id} [{' '.join(c.rules)}]"),
                           time=f"{c.duration_ms / 1000:.3f}")
        text = xml_text(c.message or (jsontext.dumps(c.divergence) if c.divergence else ""))
        if c.outcome == Outcome.FAIL:
            counts["failures"] += 1
            ET.SubElement(tc, "failure", message=xml_text(f"rules {', '.join(c.failing_rules or c.rules)}")).text = text
        elif c.outcome in BROKEN:
            counts["errors"] += 1
            ET.SubElement(tc, "error", message=c.outcome.value).text = text
        elif c.outcome in (Outcome.SKIP, Outcome.NOT_SCORED, Outcome.XFAIL, Outcome.XERROR, Outcome.NOT_RUN):
            counts["skipped"] += 1
            ET.SubElement(tc, "skipped", message=xml_text(c.expected_reason or c.message or c.outcome.value))
    for k, v in counts.items():
        suite.set(k, str(v))
    return ET.tostring(suite, encoding="unicode") + "\n"
