"""``dsh-conformance bench``: the command over ``measuring.bench``: the rounds it runs, the
ratios it prints side by side in one run (the suite against the implementation, the oracle
against the package, pytest against ``run``, ``--jobs N`` against the cores), and the
scaling of ``--jobs``."""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

from dsh_conformance.argtypes import UsageError
from dsh_conformance.dsh.adapter_install import adapter_dir
from dsh_conformance.iut.connect import IUT, make_iut
from dsh_conformance.iut.in_process import embedded_oracle
from dsh_conformance.measuring import bench
from dsh_conformance.measuring.process_stats import peak_rss_kib
from dsh_conformance.running.ending import EXIT_OK
from dsh_conformance.running.references import corpus_items
# Printed text may be an implementation's or a file's: shown escaped (textio.terminal).
from dsh_conformance.textio.terminal import say as print  # noqa: A001


PYTEST_SELECTION = "guard"  # the bench's pytest-against-run cases (the measurement)


def cmd_bench(args: argparse.Namespace) -> int:
    """Every speed figure side by side in one run (``conformance.bench``)."""
    cases = Path(args.cases)
    if not cases.is_dir():
        raise UsageError(f"--cases {cases}: no such directory")
    items = corpus_items(cases)
    if not items:
        raise UsageError(f"--cases {cases}: no case files to run")
    impl = make_iut(args.impl, args.timeout, False) if args.impl else None  # a bad --impl is refused before any work
    docs = [doc for _, doc, _ in items]
    rounds = args.repeat
    print(f"dsh-conformance bench: {len(docs)} corpus scenarios, best of {rounds} rounds ({bench.machine()})\n")
    oracle = bench.oracle_rate(docs, rounds)
    figures = [bench.Figure("oracle in-process: corpus scenarios", oracle, "/s")]  # information: targets are ratios
    for label, loop in (("plain call, direct (1,000 a scenario)", False), ("plain call, loop (1,000 a batch)", True)):
        figures.append(bench.Figure(label, bench.per_call_us(bench.plain_calls(1000, loop), 1000, rounds), "us"))
    suites: list[tuple[str, IUT]] = [("in-process", embedded_oracle(timeout=args.timeout)),
                                                          ("over the protocol", make_iut(None, args.timeout, False))]
    if impl is not None:
        suites.append((f"--impl {args.impl}", impl))
    rates: dict[str, float] = {}
    cpu: tuple[float, float | None] = (0.0, None)
    known: float | None = None
    computed: float | None = None
    for label, iut in suites:
        with contextlib.ExitStack() as stack:
            stack.push(lambda kind, value, tb, iut=iut: iut.close(graceful=kind is None))
            iut.start()
            # The oracle's two paths compute their references, as the protocol target was set.
            rates[label] = bench.suite_rate(iut, items, cases, rounds, computed=not label.startswith("--impl"))
            if label.startswith("--impl"):
                computed = bench.suite_rate(iut, items, cases, rounds, computed=True)
                known = bench.suite_rate(iut, items, cases, rounds, known=True)
                cpu = bench.suite_cpu_ms(iut, items, cases, rounds)
    wide_rate: float | None = None
    if impl is not None and impl.pid is not None:  # a process of its own: two can run side by side
        wide_rate = bench.suite_rate_jobs(functools.partial(make_iut, args.impl, args.timeout, False), 2, items,
                                          cases, rounds)
    figures.append(bench.Figure("suite, oracle in-process", rates["in-process"], "/s",
                                note="reference trace, the oracle's answer, judging"))
    figures.append(bench.Figure("suite, oracle over the protocol", rates["over the protocol"], "/s",
                                note="the same, the answer from the oracle's server process"))
    # The target compares one implementation's two paths through the suite: both
    # rows above run the oracle twice (reference and answer), so the ratio is what the
    # protocol costs. The bare oracle is no suite path: against it, judging counts too.
    figures.append(bench.Figure("  protocol path / in-process path, same implementation",
                                rates["in-process"] / rates["over the protocol"], "x", at_most=1.5))
    figures.append(bench.Figure("  protocol path / bare oracle (not like for like)", oracle / rates["over the protocol"],
                                "x", note="the suite's whole work against one parse and run: no target"))
    if impl is not None:
        figures.append(bench.Figure(f"suite, --impl {args.impl}", rates[f"--impl {args.impl}"], "/s",
                                    note="the oracle's traces read back from the reference cache, as in a run after the first"))
        figures.append(bench.Figure(f"suite, --impl {args.impl}, the oracle's traces computed", computed, "/s",
                                    note="the reference cache off: a first run, or the oracle's code changed"))
        figures.append(bench.Figure(f"suite, --impl {args.impl}, the oracle's traces known", known, "/s",
                                    note="the same cases judged again in one process"))
        # CPU a case by process: hardly moved by the machine's load, unlike the rates. The
        # runner overlaps the two (cases sent ahead), so the slower one bounds the rate.
        suite_ms, impl_ms = cpu
        figures.append(bench.Figure("  CPU a case: the suite's process", suite_ms, "ms"))
        figures.append(bench.Figure("  CPU a case: the implementation's process", impl_ms, "ms"))
        # The suite's own cost beside what it watches (issue 44); a target row stays when its
        # figure cannot be taken, so that the table never reads as if it had been met.
        figures.append(bench.Figure("  suite CPU / implementation CPU, a case", suite_ms / impl_ms if impl_ms else None,
                                    "x", at_most=0.5))
        if impl_ms:
            figures.append(bench.Figure("  the rate the slower of the two allows", 1000 / max(suite_ms, impl_ms), "/s",
                                        note="both overlapped on idle cores: the ceiling of the row above"))
            cores = os.cpu_count() or 1
            figures.append(bench.Figure(f"  the rate {cores} cores allow, both processes busy", cores * 1000 / (suite_ms + impl_ms),
                                        "/s", note="the two CPU figures added: the ceiling of any number of instances"))
        if wide_rate is not None:
            figures.append(bench.Figure(f"suite, --impl {args.impl} --jobs 2, the oracle's traces known", wide_rate, "/s",
                                        note="two instances, each in a worker (run --jobs 2): like for like with the "
                                             "row of traces known"))
            if impl_ms:
                ceiling = min(2, os.cpu_count() or 1) * 1000 / (suite_ms + impl_ms)
                figures.append(bench.Figure("  --jobs 2 / the rate the cores allow", wide_rate / ceiling, "x",
                                            at_least=0.8, note=f"the ceiling: {ceiling:.0f} /s"))
    if args.impl == "dsh":
        times = bench.adapter_times(adapter_dir() / "adapter.mjs", docs, rounds, args.timeout)
        figures.append(bench.Figure("adapter fed directly: median per scenario", times.median_ms, "ms"))
        figures.append(bench.Figure("  the package's time per scenario (profile)", times.package_ms, "ms"))
        figures.append(bench.Figure("  the adapter's own time per scenario (profile)", times.own_ms, "ms"))
        ratio = times.own_ms / times.package_ms if times.own_ms is not None and times.package_ms else None
        figures.append(bench.Figure("  adapter / package", ratio, "x", at_most=3))
        per_scenario = 1000 / oracle if oracle else None  # ms a scenario, the oracle in-process
        figures.append(bench.Figure("  the package's time / the oracle's, a scenario",
                                    times.package_ms / per_scenario if times.package_ms and per_scenario else None,
                                    "x", at_least=3, note="the oracle at least 3x faster than what it judges"))
    figures += bench.startup_figures(rounds)
    if importlib.util.find_spec("pytest") is not None:  # the pytest path: pytest comes with the dev extra
        p_wall, p_cpu, r_wall, r_cpu = bench.pytest_against_run(PYTEST_SELECTION, rounds)
        figures.append(bench.Figure(f"pytest --dsh-impl oracle -k {PYTEST_SELECTION}, start to end", p_wall, "s",
                                    note=f"CPU {p_cpu:.2f} s"))
        figures.append(bench.Figure(f"run --impl oracle -k {PYTEST_SELECTION}, start to end", r_wall, "s",
                                    note=f"CPU {r_cpu:.2f} s"))
        figures.append(bench.Figure("  pytest / run, CPU for the same cases", p_cpu / r_cpu if r_cpu else None, "x",
                                    at_most=1.5, note=f"wall {p_wall / r_wall:.2f}x" if r_wall else ""))
    if not args.skip_run:
        seconds, code = bench.command_seconds(["run", "--quiet"])
        figures.append(bench.Figure("dsh-conformance run (make run)", seconds, "s",
                                    note=f"exit {code}" if code else ""))
    if args.make_test:
        root = _source_tree()
        seconds, code = bench.command_seconds(["make", "test"], cwd=root, module=False, timeout=1800)
        figures.append(bench.Figure("make test (the project's tests, pytest -n auto)", seconds, "s",
                                    note=f"exit {code}" if code else ""))
    if args.generated:
        spec = args.impl or "oracle"
        argv = ["run", "--impl", spec, "--no-corpus", "--examples", str(args.generated), "--seed", str(args.seed),
                "--quiet", "--failures", str(Path(tempfile.mkdtemp(prefix="dsh-conformance-bench-")))]
        if spec == "dsh":
            argv += ["--expectations", "dsh-tools-0.1.0-rc.8"]
        seconds, code = bench.command_seconds(argv)
        target = args.generated == 1000 and spec == "dsh"  # the issue's: 1,000 examples against rc.8
        note = "a failure was found and shrunk" if code == 1 else (f"exit {code}" if code else "")
        figures.append(bench.Figure(f"generated run, {args.generated:,} examples, seed {args.seed}, --impl {spec}", seconds,
                                    "s", note=note))
        # The same run with two instances (run --jobs 2, conformance.parallel): the speed-up.
        wide, wide_code = bench.command_seconds([*argv, "--jobs", "2"])
        figures.append(bench.Figure(f"the same generated run, --jobs 2 against --jobs 1 ({seconds:.1f} s / {wide:.1f} s)",
                                    seconds / wide if wide else None, "x", at_least=1.7 if target else None,
                                    note="; ".join(filter(None, [f"exit {wide_code}" if wide_code != code else "",
                                                                 "" if target else "the target is for --impl dsh, "
                                                                 "1,000 examples, on 2 idle cores"]))))
    bench.print_figures(figures)
    if args.scaling:
        print()
        _print_scaling(bench, impl if impl is not None else None, args, rounds)
    return EXIT_OK


