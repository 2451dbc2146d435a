"""What ``dsh-conformance mutate`` writes: JSON lines, Markdown, an HTML page, the console.

All views come from the same results (``conformance.mutate.Result``): the kill rate over
all mutants, per theme and per rule, the corpus-only and generated-only rates side by
side, the fault catalogue with whether the run blamed each fault's rule, the survivors
with their diff, the equivalent mutants with their recorded reasons, and a replay command
for the cases that kill each killed mutant.

Rates follow Stryker's mutation score: detected (killed or timed out) over the mutants
that count, which leaves out the broken ones (the copy could not run at all) and the
noted equivalents.
"""

from __future__ import annotations

import html as _html
import json
import shlex
from collections.abc import Callable, Iterable
from typing import Any

from dsh_conformance.measuring.mutants import Mutant, themes
from dsh_conformance.reporting.report_assets import CSS
from dsh_conformance.spec.rules import rules as rule_index

STATUSES = ("killed", "timeout", "survived", "equivalent", "broken")


def _counted(results: Iterable[Any]) -> list[Any]:
    return [r for r in results if r.status not in ("broken", "equivalent")]


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "-"


def tally(results: list[Any]) -> dict[str, Any]:
    """Counts and rates of a group of mutants."""
    counted = _counted(results)
    detected = sum(r.status in ("killed", "timeout") for r in counted)
    corpus = sum(r.status == "killed" and r.by_corpus > 0 for r in counted)
    gen = sum(r.status == "killed" and r.by_generated > 0 for r in counted)
    out = {s: sum(r.status == s for r in results) for s in STATUSES}
    out.update(mutants=len(results), counted=len(counted), detected=detected, corpus=corpus, generated=gen,
               rate=_pct(detected, len(counted)), corpus_rate=_pct(corpus, len(counted)),
               generated_rate=_pct(gen, len(counted)))
    return out


