"""The page ``docs/rule-reach.md``: what the suite can say, rule by rule.

For every rule of every profile: the corpus cases that cite it, how many of the default
generated run's scenarios exercise it (``dsh-conformance run`` draws ``DEFAULT_EXAMPLES``
scenarios with seed 0; the page draws the very same ones), and the spec sentences the
scenario language cannot express yet, each with its reason (``tools/data/inexpressible.yaml``).
``dsh-conformance docs generate`` writes it; a test fails when it is stale.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dsh_conformance.resources import DOCS, TOOLS
from dsh_conformance.spec.rules import ORACLE_PROFILES, PROFILES, rules

PAGE = (DOCS if DOCS is not None else Path("docs")) / "rule-reach.md"
INEXPRESSIBLE = TOOLS / "data" / "inexpressible.yaml"
DEFAULT_EXAMPLES, DEFAULT_SEED = 100, 0  # dsh-conformance run's defaults (conformance/cli.py)


class InexpressibleError(ValueError):
    pass


@dataclass(frozen=True)
class Gap:
    """A spec sentence the language cannot express yet: of one rule, or of a whole profile."""
    sentence: str
    reason: str
    rule: str | None = None
    profile: str | None = None


def load_gaps(path: Path = INEXPRESSIBLE) -> list[Gap]:
    """The listed gaps; one-line errors name the file and the entry."""
    try:
        entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except (OSError, yaml.YAMLError) as e:
        raise InexpressibleError(f"{path}: cannot read: {e}") from None
    known = rules()
    out = []
    for n, e in enumerate(entries):
        where = f"{path}: entry {n + 1}"
        if not isinstance(e, dict) or set(e) - {"rule", "profile", "sentence", "reason"}:
            raise InexpressibleError(f"{where}: expected rule or profile, sentence, reason")
        rule, profile = e.get("rule"), e.get("profile")
        if (rule is None) == (profile is None):
            raise InexpressibleError(f"{where}: give exactly one of rule and profile")
        if rule is not None and rule not in known:
            raise InexpressibleError(f"{where}: no rule {rule!r}")
        if profile is not None and profile not in PROFILES:
            raise InexpressibleError(f"{where}: no profile {profile!r}")
        for key in ("sentence", "reason"):
            if not isinstance(e.get(key), str) or not e[key].strip():
                raise InexpressibleError(f"{where}: {key} is missing: nothing is listed without one")
        out.append(Gap(e["sentence"].strip(), " ".join(e["reason"].split()), rule, profile))
    return out


def default_run_reach(examples: int = DEFAULT_EXAMPLES, seed: int = DEFAULT_SEED,
                      profiles: tuple[str, ...] = ORACLE_PROFILES) -> tuple[int, Counter[str]]:
    """How many scenarios the default generated run draws, and how many of them cite each
    rule. The draws are the run's own: the independent draws ``Runner.run_properties``
    judges (``strategies.draws.independent_draws``), or, without them, the same strategy,
    settings and seeded random with a predicate that only counts."""
    from hypothesis import HealthCheck, find, settings
    from hypothesis.errors import NoSuchExample

    from dsh_conformance.strategies.draws import independent_draws
    from dsh_conformance.strategies.scenarios import scenarios

    drawn = 0
    counts: Counter[str] = Counter()
    draws = independent_draws(examples, seed, frozenset(profiles))
    if draws is not None:
        for example, _ in draws:
            drawn += 1
            counts.update(example.doc.get("rules", []))
        return drawn, counts

    def count(doc: dict[str, Any]) -> bool:
        nonlocal drawn
        drawn += 1
        counts.update(doc.get("rules", []))
        return False

    cfg = settings(max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    try:
        find(scenarios(frozenset(profiles)), count, settings=cfg, random=random.Random(seed))
    except NoSuchExample:
        pass
    return drawn, counts


def corpus_citations() -> dict[str, list[str]]:
    from dsh_conformance.spec.corpus import load_corpus

    out: dict[str, list[str]] = {}
    for case in load_corpus():
        for r in case.scenario.rules:
            out.setdefault(r, []).append(case.id)
    return {r: sorted(ids) for r, ids in out.items()}


def render(citations: dict[str, list[str]], drawn: int, reach: Counter[str], gaps: list[Gap]) -> str:
    by_rule: dict[str, list[Gap]] = {}
    for g in gaps:
        targets = [g.rule] if g.rule else [r.id for r in rules().values() if r.profile == g.profile]
        for r in targets:
            by_rule.setdefault(r, []).append(g)
    all_rules = list(rules().values())
    cited = sum(1 for r in all_rules if citations.get(r.id))
    reached = sum(1 for r in all_rules if reach.get(r.id))
    out = [
        "<!-- generated by `dsh-conformance docs generate` (tools/reach_page.py); do not edit -->",
        "",
        "# What the suite can say, rule by rule",
        "",
        "For every rule of the spec (`../shared/spec/pipeline.md`): the corpus cases that cite it, how many "
        f"of the {drawn} scenarios of the default generated run (`dsh-conformance run`: {DEFAULT_EXAMPLES} "
        f"examples, seed {DEFAULT_SEED}) exercise it, and the spec sentences the scenario language cannot "
        "express yet, each with the reason (`tools/data/inexpressible.yaml`). A rule that no case cites and "
        "no generated scenario reaches is never tested, whatever a report says about it.",
        "",
        f"- {len(all_rules)} rules; {cited} cited by corpus cases; {reached} reached by the default generated run; "
        f"{len(by_rule)} with sentences the language cannot express yet.",
        "",
    ]
    for profile in PROFILES:
        prow = [r for r in all_rules if r.profile == profile]
        out += [f"## Profile `{profile}`", "",
                "| rule | title | corpus cases | generated | cannot express yet |",
                "|---|---|---|---:|---|"]
        for r in prow:
            ids = citations.get(r.id, [])
            cases = (f"{len(ids)}: " + ", ".join(f"[`{i}`](../conformance/cases/{i}.json)" for i in ids)) if ids else "none"
            gaps_text = "<br>".join(f"\u201c{_cell(g.sentence)}\u201d: {_cell(g.reason)}" for g in by_rule.get(r.id, [])) or "\u2013"
            out.append(f"| {r.id} | {_cell(r.title)} | {cases} | {reach.get(r.id, 0)} | {gaps_text} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def generate(docs: Path = PAGE.parent) -> dict[Path, str]:
    """The page, by the path it is written to in ``docs``."""
    drawn, reach = default_run_reach()
    return {docs / PAGE.name: render(corpus_citations(), drawn, reach, load_gaps())}
