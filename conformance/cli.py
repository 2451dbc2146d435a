"""The ``dsh-conformance`` command.

``run`` checks an implementation under test (by default the embedded oracle, over the
protocol) against the corpus and generated scenarios and prints the compliance table;
``replay`` re-runs one case file; ``report`` renders reports as a compliance matrix; ``diff``
says what changed between two runs;
``expectations update`` writes an expectations file from a report; ``bench`` measures
throughput; ``catalogs`` and ``docs`` keep the generated files in step.

Exit codes: 0 all pass (or only expected failures and errors); 1 conformance failures,
unexpected errors or stale expectations; 2 usage error or bad input file (before any
work); 3 the implementation is broken (cannot start, crashes, hangs, breaks the protocol,
was declared broken by the early stop, or errored on every case); 4 an output could not be
written completely once the work had begun (a full disk: the report, the JUnit file or a saved
case is incomplete, and stderr says which); 130 (143) interrupted by Ctrl-C (SIGTERM).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import shlex
import sys
from pathlib import Path
from typing import Any

from dsh_conformance import __version__
from dsh_conformance.argtypes import UsageError
from dsh_conformance.command_line import parser  # the grammar, in a light module (--help imports nothing of the rest)
from dsh_conformance.defaults import DEFAULT_EXAMPLES
from dsh_conformance.iut.connect import make_iut
from dsh_conformance.iut.connection import IUTFailure, NotAnImplementation
from dsh_conformance.kit.scenario import load_scenario_document
from dsh_conformance.oracle import ScenarioFileError, ScenarioRunError, run_scenario
from dsh_conformance.reporting.all_divergences import print_all_divergences
from dsh_conformance.reporting.report import (
    Outcome,
    Report,
    ReportError,
    ReportWriter,
    new_header,
    partial,
    read_report,
    refuse_partial,
    replay_line,
    rule_outcomes,
)
from dsh_conformance.reporting.report_formats import render_json, render_junit, render_markdown
from dsh_conformance.reporting.report_html import render_html
from dsh_conformance.reporting.scores import (
    BLAMED,
    CITING,
    LEGEND,
    NO_COUNT,
    SCORE,
    case_totals,
    outcome_counts,
    profile_scores as scores_of,
    rule_counts,
)
from dsh_conformance.reporting.skips import describe as describe_skips
from dsh_conformance.running import interrupts, parallel, shards
from dsh_conformance.running.ending import EXIT_BROKEN, EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from dsh_conformance.running.expectations import ExpectationsError, from_records, load_expectations, load_named
from dsh_conformance.running.interrupts import Interrupted
from dsh_conformance.running.progress import Progress
from dsh_conformance.running.references import expected_traces
from dsh_conformance.running.runner import Runner
from dsh_conformance.running.selection import (
    SelectionError,
    describe,
    gather,
    is_selective,
    left_out,
    nearest,
    rule_ids,
    select,
)
from dsh_conformance.spec.corpus import CASES, corpus_name
from dsh_conformance.spec.rules import ORACLE_PROFILES, PROFILES, rules
from dsh_conformance.textio.outputs import (
    EXIT_OUTPUT,
    Ledger,
    OutputError,
    OutputLock,
    OutputTampered,
    OutputWriteError,
    check_directory,
    check_distinct,
    check_writable,
    clear,
    incomplete_outputs,
    write_atomic,
)
from dsh_conformance.textio.portable import BUILTIN_CORPUS, portable_command, portable_path
# Printed text may be an implementation's or a file's: shown escaped (conformance.terminal).
from dsh_conformance.textio.terminal import one_line, readable_streams, say as print  # noqa: A001
from dsh_conformance.tools import catalogs


_expectations = load_named  # a file, or the name of one the suite ships


def _asked_profiles(args: argparse.Namespace) -> list[str]:
    """The profiles named by ``--profile`` (repeatable) and ``--profiles a,b`` together."""
    asked = list(args.profile or [])
    for value in args.profiles or []:
        for p in (part.strip() for part in value.split(",")):
            if p not in PROFILES:
                raise UsageError(f"--profiles {value}: unknown profile {p!r} (the profiles are {', '.join(PROFILES)})")
            asked.append(p)
    return list(dict.fromkeys(asked))


def _profiles(args: argparse.Namespace) -> tuple[set[str], set[str]]:
    """The profiles to check, and those the run must score (the ones named explicitly)."""
    asked = _asked_profiles(args)
    for p in asked:
        if p not in ORACLE_PROFILES:
            raise UsageError(f"--profile {p}: the oracle does not implement this profile yet, so no case can be "
                             f"judged under it (it implements {', '.join(ORACLE_PROFILES)})")
    chosen = set(asked or ORACLE_PROFILES)
    if chosen - {"core"}:
        chosen.add("core")  # section 2: every profile needs core (its cases cite core rules too)
    return chosen, set(asked)


def _outputs(pairs: list[tuple[str, str | None]]) -> list[OutputLock]:
    """Locks on the output paths, checked before any work (one path per option)."""
    seen: dict[Path, str] = {}
    locks = []
    for option, value in pairs:
        if value is None:
            continue
        p = check_writable(value, option)
        key = p.resolve()
        if key in seen:
            raise UsageError(f"{option} {value}: the same file as {seen[key]}")
        seen[key] = option
        locks.append(OutputLock(p, option))
    return locks


def cmd_run(args: argparse.Namespace) -> int:
    profiles, required = _profiles(args)
    locks = _outputs([("--report", args.report), ("--junit", args.junit)])
    for option, value in (("--report", args.report), ("--junit", args.junit)):
        if value is not None and args.expectations and Path(args.expectations).exists():
            check_distinct(value, option, [args.expectations])
    ledger = Ledger()  # what the run writes, checked at its end, whatever ended it (exit 4 if not its own)
    with contextlib.ExitStack() as outer:
        for lock in locks:
            outer.enter_context(lock)
        # An earlier run's files go first, before anything can fail: a run refused at its
        # handshake (exit 3) or by its command line (exit 2) leaves no green file behind.
        clear([lock.path for lock in locks])
        outer.callback(_vouch, ledger)
        code = _run(args, profiles, required, ledger)
    return code


def _vouch(ledger: Ledger) -> None:
    """OutputTampered (exit 4, one line) if a file the run wrote was replaced or changed by
    another process; run once the implementation is ended, so that nothing of it writes after."""
    problems = ledger.settle()
    if problems:
        raise OutputTampered("; ".join(problems))


def _run(args: argparse.Namespace, profiles: set[str], required: set[str], ledger: Ledger) -> int:
    expectations = _expectations(args.expectations)
    cases = Path(args.cases)
    failures = check_directory(args.failures, "--failures", create=False)
    if args.shard and (args.max_fail or args.fail_fast):
        raise UsageError("--shard with --max-fail or --fail-fast: a shard cannot count the whole run's failures")
    groups, items, left_out = _selected(args, cases)
    if not items and args.examples == 0:
        raise UsageError("nothing to run: no corpus cases and --examples 0")
    items = shards.cases_of(args.shard, items)
    for warning in expectations.unknown_cases({case_id for case_id, _, _ in items}):
        print(f"warning: {warning}", file=sys.stderr)
    iut = make_iut(args.impl, args.timeout, args.validate, args.start_timeout, build=getattr(args, "build", False),
                   ignore_scripts=getattr(args, "ignore_scripts", False))
    expected = _expected_traces(groups)  # the slow part (the oracle runs every case): after every usage check
    if args.jobs > 1:  # N instances, each in a worker (conformance.parallel); the spec is checked above
        iut = parallel.Pool(args.jobs, functools.partial(make_iut, args.impl, args.timeout, args.validate,
                                                         args.start_timeout), parallel.Settings(
            profiles, expectations, args.give_up_after, failures), items, expected, generated=args.examples > 0)
    with contextlib.ExitStack() as stack:
        # A normal end asks the IUT to stop; an interrupt or an error kills its process group.
        stack.push(lambda kind, value, tb: iut.close(graceful=kind is None))
        started = iut.start()
        writer = ReportWriter(args.report, ledger=ledger)
        stack.callback(writer.flush)  # whatever ends the run, the cases decided are in the report
        header = new_header(started.implementation.model_dump(), sorted(profiles & set(started.profiles)),
                            args.seed, args.examples)
        header.corpus = corpus_name(groups[0].directory) if groups else None
        header.options = _replay_options(args)
        header.shard = str(args.shard) if args.shard else None
        runner = Runner(iut, profiles, expectations, writer, failures, args.give_up_after, required,
                        max_fail=1 if args.fail_fast else args.max_fail, max_skipped=args.max_skipped,
                        shard=args.shard is not None)
        runner.ledger = ledger
        runner.left_out = left_out
        progress = Progress(sys.stderr, quiet=args.quiet)
        stack.callback(progress.close)
        begun = False  # the header is written: from then on, every ending writes a footer
        try:
            with interrupts.deferred():
                writer.write(header)
                begun = True
            progress.phase("corpus", len(items))
            parallel.run_corpus(runner, items, progress, expected)
            if args.examples:
                parallel.run_generated(runner, args.examples, args.seed, frozenset(runner.iut_profiles), progress,
                                       args.shard)
            progress.close()
            with interrupts.deferred():  # a signal now is this run's ending, or comes after its footer
                interrupts.check()
                footer = runner.finish()
        except IUTFailure as e:  # a worker of --jobs died (parallel.Pool): the report still gets its footer
            progress.close()
            if begun and not runner.finished:
                runner.finish(EXIT_BROKEN, stopped=f"the run stopped: {e.message}")
            raise
        except Interrupted as e:
            progress.close()
            e.report = args.report if begun else None
            if begun and not runner.finished:  # (a second signal now ends the process at once)
                runner.finish(e.code, stopped=e.what)
            if begun:  # what was decided until then, as a run's end shows it (issue 44)
                print(f"\nINTERRUPTED ({e.what}): a partial summary of the {len(runner.records)} case(s) decided")
                _print_summary(started.implementation.model_dump(), runner, [], profiles, e.code, args.report,
                               args.impl, _as_given(header, args, groups), True)
            raise
        _print_summary(started.implementation.model_dump(), runner, footer.stale, profiles, footer.exit,
                       args.report, args.impl, _as_given(header, args, groups), _narrowed(args))
        if args.junit:

            write_atomic(args.junit, render_junit(Report(args.report or "-", header, runner.records)), ledger)
        writer.close()
    return incomplete_outputs([writer.failed, *runner.unsaved], sys.stderr) or footer.exit


def _selected(args: argparse.Namespace, cases: Path) -> tuple[list[Any], list[tuple[str, dict[str, Any], str]],
                                                              frozenset[str]]:
    """The corpus cases the run's selection keeps (``conformance.selection``), and the rules
    cited by the cases it leaves out (not judged stale); ``args.examples`` is settled: a
    selection runs no generated scenarios unless ``--examples`` asks for them."""

    try:
        wanted = rule_ids(args.rule)
        unjudged: frozenset[str] = frozenset()
        if args.no_corpus:
            if is_selective(args.case, [], wanted, args.keyword):
                raise SelectionError("--no-corpus runs generated scenarios only: -k, --case and --rule choose "
                                     "corpus cases")
            groups: list[Any] = []
        else:
            groups, ids, files = gather(cases, args.case or [])
            chosen = select(groups, ids, wanted, args.keyword)
            unjudged = left_out(groups, chosen)
            if is_selective(ids, files, wanted, args.keyword):
                if not chosen:
                    raise SelectionError(f"no case matches the selection {describe(ids, files, wanted, args.keyword)}")
                if args.examples is None:
                    args.examples = 0
            groups = chosen or groups[:1]  # an empty corpus still names its directory
    except SelectionError as e:
        raise UsageError(str(e)) from None
    if args.examples is None:
        args.examples = DEFAULT_EXAMPLES
    return groups, [item for g in groups for item in g.items], unjudged


def _expected_traces(groups: list[Any]) -> dict[str, Any]:
    """The oracle's trace of each case kept; a case the oracle cannot run is a bad input
    file, found before any work."""
    expected: dict[str, Any] = {}
    for g in groups:
        expected.update(expected_traces(g.items, g.directory))
    return expected


def _as_given(header: Any, args: argparse.Namespace, groups: list[Any]) -> Any:
    """The header as the console's replay lines read it: the options and the corpus as given
    (``_replay_options``)."""
    update: dict[str, Any] = {"options": {**header.options, **_replay_options(args, portable=False)}}
    if groups and header.corpus not in (None, BUILTIN_CORPUS):
        update["corpus"] = str(groups[0].directory)
    return header.model_copy(update=update)


def _replay_options(args: argparse.Namespace, portable: bool = True) -> dict[str, str]:
    """The options a replay of one of this run's cases repeats: without the machine's paths
    for the report (read on other machines), as given for the console's FAIL blocks (a
    command to paste where the run was started: a path made portable may not lead there)."""
    out = {"impl": (portable_command(args.impl) if portable else args.impl) if args.impl else "oracle"}
    if args.expectations:
        out["expectations"] = portable_path(args.expectations) if portable else args.expectations
    if _asked_profiles(args):
        out["profiles"] = " ".join(_asked_profiles(args))
    return out


def _narrowed(args: argparse.Namespace) -> bool:
    """Whether the run's cases are a part of the corpus: a selection, a shard, no corpus."""
    return bool(args.keyword or args.case or args.rule or args.shard or args.no_corpus)


