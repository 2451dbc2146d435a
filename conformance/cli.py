"""The ``dsh-conformance`` command.

``run`` checks an implementation under test (by default the embedded oracle, over the
protocol) against the corpus and generated scenarios and prints the compliance table;
``replay`` re-runs one case file; ``report`` renders reports as a compliance matrix;
``expectations update`` writes an expectations file from a report; ``bench`` measures
throughput; ``catalogs`` and ``docs`` keep the generated files in step.

Exit codes: 0 all pass (or only expected failures); 1 conformance failures or stale
expectations; 2 usage error or bad input file; 3 the implementation is broken (cannot
start, crashes, hangs, breaks the protocol).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from oracle import ScenarioFileError, load_scenario, parse_scenario, run_scenario

from . import __version__
from .corpus import CASES
from .expectations import Expectations, ExpectationsError, from_records, load_expectations
from .iut import InProcessIUT, IUTFailure, ProcessIUT, embedded_oracle
from .report import (CaseRecord, Outcome, ReportError, ReportWriter, new_header, read_report,
                     render_html, render_json, render_junit, render_markdown)
from .rules import ORACLE_PROFILES, PROFILES, rules
from .runner import EXIT_BROKEN, EXIT_FAIL, EXIT_OK, EXIT_USAGE, Progress, Runner, corpus_items

ROOT = Path(__file__).resolve().parent.parent
ADAPTER = ROOT / "tools" / "dsh-adapter"


class UsageError(Exception):
    pass


# ------------------------------------------------------------------------- IUTs

def make_iut(spec: str | None, timeout: float, validate: bool) -> ProcessIUT | InProcessIUT:
    """``None``/``oracle``: the embedded oracle over the protocol; ``dsh``: the real DSH
    package through the Node adapter; ``py:MODULE``: a Python IUT in-process (the module
    has ``started()`` and ``answer(seq, scenario)``); anything else: a command line."""
    if spec in (None, "oracle"):
        return ProcessIUT([sys.executable, "-m", "oracle", "serve"], timeout, validate)
    if spec == "oracle-inprocess":
        return embedded_oracle(validate)
    if spec == "dsh":
        if not (ADAPTER / "node_modules").is_dir():
            raise IUTFailure("start", f"the DSH adapter is not installed: run `npm ci --prefix {ADAPTER}`")
        return ProcessIUT(["node", str(ADAPTER / "adapter.mjs")], timeout, validate)
    if spec.startswith("py:"):
        import importlib

        try:
            module = importlib.import_module(spec[3:])
        except ImportError as e:
            raise UsageError(f"--impl {spec}: cannot import {spec[3:]}: {e}") from None
        return InProcessIUT(module.started(), module.answer, validate)
    return ProcessIUT(shlex.split(spec), timeout, validate)


def _expectations(path: str | None) -> Expectations:
    if path is None:
        return Expectations()
    return load_expectations(path)


# ------------------------------------------------------------------------- run

def cmd_run(args: argparse.Namespace) -> int:
    profiles = set(args.profile or ORACLE_PROFILES)
    expectations = _expectations(args.expectations)
    items = corpus_items(Path(args.cases)) if not args.no_corpus else []
    if not items and args.examples == 0:
        raise UsageError("nothing to run: no corpus cases and --examples 0")
    iut = make_iut(args.impl, args.timeout, args.validate)
    with contextlib.ExitStack() as stack:
        started = iut.start()
        stack.callback(iut.close)
        report_stream = stack.enter_context(open(args.report, "w", encoding="utf-8")) if args.report else None
        writer = ReportWriter(report_stream)
        header = new_header(started.implementation.model_dump(), sorted(profiles & set(started.profiles)),
                            args.seed, args.examples)
        writer.write(header)
        runner = Runner(iut, profiles, expectations, writer, Path(args.failures))
        progress = Progress(len(items))
        runner.run_cases(items, progress)
        progress.finish()
        if args.examples:
            tick = Progress(args.examples)
            runner.run_properties(args.examples, args.seed, frozenset(runner.iut_profiles),
                                  lambda n: tick.step(f"generated scenario {n}", Outcome.PASS))
            tick.finish()
        footer = runner.finish()
    _print_summary(started.implementation.model_dump(), runner.records, footer.stale, profiles, footer.exit)
    if args.junit:
        from .report import Report

        Path(args.junit).write_text(render_junit(Report(args.report or "-", header, runner.records)), encoding="utf-8")
    return footer.exit


def _print_summary(impl: dict[str, Any], records: list[CaseRecord], stale: list[str], profiles: set[str], code: int) -> None:
    from .report import rule_outcomes

    outcomes = rule_outcomes(records)
    print(f"dsh-conformance {__version__}: {impl.get('name')} {impl.get('version', '')} "
          f"({impl.get('language', '?')}), profiles {', '.join(sorted(profiles))}\n")
    print(f"{'profile':<10} {'rule':<5} {'title':<56} {'cases':>5}  outcome")
    cited: dict[str, int] = {}
    for r in records:
        for rule in r.rules:
            cited[rule] = cited.get(rule, 0) + 1
    for rule in rules().values():
        if rule.profile not in profiles:
            continue
        o = outcomes.get(rule.id)
        print(f"{rule.profile:<10} {rule.id:<5} {rule.title[:56]:<56} {cited.get(rule.id, 0):>5}  {o or 'no case'}")
    bad = [r for r in records if r.outcome in (Outcome.FAIL, Outcome.ERROR, Outcome.TIMEOUT, Outcome.INVALID)]
    for r in bad[:20]:
        print(f"\n{r.outcome.value.upper()} {r.id}" + (f" ({r.case_file})" if r.case_file else ""))
        if r.message:
            print("  " + r.message.replace("\n", "\n  "))
    if len(bad) > 20:
        print(f"\n... and {len(bad) - 20} more (see the report)")
    for s in stale:
        print(f"\nSTALE expectation: {s}")
    counts: dict[str, int] = {}
    for r in records:
        counts[r.outcome.value] = counts.get(r.outcome.value, 0) + 1
    print(f"\n{len(records)} cases: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
          + f"; exit {code}")


# ------------------------------------------------------------------------- replay

def cmd_replay(args: argparse.Namespace) -> int:
    path = Path(args.case)
    scenario = load_scenario(path)  # a bad file is a usage error (exit 2)
    doc = json.loads(path.read_text(encoding="utf-8"))
    profiles = set(args.profile or ORACLE_PROFILES)
    iut = make_iut(args.impl, args.timeout, args.validate)
    with contextlib.closing(iut):
        iut.start()
        runner = Runner(iut, profiles, _expectations(args.expectations))
        rec = runner.decide(scenario.id or path.stem, doc, "replay", str(path), scenario)
    print(f"{rec.outcome.value}: {rec.id} (rules {', '.join(rec.rules) or '-'})")
    if args.all and runner.last is not None and rec.outcome in (Outcome.FAIL, Outcome.XFAIL):
        _print_all_divergences(*runner.last, rec)
    elif rec.message:
        print(rec.message)
    if rec.outcome in (Outcome.ERROR, Outcome.TIMEOUT, Outcome.INVALID):
        return EXIT_BROKEN
    return EXIT_FAIL if rec.outcome == Outcome.FAIL else EXIT_OK


def _print_all_divergences(expected: Any, actual: Any, profiles: set[str], rec: CaseRecord) -> None:
    """``replay --all``: every divergence of the case, each with its place and rules, then
    the invariants the implementation's trace breaks."""
    from .compare import divergences

    found = divergences(expected, actual, profiles)
    print(f"{len(found)} divergence{'s' if len(found) != 1 else ''}, {len(rec.violations)} broken invariant"
          f"{'s' if len(rec.violations) != 1 else ''}")
    for n, d in enumerate(found, 1):
        print(f"\n{n}. " + d.describe().replace("first divergence at ", "at ", 1))
    for v in rec.violations:
        print(f"\ninvariant {v['rule']}: {v['message']}")


