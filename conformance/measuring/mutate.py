"""``dsh-conformance mutate``: the suite measures its own power.

Each mutant (``conformance.mutants``: an operator mutation or a named fault of the
catalogue) is a copy of the oracle package under a temporary package name with one
change, run as an in-process implementation under test (its ``serve.started`` and
``serve.answer``, as ``--impl py:<package>.serve`` would) through the default run: the
corpus and the generated scenarios that ``dsh-conformance run`` draws for the same seed
and number of examples. An unmutated copy is run first and must pass every case, or
nothing the mutants show would mean anything.

Mutants run in parallel worker processes (``--jobs``), each forked from this one once the
scenarios and the oracle's traces are ready, so a mutant shares nothing with another and
a mutant that hangs or corrupts its interpreter costs only its own process: past
``--mutant-timeout`` it is killed. A mutant is

- ``killed`` when the default run would fail (a case that fails, errors or times out);
  which cases did, from the corpus or generated, and the rules the run blamed;
- ``survived`` when every case passes; a survivor whose changed line the unmutated copy
  never ran is shown as not reached;
- ``equivalent`` when it survived and the committed notes
  (``conformance/data/mutation-equivalents.yaml``) say why it cannot be told apart;
- ``timeout`` when its process ran past the limit (counted as detected, as in Stryker);
- ``broken`` when the copy cannot even be imported or started (not counted).

Exit codes: 0 every mutant was killed, timed out, is broken or is a noted equivalent; 1
a non-equivalent mutant survived, or a note is stale; 2 a usage error; 3 the unmutated
copy does not pass (the measurement itself is broken).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import os
import random
import shlex
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, find, settings
from hypothesis.errors import NoSuchExample

from dsh_conformance.iut.connection import IUTFailure
from dsh_conformance.iut.in_process import InProcessIUT
from dsh_conformance.kit.scenario import load_scenario_document
from dsh_conformance.kit.trace import Trace
from dsh_conformance.measuring import mutation_report as mr
from dsh_conformance.measuring.mutants import (
    Mutant,
    MutantError,
    equivalents,
    excluded_functions,
    excluded_modules,
    materialize,
)
from dsh_conformance.measuring.operators import Plan, plan
from dsh_conformance.oracle import Scenario, parse_scenario, run_scenario
from dsh_conformance.reporting.all_divergences import print_all_divergences
from dsh_conformance.reporting.report import rule_outcomes
from dsh_conformance.running.parallel import Worker, fork
from dsh_conformance.running.properties import content_id, hypothesis_home
from dsh_conformance.running.references import corpus_items
from dsh_conformance.running.runner import Runner
from dsh_conformance.spec.corpus import CASES, load_case
from dsh_conformance.spec.rules import ORACLE_PROFILES
from dsh_conformance.strategies.draws import independent_draws
from dsh_conformance.strategies.scenarios import examples as drawn
from dsh_conformance.textio.outputs import check_directory, check_writable, write_atomic
# A case file's text can reach the messages printed here: shown escaped (conformance.terminal).
from dsh_conformance.textio.terminal import say as print  # noqa: A001

EXIT_OK, EXIT_SURVIVORS, EXIT_USAGE, EXIT_BASELINE = 0, 1, 2, 3
DETECTED = ("killed", "timeout")


@dataclass(frozen=True)
class Case:
    """One scenario of the default run, with the oracle's trace."""
    id: str
    source: str  # "corpus" or "property" (generated)
    doc: dict[str, Any]
    scenario: Scenario
    trace: Trace
    file: str | None = None


# ============================================================================ the default run's cases

def default_cases(examples: int, seed: int, corpus: bool = True, cases_dir: Path | None = None) -> list[Case]:
    """The corpus and the ``examples`` scenarios ``dsh-conformance run --seed seed`` draws.

    The generated ones are drawn as the runner draws them (the same strategy, settings and
    random seed): hypothesis' generation does not depend on the test's verdicts before the
    first failure, so these are the scenarios the default run judges a mutant on."""

    out = []
    if corpus:
        for case_id, doc, path in corpus_items(cases_dir or CASES):
            scenario = parse_scenario(doc)
            out.append(Case(case_id, "corpus", doc, scenario, run_scenario(scenario), path))
    if examples:
        seen: set[str] = set()
        for ex in generated(examples, seed):
            cid = content_id(ex.doc)
            if cid not in seen:
                seen.add(cid)
                out.append(Case(cid, "property", ex.doc, ex.scenario, ex.trace))
    return out