def _source_tree() -> Path:
    """The source checkout the package runs from (``make test`` needs its Makefile and tests)."""
    root = Path(__file__).resolve().parent.parent
    if not ((root / "Makefile").is_file() and (root / "tests").is_dir()):
        raise UsageError(f"--make-test: {root} is not a source checkout of dsh-conformance (no Makefile and tests/)")
    return root


def _print_scaling(bench: Any, impl: IUT | None, args: argparse.Namespace, rounds: int) -> None:
    """The table of ``bench --scaling``: cost per call and per scenario as scenarios grow."""
    rows: list[tuple[str, int, dict[str, Any]]] = []
    for loop in (False, True):
        for n in (1, 10, 100, 1000):
            rows.append(("calls, loop" if loop else "calls, direct", n, bench.plain_calls(n, loop)))
    for keys in (1, 10, 100, 1000):
        rows.append(("argument keys", keys, bench.wide_arguments(keys)))
    with contextlib.ExitStack() as stack:
        if impl is not None:
            stack.push(lambda kind, value, tb: impl.close(graceful=kind is None))
            impl.start()
        header = f"{'what':<14} {'size':>5}  {'oracle us':>10} {'cost x':>7} {'peak KiB':>9}"
        if impl is not None:
            header += f"  {'--impl us':>10} {'cost x':>7}"
        print(header + "   (us: per call for calls, per scenario for argument keys)")
        base: dict[str, tuple[float, float | None]] = {}
        for what, size, doc in rows:
            unit = size if what.startswith("calls") else 1
            oracle = bench.per_call_us(doc, unit, rounds)
            theirs = bench.iut_per_call_us(impl, doc, unit, rounds) if impl is not None else None
            first = base.setdefault(what, (oracle, theirs))
            line = f"{what:<14} {size:>5}  {oracle:>10.1f} {oracle / first[0]:>7.2f} {bench.oracle_peak_kib(doc):>9.0f}"
            if theirs is not None and first[1]:
                line += f"  {theirs:>10.1f} {theirs / first[1]:>7.2f}"
            print(line)
        if impl is not None and impl.pid is not None:
            peak = peak_rss_kib(impl.pid)
            if peak is not None:
                print(f"--impl peak resident memory over the table: {peak:,.0f} KiB")