# ------------------------------------------------------------------------- report, expectations

def cmd_report(args: argparse.Namespace) -> int:
    reports = [read_report(p) for p in args.reports]
    render = {"md": render_markdown, "html": render_html, "json": render_json}[args.format]
    base = Path(args.output).resolve().parent if args.output else Path.cwd()
    text = render(reports, args.title, base, args.note)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_expectations(args: argparse.Namespace) -> int:
    report = read_report(args.report)
    previous = load_expectations(args.output) if Path(args.output).is_file() else None
    text = from_records(report.name, report.cases, previous)
    Path(args.output).write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return EXIT_OK


# ------------------------------------------------------------------------- bench

def cmd_bench(args: argparse.Namespace) -> int:
    """Scenarios per second, side by side in one run: the oracle in-process, the oracle
    over the protocol, and ``--impl`` when given."""
    items = corpus_items(Path(args.cases))
    docs = [doc for _, doc, _ in items]
    rows: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    for _ in range(args.repeat):
        for doc in docs:
            run_scenario(parse_scenario(doc))
    rows.append(("oracle in-process", len(docs) * args.repeat / (time.perf_counter() - t0)))
    for label, spec in [("oracle over the protocol", None)] + ([(f"--impl {args.impl}", args.impl)] if args.impl else []):
        iut = make_iut(spec, args.timeout, False)
        with contextlib.closing(iut):
            iut.start()
            t0 = time.perf_counter()
            seq = 0
            for _ in range(args.repeat):
                for doc in docs:
                    seq += 1
                    iut.run(seq, doc)
            rows.append((label, len(docs) * args.repeat / (time.perf_counter() - t0)))
    base = rows[0][1]
    print(f"{len(docs)} scenarios x {args.repeat}")
    print(f"{'implementation':<32} {'scenarios/s':>12} {'ratio':>8}")
    for label, rate in rows:
        print(f"{label:<32} {rate:>12.1f} {rate / base:>8.3f}")
    return EXIT_OK