def generated(examples: int, seed: int) -> list[Any]:
    """The examples the runner judges: ``examples`` independent draws for ``seed``
    (``properties._search``), or hypothesis' ``find`` sequence where the draws are not there."""



    profiles = frozenset(ORACLE_PROFILES)
    with hypothesis_home():
        draws = independent_draws(examples, seed, profiles)
        if draws is not None:
            return [example for example, _ in draws]
        found: list[Any] = []

        def keep(example: Any) -> bool:
            found.append(example)
            return False

        cfg = settings(max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))

        with contextlib.suppress(NoSuchExample):
            find(drawn(profiles), keep, settings=cfg, random=random.Random(seed))
        return found


# ============================================================================ one mutant, in a worker

_CASES: list[Case] = []  # set before the workers fork


def package_name(mutant: Mutant | None) -> str:
    if mutant is None:
        return "dsh_mutant_baseline"
    return "dsh_mutant_" + hashlib.sha256(mutant.id.encode()).hexdigest()[:12]


def load(mutant: Mutant | None, root: Path) -> Any:
    """Write the copy under ``root`` and import its ``serve`` module."""
    name = package_name(mutant)
    materialize(root, name, mutant)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    return importlib.import_module(f"{name}.serve")


def evaluate(mutant: Mutant | None, cases: list[Case], timeout: float, root: Path,
             coverage_of: Path | None = None) -> dict[str, Any]:
    """Run ``cases`` against the copy with ``mutant`` applied (None: unmutated). The
    answer: status, the cases that did not pass, and with ``coverage_of`` the lines of
    the copy that ran."""

    t0 = time.monotonic()
    cov = None
    if coverage_of is not None:
        # lazy (measurement): coverage of a mutant's copy only where the report asks for it
        import coverage

        cov = coverage.Coverage(data_file=None, include=[str(root / package_name(mutant) / "*")])
        cov.start()
    try:
        try:
            serve = load(mutant, root)
        except Exception as e:  # noqa: BLE001 - the mutant's own import failure
            return {"status": "broken", "detail": f"cannot import the mutant: {type(e).__name__}: {e}"}
        iut = InProcessIUT(serve.started, serve.answer, timeout=timeout)
        try:
            iut.start()
        except IUTFailure as e:
            return {"status": "broken", "detail": f"cannot start the mutant: {e.message}"}
        runner = Runner(iut, set(ORACLE_PROFILES), give_up_after=2)
        kills, records = [], []
        for case in cases:
            rec = runner.decide(case.id, case.doc, case.source, case.file, case.scenario, case.trace)
            records.append(rec)
            if rec.outcome.value != "pass":
                kills.append({"case": case.id, "source": case.source, "outcome": rec.outcome.value,
                              "rules": rec.rules, "failing_rules": rec.failing_rules,
                              "where": (rec.divergence or {}).get("where"),
                              "message": (rec.message or "").splitlines()[0][:300] if rec.message else None})
        iut.close(graceful=False)
        # The rules the run's compliance table would show failing: what it blamed.
        failing = sorted((r for r, o in rule_outcomes(records).items() if o in ("fail", "error", "timeout")),
                         key=lambda r: int(r[1:]))
        answer: dict[str, Any] = {"status": "killed" if kills else "survived", "kills": kills,
                                  "failing_rules": failing, "seconds": round(time.monotonic() - t0, 2)}
    finally:
        if cov is not None:
            cov.stop()
    if cov is not None:
        data = cov.get_data()
        copy = (root / package_name(mutant)).resolve()  # keyed as mutants name modules: loop.py, kit/script.py
        answer["lines"] = {Path(f).resolve().relative_to(copy).as_posix(): sorted(data.lines(f) or [])
                           for f in data.measured_files()}
    return answer


# ============================================================================ workers

@dataclass
class Result:
    mutant: Mutant
    status: str
    detail: str = ""
    kills: list[dict[str, Any]] = field(default_factory=list)
    failing_rules: list[str] = field(default_factory=list)
    seconds: float = 0.0
    reached: bool | None = None
    reason: str = ""  # an equivalent's recorded reason

    @property
    def by_corpus(self) -> int:
        return sum(k["source"] == "corpus" for k in self.kills)

    @property
    def by_generated(self) -> int:
        return sum(k["source"] == "property" for k in self.kills)

    @property
    def blamed(self) -> bool | None:
        """Whether the run blamed one of the mutant's rules (its compliance row reads fail)."""
        if self.status != "killed" or not self.mutant.rules:
            return None
        return any(r in self.failing_rules for r in self.mutant.rules)


def _child(conn: Connection, mutant: Mutant | None, timeout: float, root: str, coverage: bool) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    try:
        answer = evaluate(mutant, _CASES, timeout, Path(root), Path(root) if coverage else None)
    except BaseException as e:  # noqa: BLE001 - reported to the parent, whatever it is
        answer = {"status": "broken", "detail": f"the mutant's run raised {type(e).__name__}: {e}"}
    try:
        conn.send(answer)
    finally:
        conn.close()
        os._exit(0)  # no clean-up of what the mutant left behind (threads, atexit hooks)


