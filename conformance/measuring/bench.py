"""``dsh-conformance bench``: the suite's speed, every figure side by side in one run.

What is measured (issue 13), each the best of ``--repeat`` rounds (a shared machine lets
the best round of several be compared, not a single one):

- **oracle in-process**: corpus scenarios parsed and run per second (``parse_scenario``
  and ``run_scenario``, nothing else);
- **plain call**: the time per call of a tool returning a value, no listeners, 1,000 calls
  in one scenario, directly (``execute()`` after ``execute()``) and in one agent-loop batch;
- **the suite**: the corpus through the runner, as ``run`` does it (the oracle's traces of
  every case, then for each case the implementation's answer, the comparison, the laws and
  the digest), against the embedded oracle in-process, the oracle over the protocol (its
  server process) and ``--impl``, each process IUT warmed up first (``warm_up``: a JIT's
  first rounds are slow, and would weigh on whichever figure comes first). The issue's target (at most 1.5x) is the protocol path
  against the in-process path for the same implementation, the oracle: both run it twice
  per case (the reference trace and the answer), so whatever it does twice counts on both
  sides and the ratio is the protocol's own cost. The protocol path against the bare
  oracle (one parse and run, no suite) is printed too, without a target: it sets the
  suite's whole work (two runs, judging, laws, digest, the protocol) against one run;
- **the Node adapter** (``--impl dsh``): fed the corpus directly, no suite, it times each
  scenario itself (``DSH_ADAPTER_TIMINGS=1``, from the line read to the answer written); and
  in a CPU profile of the same feed (``node --cpu-prof``) each sample is put down to the
  code it is in: the packages under test (``node_modules/@deepseek-ai``), the adapter
  (``tools/dsh-adapter``, with the Node runtime work it asks for: reading, JSON, writing)
  or the garbage collector (shared out in proportion). Its own time against the package's
  is the adapter's overhead;
- **ratios, measured in the same run** (issue 44): this machine's speed varies 1.7x between
  two idle runs of one day, so every target is a ratio of two figures measured side by side,
  and an absolute rate is printed as information, with no target: the suite's CPU a case
  against the implementation's process (at most 0.5x), the package's own time a scenario
  against the oracle's (at least 3x, ``--impl dsh``), ``pytest`` against ``run`` for the same
  cases (at most 1.5x), ``--jobs 2`` against the rate the cores allow (at least 0.8x), the
  protocol path against the in-process path (at most 1.5x), the adapter against the package
  (at most 3x) and a generated run's ``--jobs 2`` against ``--jobs 1``;
- **commands**: ``dsh-conformance run`` with its defaults (``make run``) from start to end;
  with ``--generated [N]`` a generated run of N examples (default 1,000) against
  ``--impl``, start to end (the target: 1,000 against rc.8, ``--impl dsh``, within 60 s);
  with ``--make-test`` the project's ``make test`` in the source tree (within 3 minutes).
  These take long, so they are asked for; tests never assert a time.

``--scaling`` prints how cost grows: per call from 1 to 1,000 calls a batch (direct and
loop) and per scenario with argument values from 1 to 1,000 keys, with the oracle's peak
memory (tracemalloc) and, with ``--impl``, the implementation's time; ``cost x`` is the
time per call (or per scenario) against the smallest size's, 1.0 where cost is linear.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_conformance.iut.connect import IUT
from dsh_conformance.iut.in_process import embedded_oracle
from dsh_conformance.iut.process import ProcessIUT
from dsh_conformance.measuring.process_stats import process_cpu_seconds
from dsh_conformance.oracle import parse_scenario, run_scenario
from dsh_conformance.running.parallel import Pool, Settings, run_cases
from dsh_conformance.running.reference_cache import SWITCH
from dsh_conformance.running.references import corpus_items, expected_traces, forget_references
from dsh_conformance.running.runner import Runner
from dsh_conformance.spec.rules import ORACLE_PROFILES


@dataclass
class Figure:
    """One line of the bench: ``value`` in ``unit``, with the issue's target when it has one
    (``at_least`` or ``at_most``)."""

    name: str
    value: float | None
    unit: str
    at_least: float | None = None
    at_most: float | None = None
    note: str = ""

    def verdict(self) -> str:
        if self.value is None:  # a target whose figure could not be taken is not met either
            return "not measured" if self.at_least is not None or self.at_most is not None else ""
        if self.at_least is not None:
            return "met" if self.value >= self.at_least else "NOT MET"
        if self.at_most is not None:
            return "met" if self.value <= self.at_most else "NOT MET"
        return ""

    def target(self) -> str:
        if self.at_least is not None:
            return f">= {_num(self.at_least)} {self.unit}"
        if self.at_most is not None:
            return f"<= {_num(self.at_most)} {self.unit}"
        return ""


def _num(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def best_of(rounds: int, fn: Callable[[], Any]) -> float:
    """The shortest of ``rounds`` runs of ``fn``, in seconds."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