def by_theme(results: list[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    names = [*themes(), "other"]
    titles = {n: t["title"] for n, t in themes().items()} | {"other": "No rule cited where the code changed"}
    return [(n, titles[n], tally([r for r in results if r.mutant.theme == n])) for n in names
            if any(r.mutant.theme == n for r in results)]


def by_rule(results: list[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    index = rule_index()
    ids = sorted({rule for r in results for rule in r.mutant.rules}, key=lambda x: int(x[1:]))
    return [(i, index[i].title if i in index else "?", tally([r for r in results if i in r.mutant.rules]))
            for i in ids]


def blame_accuracy(results: list[Any]) -> dict[str, Any]:
    """On the fault catalogue (issue 39): of the faults the run catches, how many it blames on
    the rule the fault breaks (the run's compliance table reads fail on it)."""
    caught = [r for r in _counted(results) if r.mutant.kind == "fault" and r.blamed is not None]
    right = [r for r in caught if r.blamed]
    return {"caught": len(caught), "blamed": len(right), "rate": _pct(len(right), len(caught)),
            "missed": sorted(r.mutant.id for r in caught if not r.blamed)}


def generated_share(results: list[Any]) -> dict[str, Any]:
    """On the fault catalogue: what the generated scenarios catch against what the corpus
    catches (issue 16's measure: generated-only kills over corpus-only kills)."""
    faults = [r for r in _counted(results) if r.mutant.kind == "fault"]
    corpus = {r.mutant.id for r in faults if r.status == "killed" and r.by_corpus}
    gen = {r.mutant.id for r in faults if r.status == "killed" and r.by_generated}
    return {"faults": len(faults), "corpus": len(corpus), "generated": len(gen), "both": len(corpus & gen),
            "only_generated": sorted(gen - corpus), "only_corpus": sorted(corpus - gen),
            "ratio": _pct(len(gen), len(corpus))}


def replay_command(mutant: Mutant, kill: dict[str, Any], seed: int, examples: int) -> str:
    parts = ["dsh-conformance", "mutate", "--only", mutant.id, "--replay", kill["case"]]
    if kill["source"] == "property":
        parts += ["--seed", str(seed)] + (["--examples", str(examples)] if examples != 100 else [])
    return " ".join(shlex.quote(p) for p in parts)


def _replays(r: Any, meta: dict[str, Any]) -> list[str]:
    """Replay commands for the cases that kill a mutant: the first corpus case and the
    first generated one."""
    out = []
    for source in ("corpus", "property"):
        kill = next((k for k in r.kills if k["source"] == source), None)
        if kill is not None:
            out.append(replay_command(r.mutant, kill, meta["seed"], meta["examples"]))
    return out


def record(r: Any, meta: dict[str, Any]) -> dict[str, Any]:
    out = {"kind": "mutant", **r.mutant.summary(), "status": r.status, "seconds": r.seconds,
           "killed_by": {"corpus": r.by_corpus, "generated": r.by_generated}, "failing_rules": r.failing_rules,
           "blamed": r.blamed, "reached": r.reached, "kills": r.kills, "replay": _replays(r, meta),
           "diff": r.mutant.diff()}
    if r.detail:
        out["detail"] = r.detail
    if r.reason:
        out["reason"] = r.reason
    return out


def jsonl(results: list[Any], meta: dict[str, Any]) -> str:
    lines = [{"kind": "header", **meta}]
    lines += [record(r, meta) for r in results]
    lines.append({"kind": "footer", "total": tally(results), "catalogue": generated_share(results),
                  "blame": blame_accuracy(results)})
    return "".join(json.dumps(x, ensure_ascii=False, sort_keys=False) + "\n" for x in lines)


# ============================================================================ Markdown

def _md_row(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def _rate_rows(rows: list[tuple[str, str, dict[str, Any]]], link: Callable[[str], str]) -> list[str]:
    out = [_md_row(["", "", "mutants", "killed", "timeout", "survived", "equivalent", "broken", "kill rate",
                    "corpus only", "generated only"]),
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, title, t in rows:
        out.append(_md_row([link(key), title, t["mutants"], t["killed"], t["timeout"], t["survived"], t["equivalent"],
                            t["broken"], t["rate"], t["corpus_rate"], t["generated_rate"]]))
    return out


def _code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


def markdown(results: list[Any], meta: dict[str, Any]) -> str:
    total = tally(results)
    share = generated_share(results)
    blame = blame_accuracy(results)
    ops = [r for r in results if r.mutant.kind == "operator"]
    faults = [r for r in results if r.mutant.kind == "fault"]
    lines = ["# Mutation report: how many faults the default run catches", "",
             f"Generated by `{meta['command']}` (the oracle's modules, seed {meta['seed']}; the default run: "
             f"{meta['cases']['corpus']} corpus cases and {meta['cases']['generated']} generated scenarios). "
             "Each mutant is a copy of the oracle with one change, run as an implementation under test; an "
             "unmutated copy passed every case first. The kill rate counts killed and timed-out mutants over all "
             "but the broken ones and the noted equivalents (`conformance/data/mutation-equivalents.yaml`).", "",
             "## Summary", "",
             _md_row(["mutants", "operator", "catalogue", "killed", "timeout", "survived", "equivalent", "broken",
                      "kill rate", "blame accuracy", "corpus only", "generated only"]),
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
             _md_row([total["mutants"], len(ops), len(faults), total["killed"], total["timeout"], total["survived"],
                      total["equivalent"], total["broken"], total["rate"], blame["rate"], total["corpus_rate"],
                      total["generated_rate"]]), "",
             f"Blame accuracy: of the {blame['caught']} catalogue faults the run catches, it blames "
             f"{blame['blamed']} on the rule the fault breaks (the compliance table reads fail on it)"
             + (f"; not on it: {', '.join(blame['missed'])}." if blame["missed"] else "."), "",
             f"On the fault catalogue, the generated scenarios alone catch {share['generated']} of the "
             f"{share['faults']} faults and the corpus alone {share['corpus']}: the generated-only run catches "
             f"**{share['ratio']}** of what the corpus-only run catches"
             + (f" (only generated: {', '.join(share['only_generated']) or 'none'}; only the corpus: "
                f"{', '.join(share['only_corpus']) or 'none'})." if share["faults"] else "."), "",
             f"Operator mutants are drawn from {sum(meta['per_module'].values())} mutation points over "
             f"{len(meta['per_module'])} modules; modules left out: "
             + ", ".join(f"`{m}` ({why})" for m, why in meta["excluded_modules"].items())
             + "; functions left out: " + (", ".join(f"`{m}` ({why})" for m, why in
                                                    meta.get("excluded_functions", {}).items()) or "none") + ".", "",
             "## Kill rate per theme", "", *_rate_rows(by_theme(results), lambda k: k), "",
             "## Kill rate per rule", "",
             "A mutant counts for the rules the code at its place cites (an operator mutant) or for the rule it "
             "breaks (a fault).", "", *_rate_rows(by_rule(results), lambda k: k), "",
             "## The fault catalogue", "",
             "Blamed: the run's compliance table reads fail on the fault's rule (a fault that is caught but blamed "
             "only on its symptoms says `no`, with the rules it was blamed on).", "",
             _md_row(["fault", "rule", "theme", "status", "corpus", "generated", "blamed", "replay"]),
             "|---|---|---|---|---:|---:|---|---|"]
    for r in faults:
        blamed = "-" if r.blamed is None else "yes" if r.blamed else f"no ({', '.join(r.failing_rules[:6])})"
        lines.append(_md_row([f"{r.mutant.title} (`{r.mutant.id}`)", r.mutant.rules[0], r.mutant.theme, r.status,
                              r.by_corpus, r.by_generated, blamed, "<br>".join(_code(c) for c in _replays(r, meta))]))
    survivors = [r for r in results if r.status == "survived"]
    lines += ["", f"## Survivors ({len(survivors)})", ""]
    if not survivors:
        lines += ["None: every mutant that is not a noted equivalent is caught by the default run.", ""]
    for r in survivors:
        where = "" if r.reached is None else " (its line runs in the default run)" if r.reached else \
            " (the default run never runs its line)"
        lines += [f"### `{r.mutant.id}`{where}", "", f"{r.mutant.title + ': ' if r.mutant.title else ''}"
                  f"{_code(r.mutant.change)}; rules {', '.join(r.mutant.rules) or '-'}", "",
                  "```diff", r.mutant.diff().rstrip(), "```", ""]
    equivalent = [r for r in results if r.status == "equivalent"]
    if equivalent:
        lines += [f"## Equivalent mutants ({len(equivalent)})", "", _md_row(["mutant", "change", "reason"]), "|---|---|---|"]
        lines += [_md_row([_code(r.mutant.id), _code(r.mutant.change), r.reason]) for r in equivalent]
        lines.append("")
    other = [r for r in results if r.status in ("timeout", "broken")]
    if other:
        lines += [f"## Timed out and broken ({len(other)})", "", _md_row(["mutant", "status", "change", "detail"]),
                  "|---|---|---|---|"]
        lines += [_md_row([_code(r.mutant.id), r.status, _code(r.mutant.change), r.detail]) for r in other]
        lines.append("")
    killed = [r for r in ops if r.status == "killed"]
    lines += [f"## Killed operator mutants ({len(killed)})", "",
              _md_row(["mutant", "change", "rules", "corpus", "generated", "first killing case", "replay"]),
              "|---|---|---|---:|---:|---|---|"]
    for r in killed:
        first = r.kills[0] if r.kills else {}
        lines.append(_md_row([_code(r.mutant.id), _code(r.mutant.change), ", ".join(r.mutant.rules) or "-",
                              r.by_corpus, r.by_generated, f"{first.get('case', '')} ({first.get('outcome', '')})",
                              _code(_replays(r, meta)[0]) if r.kills else ""]))
    return "\n".join(lines).rstrip() + "\n"


# ============================================================================ the console

def console(results: list[Any], meta: dict[str, Any]) -> str:
    total = tally(results)
    share = generated_share(results)
    out = [f"\n{'theme':<18} {'mutants':>7} {'killed':>6} {'timeout':>7} {'survived':>8} {'equiv':>5} {'broken':>6} "
           f"{'rate':>7} {'corpus':>7} {'generated':>9}"]
    for key, _, t in [*by_theme(results), ("all", "", total)]:
        out.append(f"{key:<18} {t['mutants']:>7} {t['killed']:>6} {t['timeout']:>7} {t['survived']:>8} "
                   f"{t['equivalent']:>5} {t['broken']:>6} {t['rate']:>7} {t['corpus_rate']:>7} {t['generated_rate']:>9}")
    if share["faults"]:
        out.append(f"\nfault catalogue: generated-only catches {share['generated']}, corpus-only {share['corpus']} of "
                   f"{share['faults']} faults: {share['ratio']} of what the corpus catches")
    unblamed = [r for r in results if r.mutant.kind == "fault" and r.blamed is False]
    for r in unblamed:
        out.append(f"not blamed on {r.mutant.rules[0]}: {r.mutant.id} (blamed on {', '.join(r.failing_rules[:8])})")
    for r in results:
        if r.status == "survived":
            out.append(f"SURVIVED {r.mutant.id} ({r.mutant.module}:{r.mutant.line}"
                       + ("" if r.reached is None else ", reached" if r.reached else ", never reached")
                       + f"): {r.mutant.change}")
    return "\n".join(out)


# ============================================================================ HTML

def _esc(v: Any) -> str:
    return _html.escape(str(v), quote=True)


def _meter(rate: str) -> str:
    width = rate.rstrip("%") if rate != "-" else "0"
    return f'<span class="meter"><span style="width:{width}%"></span></span> {_esc(rate)}'


def _html_rates(rows: list[tuple[str, str, dict[str, Any]]]) -> str:
    head = ("<tr><th></th><th></th><th>mutants</th><th>killed</th><th>timeout</th><th>survived</th>"
            "<th>equivalent</th><th>broken</th><th>kill rate</th><th>corpus only</th><th>generated only</th></tr>")
    body = "".join(
        f"<tr><td>{_esc(k)}</td><td>{_esc(title)}</td><td>{t['mutants']}</td><td>{t['killed']}</td>"
        f"<td>{t['timeout']}</td><td class=\"{'cell fail' if t['survived'] else ''}\">{t['survived']}</td>"
        f"<td>{t['equivalent']}</td><td>{t['broken']}</td><td class=\"score\">{_meter(t['rate'])}</td>"
        f"<td>{_esc(t['corpus_rate'])}</td><td>{_esc(t['generated_rate'])}</td></tr>" for k, title, t in rows)
    return f'<table class="matrix"><thead>{head}</thead><tbody>{body}</tbody></table>'


def html(results: list[Any], meta: dict[str, Any]) -> str:
    total = tally(results)
    share = generated_share(results)
    title = "Mutation report"
    facts = {"command": meta["command"], "seed": meta["seed"],
             "default run": f"{meta['cases']['corpus']} corpus cases, {meta['cases']['generated']} generated",
             "mutants": f"{total['mutants']} ({sum(r.mutant.kind == 'operator' for r in results)} operator, "
                        f"{sum(r.mutant.kind == 'fault' for r in results)} catalogue)",
             "kill rate": total["rate"], "corpus only": total["corpus_rate"], "generated only": total["generated_rate"],
             "catalogue, generated vs corpus": f"{share['generated']} / {share['corpus']} = {share['ratio']}"}
    summary = ('<div class="summary"><h2>Summary</h2><dl class="facts">'
               + "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in facts.items()) + "</dl></div>")
    rows = []
    for r in results:
        status_class = {"killed": "pass", "timeout": "pass", "survived": "fail", "equivalent": "expected-fail",
                        "broken": "skip"}[r.status]
        replays = "".join(f'<pre class="cmd">{_esc(c)}</pre>' for c in _replays(r, meta))
        kills = ", ".join(f"{_esc(k['case'])} ({_esc(k['outcome'])})" for k in r.kills[:8])
        more = f" and {len(r.kills) - 8} more" if len(r.kills) > 8 else ""
        blamed = "" if r.blamed is None else f"<p>blamed on its rule: {'yes' if r.blamed else 'no'}" \
            f" (the run blamed {_esc(', '.join(r.failing_rules[:10]))})</p>"
        note = f'<p class="note">{_esc(r.reason or r.detail)}</p>' if (r.reason or r.detail) else ""
        rows.append(
            f'<details class="case" id="m-{_esc(r.mutant.id)}"><summary><span class="badge {status_class}">'
            f"{_esc(r.status)}</span> {_esc(r.mutant.title or r.mutant.id)} <small>{_esc(r.mutant.module)}:"
            f"{r.mutant.line} · {_esc(r.mutant.operator)} · {_esc(', '.join(r.mutant.rules) or '-')} · "
            f"corpus {r.by_corpus}, generated {r.by_generated}</small></summary>"
            f"<p><code>{_esc(r.mutant.change)}</code></p>{note}{blamed}"
            + (f"<p>killed by {kills}{more}</p>" if kills else "") + replays
            + f'<details class="scenario"><summary>diff</summary><pre>{_esc(r.mutant.diff())}</pre></details></details>')
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{title}</title><style>{CSS}</style></head><body>"
            f'<header class="page"><h1>{title}</h1><p>How many faults of an implementation the default run of '
            "dsh-conformance catches: mutants of the oracle, each run as an implementation under test.</p></header>"
            f'<main><div class="summaries">{summary}</div>'
            f"<h2>Kill rate per theme</h2>{_html_rates(by_theme(results))}"
            f"<h2>Kill rate per rule</h2>{_html_rates(by_rule(results))}"
            f"<h2>Mutants</h2>{''.join(rows)}</main></body></html>\n")


__all__ = ["jsonl", "markdown", "html", "console", "tally", "by_theme", "by_rule", "generated_share"]
