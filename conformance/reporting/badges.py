"""Badges for the README of an implementation: its score, overall and per profile.

``dsh-conformance badge REPORT.jsonl [-o DIR]`` writes, for the implementation of each
report, ``<name>.svg`` ("dsh conformance 102/111") and ``<name>-<profile>.svg`` ("dsh core
41/48") in the flat style of shields badges (anybadge draws them). The numbers are the
scores of ``conformance.scores``: rules passing of rules scored. The colour goes from
green (every scored rule passes) through yellow to red.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

import anybadge

from dsh_conformance.textio.outputs import check_directory, check_distinct, check_writable, write_atomic
from dsh_conformance.reporting.report import Report, read_report, refuse_partial
from dsh_conformance.reporting.scores import Score, scores
from dsh_conformance.textio.terminal import say

# Shields' named colours, by the share of scored rules that pass.
COLOURS = [(1.0, "#4c1"), (0.9, "#a4a61d"), (0.75, "#dfb317"), (0.5, "#fe7d37"), (0.0, "#e05d44")]
NO_SCORE = "#9f9f9f"


def colour(score: Score) -> str:
    if not score.scored:
        return NO_SCORE
    return next(c for floor, c in COLOURS if score.ratio >= floor)


def badge_svg(label: str, score: Score) -> str:
    value = str(score) if score.scored else "no rule scored"
    return anybadge.Badge(label, value, default_color=colour(score)).badge_svg_text


SLUG_MAX = 80  # characters of a name kept in a file name: room for "-code-mode-2.svg" under NAME_MAX (255)


def slug(report: Report) -> str:
    """A file name for the report's implementation: ``@deepseek-ai/dsh-tools 0.1.0-rc.8``
    gives ``deepseek-ai-dsh-tools-0.1.0-rc.8``. The name comes from the implementation (a
    report is anyone's file): a long one is cut and keeps a digest of the whole, so that a
    file name stays within what a file system takes and two long names stay apart."""
    name = re.sub(r"[^A-Za-z0-9._]+", "-", report.name).strip("-.") or "implementation"
    if len(name) <= SLUG_MAX:
        return name
    digest = hashlib.sha256(report.name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{name[:SLUG_MAX - 13].rstrip('-.')}-{digest}"


def badges(reports: list[Report]) -> list[tuple[str, str, Score]]:
    """Each badge: its file name without the extension, its label and its score (the site
    names its runs by the same stems)."""
    out: list[tuple[str, str, Score]] = []
    taken: dict[str, int] = {}
    for report in reports:
        name = slug(report)
        taken[name] = taken.get(name, 0) + 1
        if taken[name] > 1:
            name = f"{name}-{taken[name]}"  # two reports of one implementation
        for score in scores(report):
            overall = score.profile == "all"
            out.append((name if overall else f"{name}-{score.profile}",
                        "dsh conformance" if overall else f"dsh {score.profile}", score))
    return out


def badge_files(reports: list[Report], directory: Path) -> list[tuple[Path, str]]:
    """Each badge's path under ``directory`` and its SVG."""
    return [(directory / f"{stem}.svg", badge_svg(label, score)) for stem, label, score in badges(reports)]


def endpoint_json(label: str, score: Score) -> str:
    """The badge as a shields endpoint's JSON (schemaVersion 1): the same label, value and
    colour as its SVG, for a shields server to draw."""
    value = str(score) if score.scored else "no rule scored"
    return json.dumps({"schemaVersion": 1, "label": label, "message": value,
                       "color": colour(score).lstrip("#")}) + "\n"


def write_badges(reports: list[Report], directory: Path, inputs: list[str] | None = None) -> list[Path]:
    """Write the badges (``outputs.write_atomic``: a symbolic link at a badge's path is
    replaced, never written through), after checking that the directory can be written and
    that no badge would replace one of ``inputs``."""
    check_directory(directory, "--output")
    files = badge_files(reports, directory)
    for path, _ in files:
        check_writable(path, "--output")
        check_distinct(path, "--output", list(inputs or []))
    for path, svg in files:
        write_atomic(path, svg)
    return [path for path, _ in files]


def cmd_badge(args: argparse.Namespace) -> int:
    reports = [read_report(p) for p in args.reports]
    for r in reports:
        if not args.allow_partial:
            refuse_partial(r, "a badge would score only the cases it holds")
    for path in write_badges(reports, Path(args.output), args.reports):
        say(f"wrote {path}")
    return 0


__all__ = ["cmd_badge", "badges", "badge_files", "write_badges", "badge_svg", "endpoint_json", "slug"]