# ------------------------------------------------------------------ scenarios of a given size

def plain_calls(n: int, loop: bool) -> dict[str, Any]:
    """``n`` plain calls: one tool returning a value, no listeners, no guards, no approval;
    direct calls one after another, or one agent-loop batch of ``n`` tool calls."""
    tools = [{"name": "t", "body": [{"do": "return", "value": {"ok": True}}]}]
    if loop:
        run: dict[str, Any] = {"kind": "loop", "agent": "a",
                               "blocks": [{"id": f"b{i + 1}", "name": "t", "arguments": "{}"} for i in range(n)]}
    else:
        run = {"kind": "direct", "calls": [{"callId": f"c{i + 1}", "name": "t"} for i in range(n)]}
    return {"id": f"plain-{'loop' if loop else 'direct'}-{n}", "agents": [{"id": "a"}], "tools": tools, "run": run}


def wide_arguments(keys: int) -> dict[str, Any]:
    """One call whose arguments (and the value the tool returns) have ``keys`` keys: the
    snapshot, the copies and the trace grow with the scenario."""
    arguments = {f"k{i}": {"n": i, "s": "text"} for i in range(keys)}
    tools = [{"name": "t", "body": [{"do": "return", "value": arguments}]}]
    return {"id": f"wide-{keys}", "tools": tools,
            "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t", "arguments": arguments}]}}


# ------------------------------------------------------------------ measurements

def oracle_rate(docs: list[dict[str, Any]], rounds: int) -> float:
    """Scenarios per second: parse and run each document."""

    def once() -> None:
        for doc in docs:
            run_scenario(parse_scenario(doc))
    return len(docs) / best_of(rounds, once)


def per_call_us(doc: dict[str, Any], calls: int, rounds: int) -> float:
    scenario = parse_scenario(doc)
    return best_of(rounds, lambda: run_scenario(scenario)) / calls * 1e6


def oracle_peak_kib(doc: dict[str, Any]) -> float:
    """Peak Python memory of parsing and running ``doc`` (tracemalloc, KiB)."""
    tracemalloc.start()
    try:
        run_scenario(parse_scenario(doc))
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


def suite_rate(iut: IUT, items: list[tuple[str, dict[str, Any], str]], cases: Path, rounds: int,
               known: bool = False, computed: bool = False) -> float:
    """Corpus scenarios per second through the runner, as ``run`` does it: the oracle's
    traces of every case first, then each case against the implementation (``iut`` is
    started already). The oracle's traces are read anew in each round, as in one run, from
    the disk cache a first run fills (``conformance.reference_cache``); ``computed``: with
    that cache off, each trace computed by the oracle (a run after the oracle's code
    changed); ``known``: the ones kept in memory from an earlier round (runner.reference),
    as when the same cases are judged again in one process."""
    warm_up(iut, items, cases)

    def once() -> None:
        if not known:
            forget_references()
        expected = expected_traces(items, cases)
        Runner(iut, set(ORACLE_PROFILES), give_up_after=0).run_cases(items, None, expected)
    with _reference_cache(not computed):
        expected_traces(items, cases)  # the cache filled (or the traces kept, when known)
        return len(items) / best_of(rounds, once)