# ------------------------------------------------------------------------- catalogs

def cmd_catalogs(args: argparse.Namespace) -> int:
    from tools import catalogs

    if args.action == "generate":
        for path in catalogs.write():
            print(f"wrote {path.relative_to(catalogs.ROOT)}")
        return EXIT_OK
    problems = catalogs.check()
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print("catalogs are up to date")
    return EXIT_FAIL if problems else EXIT_OK


# ------------------------------------------------------------------------- parser

def _iut_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--impl", help="the implementation under test: 'oracle' (default), 'dsh' (the real package "
                   "via the Node adapter), 'py:MODULE' (in-process), or a command line")
    p.add_argument("--profile", action="append", choices=list(PROFILES), help="profiles to check (repeatable; "
                   "default: core, reference, loop)")
    p.add_argument("--expectations", help="a YAML file of expected failures of this implementation")
    p.add_argument("--validate", action="store_true", help="check every IUT message against the protocol schemas")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds an IUT may take per scenario (default 30)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dsh-conformance", description="Conformance suite for the DSH tool execution pipeline.")
    p.add_argument("--version", action="version", version=f"dsh-conformance {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the suite against an implementation and print the compliance table")
    _iut_options(run)
    run.add_argument("--examples", type=int, default=100, help="generated scenarios (default 100; 0: corpus only)")
    run.add_argument("--seed", type=int, default=0, help="seed of the generated scenarios (default 0)")
    run.add_argument("--report", help="write the JSON-lines report here")
    run.add_argument("--junit", help="write JUnit XML here")
    run.add_argument("--cases", default=str(CASES), help="the corpus directory (default: the built-in corpus)")
    run.add_argument("--no-corpus", action="store_true", help="run generated scenarios only")
    run.add_argument("--failures", default="dsh-failures", help="where shrunk counterexamples are saved")
    run.set_defaults(func=cmd_run)

    replay = sub.add_parser("replay", help="re-run one case file and print the first divergence")
    replay.add_argument("case")
    replay.add_argument("--all", action="store_true", help="list every divergence, each with its place and rules")
    _iut_options(replay)
    replay.set_defaults(func=cmd_replay)

    rep = sub.add_parser("report", help="render reports as a compliance matrix (rules x implementations)")
    rep.add_argument("reports", nargs="+")
    rep.add_argument("--format", choices=["md", "html", "json"], default="md")
    rep.add_argument("-o", "--output")
    rep.add_argument("--title", default="Compliance matrix")
    rep.add_argument("--note", help="a line of text under the title (for example how to regenerate the page)")
    rep.set_defaults(func=cmd_report)

    exp = sub.add_parser("expectations", help="write an expectations file from a report")
    exp.add_argument("action", choices=["update"])
    exp.add_argument("--report", required=True)
    exp.add_argument("--output", required=True)
    exp.set_defaults(func=cmd_expectations)

    bench = sub.add_parser("bench", help="scenarios per second: oracle in-process, over the protocol, and --impl")
    bench.add_argument("--impl")
    bench.add_argument("--cases", default=str(CASES))
    bench.add_argument("--repeat", type=int, default=3)
    bench.add_argument("--timeout", type=float, default=30.0)
    bench.set_defaults(func=cmd_bench)

    cat = sub.add_parser("catalogs", help="generate or check the generated catalogs")
    cat.add_argument("action", choices=["generate", "check"])
    cat.set_defaults(func=cmd_catalogs)

    from tools import docs_cli

    docs_cli.register(sub)
    return p


def _readable_streams() -> None:
    """What this command prints is text for people (JSON it prints is escaped already, see
    oracle.jsontext): a lone surrogate an implementation sent in a message is shown as its
    escape instead of ending the command with a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> int:
    _readable_streams()
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, ScenarioFileError, ExpectationsError, ReportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except IUTFailure as e:
        print(f"error: the implementation is broken: {e.message}", file=sys.stderr)
        if e.stderr:
            print(e.stderr, file=sys.stderr)
        return EXIT_BROKEN


if __name__ == "__main__":
    sys.exit(main())
