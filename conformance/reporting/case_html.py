"""A case of the HTML report (``reporting.report_html``) shown in full: what the report kept of
it or the built-in case it names (``CaseView``), its replay command, and its traces side by
side, lane by lane as the judge compares them (``judge.trace_lanes``), with the first
divergence of each lane marked."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from dsh_conformance import __version__
from dsh_conformance.judge import value_diff
from dsh_conformance.judge.trace_lanes import Lane, divergences, lanes
from dsh_conformance.kit.jsonio import InputLimitError, loads, read_limited
from dsh_conformance.kit.trace import parse_trace
from dsh_conformance.oracle import parse_scenario, run_scenario
from dsh_conformance.reporting.evidence import document_digest, trace_digest
from dsh_conformance.reporting.report import CaseRecord, Report, replay_line
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.textio.terminal import visible


def esc(v: Any) -> str:
    # Control characters (which HTML forbids, and a terminal showing the page acts on) are
    # shown as their escapes, as on the terminal (conformance.terminal).
    return html.escape(visible(str(v)), quote=True)


def _json(v: Any, indent: int | None = None) -> str:
    if indent is None:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(v, ensure_ascii=False, indent=indent)


@dataclass
class CaseView:
    """What the detail view shows of one non-passing case."""
    record: CaseRecord
    scenario: dict[str, Any] | None = None
    lanes: list[Lane] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


_CASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def builtin_case(case_id: str) -> dict[str, Any] | None:
    """The document of this suite's own corpus case ``case_id``, or None. A report is input,
    not a pointer to files: a view finds a corpus case by its id in the corpus the suite
    ships, never at a path the report names (its ``corpus`` or ``case_file``)."""

    if not _CASE_ID.fullmatch(case_id) or ".." in case_id:
        return None
    try:
        doc = loads(read_limited(CASES / f"{case_id}.json"))
    except (OSError, InputLimitError):
        return None
    return doc if isinstance(doc, dict) else None


def case_view(report: Report, rec: CaseRecord) -> CaseView:
    view = CaseView(rec)
    if rec.scenario is not None:
        view.scenario = rec.scenario
    elif rec.source == "corpus":
        doc = builtin_case(rec.id)
        if doc is None:
            view.notes.append(f"The case {rec.id} is not in the corpus of this suite (dsh-conformance {__version__}): "
                              "its scenario and expected trace are not shown.")
        elif rec.scenario_sha256 and document_digest(doc) != rec.scenario_sha256:
            view.notes.append(f"The corpus of this suite (dsh-conformance {__version__}) holds another version of this "
                              "case than the run used: its scenario and expected trace are not shown.")
        else:
            view.scenario = doc
    if rec.trace is None and rec.trace_omitted:
        view.notes.append(f"The implementation's trace ({rec.trace_omitted:,} bytes) was over the 1 MiB a report keeps "
                          "of it: the traces are not shown; replay the case to see them.")
    if view.scenario is None or rec.trace is None:
        return view
    try:
        expected = run_scenario(parse_scenario(view.scenario))
        actual = parse_trace(rec.trace)
    except Exception as e:  # a scenario this oracle cannot run, or a trace it cannot read
        view.notes.append(f"The traces cannot be shown: {type(e).__name__}: {e}")
        return view
    if rec.expected_sha256 and trace_digest(expected) != rec.expected_sha256:
        view.notes.append(f"This suite's oracle (dsh-conformance {__version__}) gives another expected trace "
                          f"than the run compared against (dsh-conformance {report.header.suite.get('version')}); "
                          "the expected side below is this oracle's.")
    view.lanes = lanes(expected, actual, set(rec.profiles or ["core"]))
    return view


def replay_command(report: Report, rec: CaseRecord) -> str:
    return replay_line(report.header, rec)


def _item(lane: str, v: Any) -> str:
    """One trace item: what it is, in words, then the rest as JSON."""
    if v is None:
        return '<span class="none">(nothing)</span>'
    if isinstance(v, dict) and lane.startswith("observations") and "stage" in v:
        head = " · ".join(str(v[k]) for k in ("stage", "what", "who") if v.get(k) is not None)
        rest = v.get("value")
    elif isinstance(v, dict) and lane.startswith("events") and "type" in v:
        head = str(v["type"])
        rest = {k: x for k, x in v.items() if k != "type"}
    elif isinstance(v, dict) and lane == "results" and "callId" in v:
        head = f"{v['callId']} ({'frozen' if v.get('frozen') else 'not frozen'}"
        head += ", observed)" if v.get("observed") else ", not the observed object)"
        rest = v.get("result")
    else:
        head, rest = "", v
    body = "" if rest is None else f"<code>{esc(_json(rest))}</code>"
    return (f'<span class="step">{esc(head)}</span> ' if head else "") + body


def _lane_table(lane: Lane, first: str | None, ids: dict[str, str]) -> str:
    bad = lane.first_divergence
    agreeing = bad is None
    summary = (("1 item agrees" if len(lane.rows) == 1 else f"{len(lane.rows)} items agree") if agreeing
               else f"diverges at {bad.where}" + (" (the first divergence)" if bad.where == first else ""))
    rows = []
    for n, row in enumerate(lane.rows):
        cls = "first" if row.where == first else ("agree" if row.agree else "diff")
        rid = ids.get(row.where)
        id_attr = f' id="{esc(rid)}"' if rid else ""
        rows.append(f'<tr class="{cls}"{id_attr}>'
                    f'<th scope="row" title="{esc(row.where)}">{n}</th>'
                    f"<td>{_item(lane.name, row.expected)}</td><td>{_item(lane.name, row.actual)}</td></tr>")
    return (f'<details class="lane"{" open" if not agreeing else ""}><summary><code>{esc(lane.name)}</code> '
            f"<span>{esc(summary)}</span></summary>"
            '<table class="sbs"><thead><tr><th>#</th><th>expected (oracle)</th><th>actual</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></details>")


def case_html(report: Report, rec: CaseRecord, key: str, open_: bool) -> str:
    view = case_view(report, rec)
    title = (view.scenario or {}).get("title") or ""
    d = rec.divergence
    first = d["where"] if d else None
    parts = [f'<details class="case" id="{esc(key)}"{" open" if open_ else ""}>'
             f'<summary><span class="badge {esc(rec.outcome.value)}">{esc(rec.outcome.value)}</span> '
             f"<code>{esc(rec.id)}</code> {esc(title)}</summary>", '<dl class="facts">']
    facts = [("rules cited", " ".join(rec.rules) or "-"), ("failing rules", " ".join(rec.failing_rules) or "-"),
             ("source", rec.source + (f" ({rec.case_file})" if rec.case_file else ""))]
    if rec.profiles:
        facts.append(("compared under", ", ".join(rec.profiles)))
    for k, v in facts:
        parts.append(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>")
    if rec.expected_reason:
        parts.append(f'<dt>expected failure</dt><dd class="reason">{esc(rec.expected_reason)}</dd>')
    parts.append("</dl>")
    for note in view.notes:
        parts.append(f'<p class="note">{esc(note)}</p>')
    parts.append(f'<p>Replay:</p><pre class="cmd">{esc(replay_command(report, rec))}</pre>')
    if d:
        head = value_diff.locate_record(d).headline()
        parts.append(f'<p class="first-divergence">First divergence at <code>{esc(d["where"])}</code> '
                     f'(rules {esc(", ".join(d.get("rules") or rec.failing_rules) or "-")})'
                     + (f': differs at <code class="differs-at">{esc(head)}</code>' if head else "") + "</p>")
    elif rec.message:
        parts.append(f'<pre class="message">{esc(rec.message)}</pre>')
    if rec.violations:
        items = "".join(f"<li><b>{esc(v['rule'])}</b> {esc(v['message'])}</li>" for v in rec.violations)
        parts.append(f'<p>Invariants broken:</p><ul class="violations">{items}</ul>')
    if view.lanes:
        found = divergences(view.lanes)
        ids = {row.where: f"{key}-r{n}" for n, row in enumerate(found)}
        others = [r for r in found if r.where != first]
        if others:
            links = ", ".join(f'<a href="#{ids[r.where]}" data-row="{ids[r.where]}"><code>{esc(r.where)}</code></a>'
                              for r in others)
            parts.append(f'<p class="others">Other divergences: {links}</p>')
        parts.append('<div class="lanes">' + "".join(_lane_table(lane, first, ids) for lane in view.lanes) + "</div>")
    elif d:
        # No traces to show (an older report, or the case is not at hand): the recorded
        # divergence alone.
        parts.append('<table class="sbs"><thead><tr><th>#</th><th>expected (oracle)</th><th>actual</th></tr></thead>'
                     f'<tbody><tr class="first"><th>{esc(d["where"])}</th>'
                     f'<td>{_item(d["where"], d.get("expected"))}</td><td>{_item(d["where"], d.get("actual"))}</td>'
                     "</tr></tbody></table>")
    if rec.message and d:
        parts.append(f'<details><summary>Message</summary><pre class="message">{esc(rec.message)}</pre></details>')
    if view.scenario is not None:
        text = _json(view.scenario, indent=1)
        generated = rec.scenario is not None
        name = Path(rec.case_file).name if rec.case_file else f"{rec.id}.json"
        download = (f' <a download="{esc(name)}" href="data:application/json;charset=utf-8,{quote(text)}">'
                    f"save as {esc(name)}</a>") if generated else ""
        label = "The shrunk case" if rec.source == "property" else "Scenario"
        parts.append(f'<details class="scenario"{" open" if generated else ""}><summary>{label}{download}</summary>'
                     f"<pre>{esc(text)}</pre></details>")
    parts.append("</details>")
    return "".join(parts)