def _print_summary(impl: dict[str, Any], runner: Runner, stale: list[str], profiles: set[str], code: int,
                   report: str | None, spec: str | None, header: Any, narrowed: bool) -> None:

    records = runner.records
    outcomes = rule_outcomes(records)
    name, version, language = (one_line(str(impl.get(k, d))) for k, d in (("name", None), ("version", ""),
                                                                           ("language", "?")))
    print(f"dsh-conformance {__version__}: {name} {version} ({language}), profiles {', '.join(sorted(profiles))}\n")
    counts = rule_counts(records)
    print(f"{'profile':<10} {'rule':<5} {'title':<56} {CITING:>6} {BLAMED:>6}  outcome")
    hidden = 0
    for rule in rules().values():
        if rule.profile not in profiles:
            continue
        o = outcomes.get(rule.id)
        if o is None and narrowed:  # a selection's table holds the rules its cases decide
            hidden += 1
            continue
        n = counts.get(rule.id, NO_COUNT)
        print(f"{rule.profile:<10} {rule.id:<5} {rule.title[:56]:<56} {n.citing:>6} {n.blamed:>6}  {o or 'no case'}")
    print(f"({LEGEND}" + (f"; {hidden} rules no case of this selection cites are not shown" if hidden else "") + ")")
    bad = [r for r in records if r.outcome in (Outcome.FAIL, Outcome.ERROR, Outcome.TIMEOUT, Outcome.INVALID)]
    for r in bad[:20]:
        print(f"\n{r.outcome.value.upper()} {r.id}" + (f" ({r.case_file})" if r.case_file else ""))
        if r.message:
            print("  " + r.message.replace("\n", "\n  "))
        if r.source == "corpus" or r.case_file:  # a folded generated case has no file: its draws are saved below
            print(f"  replay: {replay_line(header, r)}")
    if len(bad) > 20:
        where = f"all of them are in the report {report}" if report else "run with --report FILE to keep them all"
        print(f"\n... and {len(bad) - 20} more ({where})")
    not_run = sum(r.outcome == Outcome.NOT_RUN for r in records)
    if runner.max_failed:
        print(f"\nSTOPPED: the run stopped after {runner.unexpected} unexpected failure(s) (--max-fail "
              f"{runner.max_fail}); {not_run} case(s) not run")
    elif runner.gave_up:
        print(f"\nSTOPPED: the implementation was declared broken after {runner.give_up_after} consecutive timeouts "
              f"or crashes; {not_run} case(s) not run (--give-up-after N changes the threshold, 0 never stops)")
    impl = f" --impl {shlex.quote(spec)}" if spec else ""
    shrunk = [path for what, path in runner.saved if what == "shrunk counterexample"]
    drawn = [path for what, path in runner.saved if what != "shrunk counterexample"]
    for path in shrunk:
        print(f"\nsaved the shrunk counterexample: {path}\n  replay it: dsh-conformance replay {shlex.quote(path)}{impl}")
    if drawn:
        print(f"\nsaved {len(drawn)} generated scenario(s) that ended in an error, a timeout or a crash (not shrunk), "
              f"under {Path(drawn[0]).parent}\n  replay one: dsh-conformance replay {shlex.quote(drawn[0])}{impl}")
    for s in stale:
        print(f"\nSTALE expectation: {s}")
    if runner.nothing_scored():
        why = sorted({r.message for r in records if r.message})
        print("\nNOTHING SCORED: no case of the run could be scored" + "".join(f"\n  {m}" for m in why[:5]))
    for profile, why in runner.unscored_profiles().items():
        print(f"\nNOT SCORED: profile {profile} was asked for and no rule of it was scored: {why}")
    if skips := describe_skips(records):
        print(f"\n{skips}")
    if too_many := runner.too_many_skipped():
        print(f"\nTOO MANY SKIPPED: {too_many}")
    score = ", ".join(f"{s.profile} {s}" for s in scores_of(records, profiles))
    print(f"\nscore ({SCORE}): {score}")
    print(f"\n{case_totals(records)}: " + ", ".join(f"{v} {k}" for k, v in sorted(outcome_counts(records).items()))
          + f"; exit {code}")


