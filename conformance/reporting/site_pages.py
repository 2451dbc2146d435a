"""The pages of ``dsh-conformance site``, and the command (``conformance.site`` works out
what they hold).

Jinja2 templates (``site_templates/``, package data) with autoescape on, and every value a
template prints made visible first (``terminal.visible``: control characters, bidi
overrides and lone surrogates shown as their escapes), so that report text, which is
input, renders as text: a ``<script>`` in an implementation's name is shown, never run.
Only the spec's rule statements, rendered from Markdown with raw HTML off, go in as markup.

The site is static and self-contained: its CSS, its script (the search, over an index
written beside it as a script, since a page opened from ``file://`` may not fetch) and its
charts (pygal, SVG, no script) are files of the site; nothing comes from the network. Each
page's content security policy allows scripts and styles from the site's own files only:
were markup ever to get through, no inline script of it would run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import pygal
import pygal.style
from markdown_it import MarkdownIt
from markupsafe import Markup

from dsh_conformance.judge import value_diff
from dsh_conformance.kit import jsontext
from dsh_conformance.reporting.badges import badge_svg, endpoint_json
from dsh_conformance.reporting.report import read_report
from dsh_conformance.reporting.case_html import builtin_case
from dsh_conformance.reporting.site import COLUMNS, Implementation, Run, Site, build, page_name, rule_title
from dsh_conformance.spec.rule_text import statements
from dsh_conformance.spec.rules import PROFILES, rules
from dsh_conformance.textio.outputs import OutputError, check_directory, check_distinct, write_atomic
from dsh_conformance.textio.terminal import say, visible

TEMPLATES = Path(__file__).parent.parent / "site_templates"  # conformance/site_templates/, package data
ASSETS = ("site.css", "site.js")


def _shown(value: Any) -> Any:
    """What a template prints: text made visible (markup of our own is left as it is)."""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return visible(value)


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, finalize=_shown,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson_text"] = lambda v: json.dumps(v, ensure_ascii=False, indent=1, sort_keys=True)
    env.filters["case_page"] = page_name
    env.filters["score_class"] = _score_class
    env.filters["differs_at"] = lambda d: value_diff.locate_record(d).headline()
    return env


def _score_class(score: Any) -> str:
    if score is None or not score.scored:
        return "none"
    return "full" if score.ratio == 1 else "high" if score.ratio >= 0.9 else "mid" if score.ratio >= 0.5 else "low"


# One colour per line, told apart (pygal's defaults put "all" next to "core" in red), and
# type large enough to read when a phone shrinks the chart to its width.
CHART_STYLE = pygal.style.Style(
    colors=("#0969da", "#8250df", "#1a7f37", "#bf8700", "#24292f"), font_family="system-ui, sans-serif",
    background="#ffffff", plot_background="#ffffff", title_font_size=17, label_font_size=14,
    major_label_font_size=14, legend_font_size=15, value_font_size=12)


def chart(impl: Implementation) -> str:
    """Each profile's score (rules passing, in % of rules scored) over the versions."""
    c = pygal.Line(js=[], width=560, height=330, style=CHART_STYLE, range=(0, 100), show_dots=True, dots_size=4,
                   include_x_axis=True,
                   title="rules passing, % of scored", x_label_rotation=20,
                   legend_at_bottom=True, truncate_legend=-1, truncate_label=-1)
    c.x_labels = [visible(r.version) or "?" for r in impl.runs]
    for profile in COLUMNS:
        values = [round(100 * r.scores[profile].ratio, 1) if profile in r.scores and r.scores[profile].scored else None
                  for r in impl.runs]
        if any(v is not None for v in values):
            c.add(profile, values, allow_interruptions=True)
    return jsontext.escape_surrogates(c.render(is_unicode=True))