def suite_cpu_ms(iut: IUT, items: list[tuple[str, dict[str, Any], str]], cases: Path,
                 rounds: int) -> tuple[float, float | None]:
    """CPU milliseconds a corpus case (user and system, the least of ``rounds`` rounds as
    ``suite_rate`` runs them, the references read back from the disk cache) of the suite's
    process and of the implementation's (None: it has no process of its own, or its clock
    cannot be read). Unlike the rate, this hardly depends on what else the machine runs,
    and the two overlap (the runner sends cases ahead): the slower one bounds the rate."""
    suite, other = float("inf"), float("inf")
    warm_up(iut, items, cases)
    with _reference_cache(True):
        expected_traces(items, cases)
        for _ in range(rounds):
            forget_references()
            p0, i0 = time.process_time(), process_cpu_seconds(iut.pid)
            Runner(iut, set(ORACLE_PROFILES), give_up_after=0).run_cases(items, None, expected_traces(items, cases))
            p1, i1 = time.process_time(), process_cpu_seconds(iut.pid)
            suite = min(suite, (p1 - p0) / len(items) * 1000)
            if i0 is not None and i1 is not None:
                other = min(other, (i1 - i0) / len(items) * 1000)
    return suite, None if other == float("inf") else other


def suite_rate_jobs(make: Callable[[], IUT], jobs: int, items: list[tuple[str, dict[str, Any], str]], cases: Path,
                    rounds: int) -> float:
    """Corpus scenarios per second through ``run --jobs N``'s machinery (``conformance.parallel``):
    N workers, each with an instance made by ``make``, the cases dealt in batches and
    recorded in order by this process. As ``run --jobs`` does, the oracle's traces are read
    (from the disk cache) before the workers are forked; each round is timed from dealing
    the first batch to recording the last case, with the instances started and warmed up
    (two unmeasured rounds each), so it is comparable with ``suite_rate(known=True)``: the
    workers keep the references they have read."""

    with _reference_cache(True):
        expected = expected_traces(items, cases)
        pool = Pool(jobs, make, Settings(set(ORACLE_PROFILES), None, 0, None), items, expected)
        try:
            pool.start()

            def once() -> None:
                run_cases(Runner(pool, set(ORACLE_PROFILES), give_up_after=0), pool, None)
            for _ in range(WARM_UP_ROUNDS * jobs):  # each instance sees about 1/jobs of a round
                once()
            return len(items) / best_of(rounds, once)
        finally:
            pool.close()


WARM_UP_ROUNDS = 2
_WARM: "weakref.WeakKeyDictionary[Any, int | None]" = weakref.WeakKeyDictionary()  # IUT -> the process warmed up


def warm_up(iut: IUT, items: list[tuple[str, dict[str, Any], str]], cases: Path,
            rounds: int = WARM_UP_ROUNDS) -> None:
    """Run the corpus through a process IUT ``rounds`` times, unmeasured, once per process
    it starts. A JIT such as node's makes its first rounds slow: the implementation's CPU a
    case against rc.8 falls from 6.1-6.9 ms in its first corpus round to 4.7-5.0 in the
    second and 3.4-4.4 from the fourth on, so whichever figure is measured first after the start
    would carry the warm-up (issue 25: the rate with the references read back from the cache,
    measured first, was the lowest of the three for that reason, not for the cache's)."""
    if iut.pipeline is None or _WARM.get(iut, False) == iut.pid:
        return
    for _ in range(rounds):
        Runner(iut, set(ORACLE_PROFILES), give_up_after=0).run_cases(items, None, expected_traces(items, cases))
    _WARM[iut] = iut.pid


@contextlib.contextmanager
def _reference_cache(on: bool) -> Iterator[None]:
    """The disk cache of reference traces on or off for a measurement (its switch restored)."""
    before = os.environ.get(SWITCH)
    os.environ[SWITCH] = "on" if on else "off"
    try:
        yield
    finally:
        if before is None:
            del os.environ[SWITCH]
        else:
            os.environ[SWITCH] = before


def iut_per_call_us(iut: IUT, doc: dict[str, Any], calls: int, rounds: int) -> float:
    seq = [10_000_000]

    def once() -> None:
        seq[0] += 1
        iut.run(seq[0], doc)
    return best_of(rounds, once) / calls * 1e6