def cmd_replay(args: argparse.Namespace) -> int:
    path = Path(args.case)
    if not path.exists() and (CASES / f"{args.case}.json").is_file():
        path = CASES / f"{args.case}.json"  # a corpus case named by its id, as reports name it
    elif not path.exists():

        raise UsageError(f"{args.case}: no such case file, nor a case of that id in the built-in corpus "
                         f"({portable_path(CASES)})" + nearest(path.stem, [p.stem for p in CASES.glob("*.json")]))
    scenario, doc = load_scenario_document(path)  # a bad file is a usage error (exit 2)
    try:
        expected = run_scenario(scenario)
    except ScenarioRunError as e:
        raise ScenarioFileError(str(path), "$", str(e)) from None
    profiles, required = _profiles(args)
    iut = make_iut(args.impl, args.timeout, args.validate, args.start_timeout, build=getattr(args, "build", False),
                   ignore_scripts=getattr(args, "ignore_scripts", False))
    with contextlib.ExitStack() as stack:
        stack.push(lambda kind, value, tb: iut.close(graceful=kind is None))
        iut.start()
        runner = Runner(iut, profiles, _expectations(args.expectations), give_up_after=0)
        rec = runner.decide(scenario.id or path.stem, doc, "replay", portable_path(path), scenario, expected)
    print(f"{rec.outcome.value}: {rec.id} (rules {', '.join(rec.rules) or '-'})")
    unsupported = sorted(required - runner.iut_profiles)
    if unsupported:  # one case scores what it cites; a profile the implementation lacks is never scored
        print(f"NOT SCORED: profile {', '.join(unsupported)} was asked for and the implementation does not support it "
              f"(it supports {', '.join(iut.started.profiles) if iut.started else '-'})")
    if args.all and runner.last is not None and rec.outcome in (Outcome.FAIL, Outcome.XFAIL):
        print_all_divergences(*runner.last, rec)
    elif rec.message:
        print(rec.message)
    if rec.outcome in (Outcome.ERROR, Outcome.TIMEOUT, Outcome.INVALID):
        return EXIT_BROKEN
    return EXIT_FAIL if rec.outcome == Outcome.FAIL or unsupported else EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    if args.output:
        check_writable(args.output, "--output")
        check_distinct(args.output, "--output", args.reports)

    reports = [read_report(p) for p in args.reports]
    render = {"md": render_markdown, "html": render_html, "json": render_json}[args.format]
    base = Path(args.output).resolve().parent if args.output else Path.cwd()
    text = render(reports, args.title, base, args.note)
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_expectations(args: argparse.Namespace) -> int:
    check_writable(args.output, "--output")
    check_distinct(args.output, "--output", [args.report])
    report = read_report(args.report)
    why = partial(report)
    if not args.allow_partial:
        refuse_partial(report, "expectations written from it would miss the failures of the cases it lacks")
    previous = load_expectations(args.output) if Path(args.output).is_file() else None
    text = from_records(report.name, report.cases, previous)
    write_atomic(args.output, text)
    if why:
        print(f"warning: {args.report} is a partial report ({why})", file=sys.stderr)
    print(f"wrote {args.output}")
    return EXIT_OK


def cmd_catalogs(args: argparse.Namespace) -> int:
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


def main(argv: list[str] | None = None) -> int:
    readable_streams()
    return run_command(parser().parse_args(argv))


def run_command(args: argparse.Namespace) -> int:
    """The command the parsed ``args`` name, with the exit code of how it ended."""
    try:
        with interrupts.handled():
            interrupts.check()  # a signal while the command was being read
            return args.func(args)
    except Interrupted as e:
        print(f"dsh-conformance: {e.what}; nothing it started is left running"
              + (f", the report {e.report} holds the cases decided until then" if e.report else ""), file=sys.stderr)
        return e.code
    except KeyboardInterrupt:  # a Ctrl-C outside the handler (before it was installed)
        print("dsh-conformance: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OutputWriteError as e:  # once the work had begun: what it was writing is incomplete
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        return EXIT_OUTPUT
    except (UsageError, NotAnImplementation, ScenarioFileError, ExpectationsError, ReportError, OutputError) as e:
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except IUTFailure as e:
        print(f"error: the implementation is broken: {e.message}", file=sys.stderr)
        if e.stderr:
            print(e.stderr, file=sys.stderr)
        return EXIT_BROKEN


if __name__ == "__main__":
    sys.exit(main())