def run_mutants(mutants: list[Mutant | None], cases: list[Case], jobs: int, scenario_timeout: float,
                mutant_timeout: float, root: Path, coverage: bool = False) -> Iterator[tuple[Mutant | None, dict[str, Any]]]:
    """Evaluate each mutant in a worker of its own (``parallel.fork``, as ``run --jobs``
    forks its workers; a mutant may corrupt its interpreter, so a worker serves one), at
    most ``jobs`` at once; yields (mutant, answer) as they end, in no fixed order."""

    global _CASES
    _CASES = cases
    pending = list(reversed(mutants))
    running: dict[Connection, Worker] = {}
    try:
        while pending or running:
            while pending and len(running) < jobs:
                m = pending.pop()
                here = root / f"w{len(mutants) - len(pending)}"
                here.mkdir(parents=True, exist_ok=True)
                w = fork(_child, m, scenario_timeout, str(here), coverage)
                w.busy = m
                running[w.conn] = w
            ready = wait(list(running), timeout=0.5)
            for conn in ready:
                r = running.pop(conn)  # type: ignore[arg-type]
                try:
                    answer = r.conn.recv()
                except (EOFError, OSError):
                    r.process.join(5)
                    answer = {"status": "broken", "detail": f"the worker died (exit {r.process.exitcode})"}
                r.conn.close()
                r.process.join(5)
                answer.setdefault("seconds", round(time.monotonic() - r.since, 2))
                yield r.busy, answer
            now = time.monotonic()
            for conn, r in list(running.items()):
                if now - r.since > mutant_timeout:
                    r.kill()
                    del running[conn]
                    yield r.busy, {"status": "timeout", "seconds": round(now - r.since, 2),
                                   "detail": f"its run took more than {mutant_timeout:g}s and was killed"}
    finally:
        for r in running.values():
            r.kill()


# ============================================================================ the command

def cmd_mutate(args: argparse.Namespace) -> int:
    output = Path(args.output)
    if args.cases and not Path(args.cases).is_dir():
        print(f"error: --cases {args.cases}: no such directory", file=sys.stderr)
        return EXIT_USAGE
    check_directory(output, "--output", create=False)  # a read-only place is refused before minutes of work
    for path, option in ((args.markdown, "--markdown"), (args.html, "--html")):
        if path:
            check_writable(path, option)
    try:
        p = plan(args.budget, args.seed, with_faults=not args.no_faults, only=args.only or None,
                 modules=args.module or None)
    except MutantError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ImportError as e:
        print(f"error: dsh-conformance mutate needs its extra ({e.name} is missing): "
              "pip install 'dsh-conformance[mutate]'", file=sys.stderr)
        return EXIT_USAGE
    if args.replay:
        return _replay(p, args)
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    say(f"mutate: {len(p.mutants)} mutants ({sum(m.kind == 'operator' for m in p.mutants)} operator, "
        f"{sum(m.kind == 'fault' for m in p.mutants)} from the fault catalogue); drawing the default run's "
        f"scenarios (seed {args.seed}, {args.examples} examples)")
    t0 = time.monotonic()
    cases = default_cases(args.examples, args.seed, corpus=not args.no_corpus, cases_dir=Path(args.cases) if args.cases else None)
    say(f"mutate: {sum(c.source == 'corpus' for c in cases)} corpus cases, "
        f"{sum(c.source == 'property' for c in cases)} generated; checking the unmutated copy")
    with tempfile.TemporaryDirectory(prefix="dsh-mutants-") as tmp:
        root = Path(tmp)
        (_, base), = list(run_mutants([None], cases, 1, args.timeout, max(args.mutant_timeout, 600), root, coverage=True))
        if base["status"] != "survived":
            print("error: the unmutated copy of the oracle does not pass the default run, so no mutant can be judged: "
                  + (base.get("detail") or ", ".join(f"{k['case']} {k['outcome']}" for k in base.get("kills", [])[:10])),
                  file=sys.stderr)
            return EXIT_BASELINE
        lines = {m: set(v) for m, v in base.get("lines", {}).items()}
        say(f"mutate: the unmutated copy passes all {len(cases)} cases ({base['seconds']:.1f}s); "
            f"running {len(p.mutants)} mutants, {args.jobs} at a time")
        results = []
        notes = equivalents()
        done = 0
        for m, answer in run_mutants(list(p.mutants), cases, args.jobs, args.timeout, args.mutant_timeout, root):
            assert m is not None
            done += 1
            r = _result(m, answer, lines, notes)
            results.append(r)
            say(f"[{done}/{len(p.mutants)}] {r.status:<10} {m.id}  "
                + (f"(corpus {r.by_corpus}, generated {r.by_generated}) " if r.status == "killed" else "")
                + f"{r.seconds:.1f}s")
    order = {m.id: i for i, m in enumerate(p.mutants)}
    results.sort(key=lambda r: order[r.mutant.id])

    stale = [i for i, note in notes.items() if any(r.mutant.id == i and r.status in DETECTED for r in results)]
    meta = {"seed": args.seed, "examples": args.examples, "budget": args.budget, "corpus": not args.no_corpus,
            "cases": {"corpus": sum(c.source == "corpus" for c in cases),
                      "generated": sum(c.source == "property" for c in cases)},
            "points": p.points, "per_module": p.per_module, "excluded_modules": excluded_modules(),
            "excluded_functions": excluded_functions(),
            "seconds": round(time.monotonic() - t0, 1), "stale_notes": stale,
            "command": _command(args)}
    output.mkdir(parents=True, exist_ok=True)

    write_atomic(output / "mutants.jsonl", mr.jsonl(results, meta))
    markdown = mr.markdown(results, meta)
    write_atomic(output / "mutation.md", markdown)
    write_atomic(output / "mutation.html", mr.html(results, meta))
    if args.markdown:
        write_atomic(args.markdown, markdown)
    if args.html:
        write_atomic(args.html, mr.html(results, meta))
    print(mr.console(results, meta))
    print(f"\nwrote {output / 'mutants.jsonl'}, {output / 'mutation.md'}, {output / 'mutation.html'}")
    survivors = [r for r in results if r.status == "survived"]
    for s in stale:
        print(f"STALE equivalence note: {s} is detected now; remove its note", file=sys.stderr)
    return EXIT_SURVIVORS if survivors or stale else EXIT_OK