# ------------------------------------------------------------------ the Node adapter

@dataclass
class AdapterTimes:
    scenarios: int
    median_ms: float  # the adapter's own clock, line read to answer written
    mean_ms: float
    package_ms: float | None  # per scenario, from the CPU profile
    own_ms: float | None


def adapter_times(adapter: Path, docs: list[dict[str, Any]], rounds: int, timeout: float) -> AdapterTimes:
    """Feed the corpus ``rounds`` times straight into the adapter (no suite): once for its
    own timings, once under ``node --cpu-prof`` to see whose code the time is in."""
    timings = _feed(adapter, docs, rounds, timeout, [])
    split: dict[str, float] | None = None
    with tempfile.TemporaryDirectory(prefix="dsh-conformance-bench-") as tmp:
        profiled = _feed(adapter, docs, rounds, timeout, ["--cpu-prof", f"--cpu-prof-dir={tmp}"])
        profiles = sorted(Path(tmp).glob("*.cpuprofile"))
        if profiles and profiled.get("window_us"):
            split = attribute(json.loads(profiles[-1].read_text()), profiled["window_us"])
    n = timings["scenarios"]
    package = own = None
    if split is not None:
        count = profiled["scenarios"]
        gc = split.get("gc", 0.0)
        busy = split["package"] + split["adapter"]
        share = split["package"] / busy if busy else 0.0
        package = (split["package"] + gc * share) / count / 1000
        own = (split["adapter"] + gc * (1 - share)) / count / 1000
    return AdapterTimes(n, timings["median_ms"], timings["mean_ms"], package, own)


def _feed(adapter: Path, docs: list[dict[str, Any]], rounds: int, timeout: float, node_flags: list[str]) -> dict[str, Any]:
    iut = ProcessIUT(["node", *node_flags, str(adapter)], timeout, env={"DSH_ADAPTER_TIMINGS": "1"})
    iut.start()
    try:
        seq = 0
        for _ in range(rounds):
            for doc in docs:
                seq += 1
                iut.run(seq, doc)
    finally:
        log = iut.log
        iut.close()
    deadline = time.monotonic() + 5  # the stderr pump may still be reading the last line
    while True:
        for line in reversed(log.text(200).splitlines()):
            if line.startswith("dsh-adapter: timings "):
                found: dict[str, Any] = json.loads(line.split(" ", 2)[2])
                return found
        if time.monotonic() > deadline:
            raise RuntimeError("the adapter reported no timings (DSH_ADAPTER_TIMINGS=1)")
        time.sleep(0.05)