def search_index(site: Site) -> str:
    """The search's index, as a script that sets ``DSH_SEARCH`` (ASCII JSON: no ``<`` nor a
    line separator can end the script or the string early)."""
    entries = [{"k": "rule", "id": rid, "t": f"{r.profile} · {r.title}", "u": f"rule/{rid}.html"}
               for rid, r in rules().items()]
    for cid in site.case_ids:
        cited = sorted({x for _, rec in site.records(cid) if rec is not None for x in rec.rules},
                       key=lambda x: int(x[1:]))
        entries.append({"k": "case", "id": visible(cid), "t": " ".join(cited), "u": f"case/{page_name(cid)}.html"})
    text = json.dumps(entries, ensure_ascii=True, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"window.DSH_SEARCH = {text};\n"


def _statement_html(md: MarkdownIt, rid: str) -> Markup | None:
    st = statements().get(rid)
    if st is None:
        return None
    # The spec's text, Markdown with raw HTML off: markup of the renderer's own only.
    return Markup(md.render(st.text))  # noqa: S704


def _case_title(cid: str, recs: list[tuple[Run, Any]]) -> str:
    if not any(rec is not None and rec.source == "corpus" for _, rec in recs):
        return ""
    doc = builtin_case(cid)  # by id, in the suite's own corpus: never a path a report names
    title = (doc or {}).get("title")
    return title if isinstance(title, str) else ""


class _Writer:
    """The site's files, kept until every path is checked (an output that would replace an
    input is refused before anything is written), then written."""

    def __init__(self, out: Path, check: Callable[[Path], None]) -> None:
        self.out, self.check = out, check
        self.files: dict[Path, str] = {}

    def __call__(self, name: str, text: str) -> None:
        self.files[self.out / name] = jsontext.escape_surrogates(text)

    def flush(self) -> int:
        folders = sorted({path.parent for path in self.files} - {self.out})
        for folder in folders:
            # A link planted where the site has a folder (impl/, case/, ...) would have the
            # pages written wherever it points: refused, as a link at a file's path is replaced.
            for part in [*reversed(folder.relative_to(self.out).parents), folder.relative_to(self.out)][1:]:
                if (self.out / part).is_symlink() or ((self.out / part).exists() and not (self.out / part).is_dir()):
                    raise OutputError(f"--output {self.out / part}: not a directory of the site (a symbolic link or "
                                      "a file); remove it first")
        for path in self.files:
            self.check(path)
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
        for path, text in self.files.items():
            write_atomic(path, text)
        return len(self.files)


def write_site(site: Site, out: Path, title: str, check: Callable[[Path], None] = lambda p: None) -> int:
    """Write the site's files under ``out``; how many."""
    write = _Writer(out, check)
    _write(site, write, title, "")
    return write.flush()


def _write(site: Site, write: _Writer, title: str, prefix: str) -> None:
    env = environment()
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    known = rules()
    profiles = [p for p in PROFILES if any(p in r.scores for r in site.runs)]
    common = {"title": title, "profiles": profiles, "columns": [*profiles, "all"]}

    def page(template: str, name: str, root: str, **values: Any) -> None:
        write(prefix + name, env.get_template(template).render(root=root, **common, **values))

    for asset in ASSETS:
        write(prefix + asset, (TEMPLATES / asset).read_text(encoding="utf-8"))
    write(prefix + "search-index.js", search_index(site))
    apart = [(why, f"apart-{n}/index.html") for n, (why, _) in enumerate(site.apart, 1)]
    page("index.html", "index.html", "", site=site, apart=apart)
    page("search.html", "search.html", "")
    page("rules.html", "rules.html", "", site=site, rules=list(known.values()))
    for impl in site.implementations:
        write(prefix + f"impl/{impl.slug}-scores.svg", chart(impl))
        page("implementation.html", f"impl/{impl.slug}.html", "../", impl=impl, rule_title=rule_title)
    for run in site.runs:
        for stem, label, score in run.badges:
            write(prefix + f"badges/{stem}.svg", badge_svg(label, score))
            write(prefix + f"badges/{stem}.json", endpoint_json(label, score))
    for rid, rule in known.items():
        page("rule.html", f"rule/{rid}.html", "../", rule=rule, statement=_statement_html(md, rid),
             section=(statements().get(rid).section if rid in statements() else ""),
             cases=site.citing(rid), site=site)
    for cid in site.case_ids:
        recs = site.records(cid)
        page("case.html", f"case/{page_name(cid)}.html", "../", case_id=cid, recs=recs,
             case_title=_case_title(cid, recs), rule_title=rule_title)
    for n, (_, other) in enumerate(site.apart, 1):
        _write(other, write, f"{title} (shown apart)", f"{prefix}apart-{n}/")


def cmd_site(args: argparse.Namespace) -> int:
    # Named by file name in the pages (a published site holds no path of the machine).
    reports = [dataclasses.replace(read_report(p), path=Path(p).name) for p in args.reports]
    out = check_directory(args.output, "--output")
    site = build(reports)
    written = write_site(site, out, args.title, check=lambda p: check_distinct(p, "--output", args.reports))
    say(f"wrote {written} files of the site of {len(reports)} report{'s' * (len(reports) != 1)} in {args.output}"
        f" (open {out / 'index.html'})")
    for why, _ in site.apart:
        say(f"shown apart: {why}")
    return 0


__all__ = ["cmd_site", "write_site", "environment", "chart", "search_index"]