def _result(m: Mutant, answer: dict[str, Any], lines: dict[str, set[int]], notes: dict[str, dict[str, str]]) -> Result:
    r = Result(m, answer["status"], answer.get("detail", ""), answer.get("kills", []), answer.get("failing_rules", []),
               answer.get("seconds", 0.0))
    if m.kind == "operator":
        r.reached = m.line in lines.get(m.module, set())
    if r.status == "survived" and m.id in notes:
        r.status, r.reason = "equivalent", notes[m.id]["reason"]
    return r


def _command(args: argparse.Namespace) -> str:
    parts = ["dsh-conformance", "mutate", "--seed", str(args.seed), "--budget", str(args.budget)]
    if args.examples != 100:
        parts += ["--examples", str(args.examples)]
    if args.no_faults:
        parts.append("--no-faults")
    if args.no_corpus:
        parts.append("--no-corpus")
    for m in args.module or []:
        parts += ["--module", m]
    return " ".join(shlex.quote(p) for p in parts)


def _replay(p: Plan, args: argparse.Namespace) -> int:
    """``--only ID --replay CASE``: run one case against one mutant and print every divergence."""
    if len(p.mutants) != 1:
        print("error: --replay needs exactly one mutant (--only ID)", file=sys.stderr)
        return EXIT_USAGE
    mutant = p.mutants[0]
    case = args.replay
    doc: dict[str, Any] | None = None
    source = "replay"
    if Path(case).is_file():

        _, doc = load_scenario_document(Path(case))
    elif (CASES / f"{case}.json").is_file():

        doc = load_case(CASES / f"{case}.json").document
    else:
        found = [c for c in default_cases(args.examples, args.seed, corpus=False) if c.id == case]
        if not found:
            print(f"error: --replay {case}: no case file, no corpus case and no generated scenario of seed "
                  f"{args.seed} ({args.examples} examples) has this id", file=sys.stderr)
            return EXIT_USAGE
        doc = found[0].doc
    scenario = parse_scenario(doc)
    expected = run_scenario(scenario)
    with tempfile.TemporaryDirectory(prefix="dsh-mutant-") as tmp:
        serve = load(mutant, Path(tmp))
        iut = InProcessIUT(serve.started, serve.answer, timeout=args.timeout)
        iut.start()
        runner = Runner(iut, set(ORACLE_PROFILES), give_up_after=0)
        rec = runner.decide(scenario.id or case, doc, source, None, scenario, expected)
        iut.close(graceful=False)
    print(f"mutant {mutant.id}: {mutant.change}")
    print(f"{rec.outcome.value}: {rec.id} (rules {', '.join(rec.rules) or '-'})")
    if runner.last is not None and rec.outcome.value == "fail":
        print_all_divergences(*runner.last, rec)
    elif rec.message:
        print(rec.message)
    return EXIT_OK if rec.outcome.value != "pass" else EXIT_SURVIVORS


__all__ = ["cmd_mutate", "default_cases", "evaluate", "run_mutants", "Result", "Case"]