def attribute(profile: dict[str, Any], window: list[int]) -> dict[str, float]:
    """Microseconds of a V8 CPU profile inside ``window`` (first and last scenario, on the
    profile's clock), by whose code each sample is in: its innermost frame with a script
    (a builtin counts as its caller's). ``package``: node_modules/@deepseek-ai; ``adapter``:
    the adapter's own scripts and the Node runtime (node:...); ``gc``; idle time left out."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {child: n["id"] for n in profile["nodes"] for child in n.get("children", ())}
    memo: dict[int, str] = {}

    def kind(nid: int) -> str:
        start = nid
        if start in memo:
            return memo[start]
        found = "other"
        current: int | None = nid
        while current is not None:
            frame = nodes[current]["callFrame"]
            url, name = frame["url"], frame["functionName"]
            if name == "(garbage collector)":
                found = "gc"
                break
            if name in ("(idle)", "(program)", "(root)") and not url:
                found = "idle" if name == "(idle)" else "other"
                break
            if url:
                found = "package" if "/node_modules/@deepseek-ai/" in url else "adapter"
                break
            current = parent.get(current)
        memo[start] = found
        return found

    out: dict[str, float] = {"package": 0.0, "adapter": 0.0, "gc": 0.0, "other": 0.0, "idle": 0.0}
    at = profile["startTime"]
    first, last = window
    for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
        at += delta
        if first <= at <= last:
            out[kind(sample)] += delta
    return out


# ------------------------------------------------------------------ commands end to end

def command_seconds(argv: list[str], timeout: float = 600, cwd: Path | None = None,
                    module: bool = True) -> tuple[float, int]:
    """Wall time of a command of this suite (``module``: ``argv`` are its arguments), or of
    any command line, start to end, and its exit code."""
    t0 = time.perf_counter()
    command = [sys.executable, "-m", "dsh_conformance", *argv] if module else argv  # the entry point
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout,
                          check=False, cwd=cwd)
    return time.perf_counter() - t0, done.returncode


def startup_figures(rounds: int) -> list[Figure]:
    """``dsh-conformance --help`` and ``--version`` from start to end, the best of
    ``rounds`` (issue 25: under 0.3 s; the grammar is light, ``conformance.command_line``)."""
    out = []
    for option in ("--help", "--version"):
        seconds = cpu = float("inf")
        for _ in range(max(rounds, 5)):
            before = _children_cpu()
            seconds = min(seconds, command_seconds([option], timeout=60)[0])
            cpu = min(cpu, _children_cpu() - before)
        # Its CPU beside the wall time: on a busy machine the wall time is mostly waiting
        # for a core, and the CPU says what the command itself costs.
        note = f"CPU {cpu:.2f} s" if math.isfinite(cpu) else ""
        out.append(Figure(f"dsh-conformance {option}, start to end", seconds, "s", note=note))
    return out


def pytest_against_run(selection: str, rounds: int) -> tuple[float, float, float, float]:
    """The same cases through ``pytest --dsh-impl oracle -k SELECTION`` and ``dsh-conformance
    run --impl oracle -k SELECTION``, start to end, the best of ``rounds`` each: (pytest's
    wall, its CPU, run's wall, its CPU), CPU of the command and what it started. pytest runs
    with the plugins a ``pip install <wheel> pytest`` brings (the suite's and hypothesis'),
    not this clone's dev plugins (issue 44: the pytest path within 1.5x of ``run``)."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    work = Path(tempfile.mkdtemp(prefix="dsh-conformance-bench-"))
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "dsh_conformance.plugin",
              "-p", "hypothesispytest", "--dsh-impl", "oracle", "--dsh-examples", "0", "-k", selection]
    run = [sys.executable, "-m", "dsh_conformance", "run", "--impl", "oracle", "-k", selection, "--quiet"]
    out = []
    for argv in (pytest, run):
        wall = cpu = float("inf")
        for _ in range(rounds):
            before, t0 = _children_cpu(), time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600, check=False,
                           cwd=work, env=env)
            wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, _children_cpu() - before)
        out += [wall, cpu]
    shutil.rmtree(work, ignore_errors=True)
    return out[0], out[1], out[2], out[3]


def _children_cpu() -> float:
    """User and system CPU seconds of this process's waited-for children (nan where the
    platform cannot tell)."""
    try:
        # lazy (platform): the module is POSIX's only
        import resource
    except ImportError:  # not on Windows
        return float("nan")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# ------------------------------------------------------------------ printing

def print_figures(figures: list[Figure], out: Any = None) -> None:
    out = out or sys.stdout
    width = max(len(f.name) for f in figures)
    print(f"{'figure':<{width}}  {'value':>12}  {'target':<14} verdict", file=out)
    for f in figures:
        value = "-" if f.value is None else f"{_num(f.value)} {f.unit}"
        line = f"{f.name:<{width}}  {value:>12}  {f.target():<14} {f.verdict()}"
        print(line.rstrip() + (f"  ({f.note})" if f.note else ""), file=out)


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    node = shutil.which("node")
    version = ""
    if node:
        try:
            version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            version = "?"
    return (f"Python {sys.version.split()[0]}" + (f", node {version}" if version else "")
            + f", {os.cpu_count()} CPUs, load average {load:.1f}")


__all__ = ["Figure", "AdapterTimes", "pytest_against_run", "adapter_times", "suite_rate_jobs", "attribute", "best_of", "command_seconds", "machine",
           "oracle_peak_kib", "oracle_rate", "per_call_us", "plain_calls", "print_figures",
           "suite_cpu_ms", "suite_rate", "warm_up",
           "wide_arguments", "corpus_items", "embedded_oracle", "iut_per_call_us"]
