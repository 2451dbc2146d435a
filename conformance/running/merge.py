"""``dsh-conformance merge``: the reports of a run's M shards (``run --shard K/M``) joined
into the report the unsharded run writes, as wpt.fyi joins a CI matrix's chunks.

The corpus records come in shard order (each shard holds a contiguous slice, in the run's
order). The generated draws too: a shard's attempts follow the shard before it, so the
draws an unsharded run judges are the shards' in order until the first divergence. The
shard holding it shrank it as the whole run would have; the draws of the shards after it
were never judged by the whole run and are dropped. Without a divergence the shards'
folded cases are folded again (their draws, outcomes and rules added up). The footer is
worked out again from the joined records: counts, rule outcomes, the expectations gone
stale (a listed rule only the whole run can call stale), the profiles left unscored, and
the exit code.

The reports are data (read with the same limits and refusals as every reader's: a
special file, a torn or foreign record). Reports of different runs are refused in one
line, exit 2: another suite version, spec, implementation, profiles, seed, examples,
corpus or options, a shard missing, twice or of another M, or a shard that did not finish.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from typing import Any

from dsh_conformance.argtypes import UsageError
from dsh_conformance.reporting.report import (
    CaseRecord,
    Footer,
    Header,
    Outcome,
    Report,
    ReportWriter,
    differs,
    now,
    read_report,
    rule_outcomes,
    shown,
)
from dsh_conformance.reporting.scores import SCORED
from dsh_conformance.reporting.skips import footer_skips, too_many_skipped
from dsh_conformance.running.expectations import Expectations
from dsh_conformance.running.parallel import account
from dsh_conformance.running.properties import folded
from dsh_conformance.spec.rules import rules
from dsh_conformance.textio.outputs import EXIT_OUTPUT, OutputLock, check_distinct, check_writable
from dsh_conformance.textio.terminal import say

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_BROKEN = 0, 1, 2, 3
_IDENTITY = ("name", "version", "language")


class MergeError(ValueError):
    """Reports that are not the shards of one run (a usage error, exit 2)."""


def _shard(report: Report) -> tuple[int, int]:
    if report.header.shard is None:
        raise MergeError(f"{report.path}: not the report of a shard (run --shard K/M)")
    k, m = report.header.shard.split("/")
    return int(k), int(m)


def check(reports: list[Report]) -> list[Report]:
    """The reports in shard order, once they are known to be the M shards of one run."""
    first = reports[0]
    m = _shard(first)[1]
    by_k: dict[int, Report] = {}
    for r in reports:
        k, mm = _shard(r)
        if mm != m:
            raise MergeError(f"{r.path}: shard {k}/{mm}, but {first.path} is a shard of {m}")
        if k in by_k:
            raise MergeError(f"{r.path}: shard {k}/{m} twice (also {by_k[k].path})")
        by_k[k] = r
        why = differs(r, first)
        if why:
            raise MergeError(why)
        for name in _IDENTITY:
            if r.header.implementation.get(name) != first.header.implementation.get(name):
                raise MergeError(f"{r.path}: another implementation than {first.path} (its {name} "
                                 f"{shown(r.header.implementation.get(name))} against "
                                 f"{shown(first.header.implementation.get(name))})")
        if r.footer is None:
            raise MergeError(f"{r.path}: shard {k}/{m} did not finish (no footer: killed, or still going)")
        if first.footer is not None and r.footer.listed != first.footer.listed:
            raise MergeError(f"{r.path}: another run than {first.path}: its expectations list other ids")
        if r.footer.exit not in (EXIT_OK, EXIT_FAIL, EXIT_BROKEN):
            raise MergeError(f"{r.path}: shard {k}/{m} ended with exit {r.footer.exit} "
                             f"({r.footer.stopped or 'its report is incomplete'})")
    missing = sorted(set(range(1, m + 1)) - set(by_k))
    if missing:
        raise MergeError(f"shard {', '.join(f'{k}/{m}' for k in missing)} missing (merge takes all {m} reports)")
    return [by_k[k] for k in range(1, m + 1)]


def _generated(shards: list[Report], seed: int | None) -> list[CaseRecord]:
    """The generated records of the whole run: each shard's in turn, until the first that
    did not fold its draws (a shrunk divergence, or a stop); else the folds folded."""

    out: list[CaseRecord] = []
    seen: set[str] = set()
    prior = 0  # draws of the shards before
    outcomes: collections.Counter[Outcome] = collections.Counter()
    reached: set[str] = set()
    skips: collections.Counter[str] = collections.Counter()  # skipped draws per profile, and `all`
    duration = 0
    folds = 0
    for r in shards:
        for rec in (c for c in r.cases if c.source == "property"):
            if rec.draws is None:  # a draw that errored, recorded as drawn
                if rec.id not in seen:
                    seen.add(rec.id)
                    out.append(rec)
                continue
            if rec.id.startswith("generated-seed-") and rec.outcome != Outcome.NOT_RUN:
                folds += 1
                prior += rec.draws
                outcomes.update({Outcome(o): n for o, n in (rec.draw_outcomes or {}).items()})
                skips.update(rec.skipped_draws or {})
                reached.update(rec.rules)
                duration += rec.duration_ms
                continue
            # The shrunk divergence, or the run's stop: the whole run ends its draws here.
            update: dict[str, Any] = {"draws": prior + rec.draws}
            if rec.outcome == Outcome.NOT_RUN and rec.message:
                update["message"] = re.sub(r"^stopped after [0-9]+ ", f"stopped after {prior + rec.draws} ",
                                           rec.message)
            return [*out, rec.model_copy(update=update)]
    if folds:
        out.append(folded(seed or 0, prior, outcomes, reached, duration, dict(skips) if skips else None))
    return out


def _stale(shards: list[Report], records: list[CaseRecord]) -> list[str]:
    """The expectations gone stale in the whole run: the shards' footers keep the ids their
    expectations list (``Footer.listed``, the same in every shard of one run)."""

    listed = shards[0].footer.listed if shards[0].footer is not None else None
    if not listed:
        return []
    return Expectations(rules=dict.fromkeys(listed.get("rules", []), ""), cases=dict.fromkeys(listed.get("cases", []), ""),
                        errors=dict.fromkeys(listed.get("errors", []), "")).stale(records)


def _exit(records: list[CaseRecord], stale: list[str], unscored: list[str], stopped: str | None,
          max_skipped: float | None = None) -> int:
    """``Runner.exit_code`` of the whole run, from its records."""

    class _Seen:
        broken = False
        judged = errors = 0

    seen = _Seen()
    for rec in records:
        account(seen, rec)
    if seen.broken or stopped or (seen.errors and not seen.judged and any(r.outcome == Outcome.ERROR for r in records)):
        return EXIT_BROKEN
    unexpected = any(r.outcome in (Outcome.FAIL, Outcome.ERROR) for r in records)
    nothing = bool(records) and all(r.outcome == Outcome.NOT_SCORED for r in records)
    skipped = too_many_skipped(records, max_skipped)
    return EXIT_FAIL if unexpected or stale or unscored or nothing or skipped else EXIT_OK


def _unscored(header: Header, records: list[CaseRecord]) -> list[str]:
    outcomes = rule_outcomes(records)
    asked = header.options.get("profiles", "").split()
    return sorted(p for p in asked
                  if not any(outcomes.get(r.id) in SCORED for r in rules().values() if r.profile == p))


def merge(reports: list[Report], max_skipped: float | None = None) -> tuple[Header, list[CaseRecord], Footer]:
    """The header, records and footer of the unsharded run the shards are parts of."""
    shards = check(reports)
    header = shards[0].header.model_copy(update={"shard": None,
                                                 "started": min(r.header.started for r in shards)})
    records = [c for r in shards for c in r.cases if c.source != "property"]
    records += _generated(shards, header.seed)
    stopped = next((r.footer.stopped for r in shards if r.footer is not None and r.footer.stopped), None)
    stale = _stale(shards, records)
    unscored = _unscored(header, records)
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec.outcome.value] = counts.get(rec.outcome.value, 0) + 1
    footer = Footer(counts=counts, rules=rule_outcomes(records), stale=stale, unscored=unscored,
                    skipped=footer_skips(records), too_many_skipped=too_many_skipped(records, max_skipped),
                    exit=_exit(records, stale, unscored, stopped, max_skipped), finished=now(), stopped=stopped)
    return header, records, footer


def cmd_merge(args: argparse.Namespace) -> int:
    out = check_writable(args.output, "--output")
    check_distinct(args.output, "--output", args.reports)
    try:
        header, records, footer = merge([read_report(p) for p in args.reports], args.max_skipped)
    except MergeError as e:
        raise UsageError(str(e)) from None
    with OutputLock(out, "--output"):
        writer = ReportWriter(out)
        for rec in (header, *records, footer):
            writer.write(rec)
        writer.close()
    if writer.failed:
        say(f"error: --output {args.output}: the merged report is incomplete: {writer.failed}", file=sys.stderr)
        return EXIT_OUTPUT
    shown = ", ".join(f"{n} {o}" for o, n in sorted(footer.counts.items()))
    say(f"merged {len(args.reports)} shards into {args.output}: {len(records)} cases ({shown}); exit {footer.exit}")
    return footer.exit


__all__ = ["merge", "check", "cmd_merge", "MergeError"]
