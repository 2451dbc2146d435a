"""The grammar of the ``dsh-conformance`` command: every command and option, and which
module runs each command.

A light module: it imports the standard library, the option types (``argtypes``), the
defaults (``defaults``) and where the package data is (``resources``), nothing that runs
a command. So ``--help``, ``--version``, ``COMMAND --help`` and a usage error (exit 2) are
answered without importing the oracle, pydantic, hypothesis or jsonschema (seconds on a
busy machine); a command's module is imported only when that command runs (``Command``).

A new command or option: its code in a module of its own, its few lines of grammar here.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from dsh_conformance import __version__
from dsh_conformance.argtypes import count, fraction, seconds
from dsh_conformance.defaults import (
    DEFAULT_BUDGET,
    DEFAULT_EXAMPLES,
    DEFAULT_GIVE_UP_AFTER,
    DEFAULT_JOBS,
    DEFAULT_MAX_SKIPPED,
    DEFAULT_MUTANT_TIMEOUT,
    DEFAULT_SCENARIO_TIMEOUT,
    DEFAULT_START_TIMEOUT,
    DEFAULT_TIMEOUT,
    DOCS_MAX_PER_FILE,
)
from dsh_conformance.resources import CASES, CATALOGS, CLONE, COVERAGE_EXCEPTIONS, DOCS as OUR_DOCS
from dsh_conformance.running.shards import shard
from dsh_conformance.spec.rules import PROFILES

PROG = "dsh-conformance"


class Command:
    """A command's function, named by its module and imported when the command runs."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def load(self) -> Callable[[argparse.Namespace], int]:
        function: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(self.module), self.name)
        return function

    def __call__(self, args: argparse.Namespace) -> int:
        return self.load()(args)

    def __repr__(self) -> str:
        return f"Command({self.module}:{self.name})"


def _runs(p: argparse.ArgumentParser, module: str, name: str) -> None:
    p.set_defaults(func=Command(f"dsh_conformance.{module}", name))


class Parser(argparse.ArgumentParser):
    """argparse's parser whose refusal of a command line is one line on stderr (exit 2): the
    error, the nearest option or choice when one is near ("did you mean"), and where the usage
    is, not the command's 12 lines of usage before it (issue 44). Python 3.14's
    ``suggest_on_error`` is not there on 3.11: ``difflib`` does it."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.words = list(sys.argv[1:] if args is None else args)  # for the nearest option of a subcommand
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        from dsh_conformance.textio.terminal import one_line  # light: the user's words shown escaped, on one line

        self.exit(2, f"{self.prog}: error: {one_line(message + self.nearest(message))} "
                     f"(see {self.chosen().prog} --help)\n")

    def nearest(self, message: str) -> str:
        if m := re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message):
            near = difflib.get_close_matches(m.group(1), re.findall(r"'([^']*)'", m.group(2)), n=1)
            return f"; did you mean {near[0]!r}?" if near else ""
        if m := re.search(r"unrecognized arguments: (.*)", message):
            options = [o for a in self.chosen()._actions for o in a.option_strings if o.startswith("--")]
            found = [difflib.get_close_matches(w.split("=", 1)[0], options, n=1) for w in m.group(1).split()
                     if w.startswith("--")]
            near = [f[0] for f in found if f]
            return f"; did you mean {' '.join(near)}?" if near else ""
        return ""

    def chosen(self) -> argparse.ArgumentParser:
        """The parser of the subcommand the command line names, else this one."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):  # the stdlib's, no public name
                name = next((w for w in getattr(self, "words", []) if w in action.choices), None)
                if name is not None:
                    sub: argparse.ArgumentParser = action.choices[name]
                    return sub.chosen() if isinstance(sub, Parser) else sub
        return self


def parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Conformance suite for the DSH tool execution pipeline.")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    _run(sub)
    _replay(sub)
    _report(sub)
    _expectations(sub)
    _bench(sub)
    _catalogs(sub)
    _badge(sub)
    _coverage(sub)
    _diff(sub)
    _merge(sub)
    _site(sub)
    _tree(sub)
    _kit(sub)
    _mutate(sub)
    _docs(sub)
    return p


Subparsers = Any  # argparse._SubParsersAction, private


def _iut_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--impl", help="the implementation under test: 'oracle' (default), 'dsh' (the real package "
                   "via the Node adapter, at the version it pins), 'dsh@VERSION' (a published version), 'dsh:PATH' "
                   "(a DSH working tree's built packages), 'py:MODULE' (in-process), or a command line")
    p.add_argument("--profile", action="append", choices=list(PROFILES), help="a profile to check, and that the run "
                   "must score (repeatable; default: every profile, none required)")
    p.add_argument("--profiles", action="append", metavar="P,Q", help="profiles to check and that the run must score, "
                   "comma-separated (core,reference,loop,code-mode): one the implementation does not support, or "
                   "no case of the run scores, fails the run (exit 1)")
    p.add_argument("--expectations", help="a YAML file of expected failures and errors of this implementation")
    p.add_argument("--validate", action="store_true", help="check every IUT message against the protocol schemas")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT,
                   help=f"seconds an IUT may take per scenario (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--start-timeout", type=seconds, default=DEFAULT_START_TIMEOUT,
                   help=f"seconds an IUT may take to start and answer the handshake (default {DEFAULT_START_TIMEOUT:g})")


def _run(sub: Subparsers) -> None:
    run = sub.add_parser("run", help="run the suite against an implementation and print the compliance table")
    _iut_options(run)
    run.add_argument("--examples", type=count(0), default=None,
                     help=f"generated scenarios (default {DEFAULT_EXAMPLES}, or 0 when -k, --case or --rule choose "
                          "cases; 0: corpus only)")
    run.add_argument("--seed", type=int, default=0, help="seed of the generated scenarios (default 0)")
    run.add_argument("--report", help="write the JSON-lines report here (a record appended as each case is decided: "
                     "a killed run leaves a valid partial report)")
    run.add_argument("--junit", help="write JUnit XML here at the end of the run")
    run.add_argument("--cases", default=str(CASES),
                     help="the corpus: a directory of case files, or one case file (default: the built-in corpus)")
    run.add_argument("-k", dest="keyword", metavar="EXPR",
                     help="only cases matching EXPR: words (part of a case id, or a rule id it cites) joined by "
                          "and/or/not and parentheses, as pytest's -k")
    run.add_argument("--case", action="append", metavar="ID|FILE",
                     help="only this case: an id of the corpus, or a case file (repeatable)")
    run.add_argument("--rule", action="append", metavar="P11", help="only cases citing this rule (repeatable)")
    run.add_argument("--max-fail", type=count(0), default=0, metavar="N",
                     help="stop after N unexpected failures or errors; the cases left are not-run (default 0: never)")
    run.add_argument("--fail-fast", action="store_true", help="stop at the first unexpected failure (--max-fail 1)")
    run.add_argument("--max-skipped", type=fraction, default=DEFAULT_MAX_SKIPPED, metavar="FRACTION",
                     help=f"fail the run when the implementation skips more than this share of the scenarios it is "
                          f"asked (default {DEFAULT_MAX_SKIPPED:g}; 1: never)")
    run.add_argument("--no-corpus", action="store_true", help="run generated scenarios only")
    run.add_argument("--failures", default="dsh-failures",
                     help="where shrunk counterexamples and generated cases that errored are saved (default dsh-failures)")
    run.add_argument("--give-up-after", type=count(0), default=DEFAULT_GIVE_UP_AFTER, metavar="N",
                     help="declare the implementation broken after N consecutive timeouts or crashes: the cases "
                          f"left are recorded as not run, exit 3 (default {DEFAULT_GIVE_UP_AFTER}; 0: never)")
    run.add_argument("--jobs", type=count(1), default=1, metavar="N", help="N instances of the implementation "
                     "at once, each in a worker process; the same report as one (default 1)")
    run.add_argument("--shard", type=shard, metavar="K/M", help="run shard K of M (a CI matrix): a slice "
                     "of the cases and of the generated attempts; `merge` joins the M reports")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress line on the terminal")
    run.add_argument("--build", action="store_true", help="with --impl dsh:PATH: install and build what the adapter "
                     "needs of the tree first, only what changed (as `dsh-conformance tree` does)")
    run.add_argument("--ignore-scripts", action="store_true", help="with --build: install the tree's dependencies "
                     "without running their lifecycle scripts (the tree's build and packages still run)")
    _runs(run, "cli", "cmd_run")


def _replay(sub: Subparsers) -> None:
    replay = sub.add_parser("replay", help="re-run one case file and print the first divergence")
    replay.add_argument("case", help="a case file (for example one saved under dsh-failures/), or the id of a case "
                        "of the built-in corpus")
    replay.add_argument("--all", action="store_true", help="list every divergence, each with its place and rules")
    _iut_options(replay)
    _runs(replay, "cli", "cmd_replay")


def _report(sub: Subparsers) -> None:
    rep = sub.add_parser("report", help="render reports as a compliance matrix (rules x implementations)")
    rep.add_argument("reports", nargs="+", help="JSON-lines reports written by run --report")
    rep.add_argument("--format", choices=["md", "html", "json"], default="md", help="the output format (default md)")
    rep.add_argument("-o", "--output", help="write the matrix here (default: standard output)")
    rep.add_argument("--title", default="Compliance matrix", help="the page's title")
    rep.add_argument("--note", help="a line of text under the title (for example how to regenerate the page)")
    _runs(rep, "cli", "cmd_report")


def _expectations(sub: Subparsers) -> None:
    exp = sub.add_parser("expectations", help="write an expectations file from a report")
    exp.add_argument("action", choices=["update"], help="update: write (or rewrite, keeping its reasons) the file")
    exp.add_argument("--report", required=True, help="the report of a finished run")
    exp.add_argument("--output", required=True, help="the expectations file to write")
    exp.add_argument("--allow-partial", action="store_true",
                     help="write even from a partial report (a killed or early-stopped run)")
    _runs(exp, "cli", "cmd_expectations")


def _bench(sub: Subparsers) -> None:
    bench = sub.add_parser("bench", help="every speed figure side by side: the oracle, plain calls, the suite "
                           "in-process, over the protocol and against --impl, the Node adapter, run's duration")
    bench.add_argument("--impl", help="an implementation to measure beside the oracle (as for run); 'dsh' adds "
                       "the Node adapter's own figures")
    bench.add_argument("--cases", default=str(CASES), help="the scenarios to run (default: the built-in corpus)")
    bench.add_argument("--repeat", type=count(1), default=3, help="rounds of each measurement; the best counts "
                       "(default 3)")
    bench.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT,
                       help=f"seconds an IUT may take per scenario (default {DEFAULT_TIMEOUT:g})")
    bench.add_argument("--scaling", action="store_true", help="also print how cost grows with calls per batch "
                       "(direct and loop) and with scenario size, with peak memory")
    bench.add_argument("--generated", type=count(1), metavar="N", nargs="?", const=1000,
                       help="also time `run --no-corpus --examples N` (default N: 1,000) against --impl (the oracle "
                       "without it), start to end; with --impl dsh and 1,000 examples against its 60 s target")
    bench.add_argument("--make-test", action="store_true", help="also time `make test` in the source tree this "
                       "package runs from (against its 3-minute target; takes minutes)")
    bench.add_argument("--seed", type=int, default=2, help="the seed of --generated (default 2)")
    bench.add_argument("--skip-run", action="store_true", help="do not time `dsh-conformance run` (make run) "
                       "from start to end")
    _runs(bench, "measuring.bench_command", "cmd_bench")


def _catalogs(sub: Subparsers) -> None:
    cat = sub.add_parser("catalogs", help="generate or check the generated catalogs")
    cat.add_argument("action", choices=["generate", "check"], help="generate: write catalogs/; check: compare with it")
    _runs(cat, "cli", "cmd_catalogs")


def _badge(sub: Subparsers) -> None:
    p = sub.add_parser("badge", help="write SVG badges of each report's scores, overall and per profile")
    p.add_argument("reports", nargs="+", metavar="REPORT.jsonl", help="JSON-lines reports written by run --report")
    p.add_argument("-o", "--output", default=".", help="the directory to write the badges in (default: here)")
    p.add_argument("--allow-partial", action="store_true",
                   help="badges even of a partial report (a killed or early-stopped run; refused by default, exit 2)")
    _runs(p, "reporting.badges", "cmd_badge")


def _coverage(sub: Subparsers) -> None:
    p = sub.add_parser("coverage", help="oracle branch coverage of the corpus alone and of the generated default "
                       "run alone; prints, by rule, the branches only the corpus reaches")
    p.add_argument("--examples", type=count(0), default=DEFAULT_EXAMPLES,
                   help=f"generated scenarios (default {DEFAULT_EXAMPLES}, as run)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated scenarios (default 0, as run)")
    p.add_argument("--cases", default=str(CASES), help="the corpus directory (default: the built-in corpus)")
    p.add_argument("--exceptions", default=str(COVERAGE_EXCEPTIONS),
                   help="the listed branches no draw can reach, with why (default: the committed list)")
    p.add_argument("--format", choices=["text", "json"], default="text", help="the output format (default text)")
    _runs(p, "measuring.coverage", "cmd_coverage")


def _diff(sub: Subparsers) -> None:
    p = sub.add_parser("diff", help="what changed between two runs: outcomes per rule and case (regressions first), "
                       "traces, divergences; exit 1 when anything regressed")
    p.add_argument("old", metavar="OLD.jsonl", help="the report of the earlier run (the release, say)")
    p.add_argument("new", metavar="NEW.jsonl", help="the report of the later run (the working tree, say)")
    p.add_argument("--format", choices=["text", "md", "json"], default="text", help="the output format (default text)")
    p.add_argument("-o", "--output", help="write the diff here (default: standard output)")
    p.add_argument("--full", action="store_true", help="text: also every changed case, trace and divergence, one by one")
    p.add_argument("--allow-partial", action="store_true",
                   help="diff even a partial report (a killed or early-stopped run; refused by default, exit 2)")
    _runs(p, "reporting.run_diff", "cmd_diff")


def _merge(sub: Subparsers) -> None:
    p = sub.add_parser("merge", help="join the reports of a run's shards (run --shard K/M) into the report of "
                       "the whole run, footer and exit code included")
    p.add_argument("reports", nargs="+", metavar="SHARD.jsonl", help="the M reports of run --shard 1/M ... M/M")
    p.add_argument("-o", "--output", required=True, help="the merged report to write")
    p.add_argument("--max-skipped", type=fraction, default=DEFAULT_MAX_SKIPPED, metavar="FRACTION",
                   help=f"as run's: the whole run fails when the implementation skipped more than this share "
                        f"(default {DEFAULT_MAX_SKIPPED:g})")
    _runs(p, "running.merge", "cmd_merge")


def _site(sub: Subparsers) -> None:
    p = sub.add_parser("site", help="build a static results site from reports: implementations x profiles, a page "
                       "per implementation (versions, what changed), per rule and per case, search, badge data")
    p.add_argument("reports", nargs="+", metavar="REPORT.jsonl", help="JSON-lines reports written by run --report")
    p.add_argument("-o", "--output", required=True, help="the directory to write the site in (created if missing)")
    p.add_argument("--title", default="dsh conformance results", help="the site's title")
    _runs(p, "reporting.site_pages", "cmd_site")


def _tree(sub: Subparsers) -> None:
    p = sub.add_parser("tree", help="build a DSH checkout's packages (only what changed), run the suite on them and "
                       "print the diff against the pinned release; exit 1 when anything regressed")
    p.add_argument("path", metavar="PATH", help="the DSH checkout (the monorepo's root)")
    p.add_argument("--against", default="dsh", metavar="IMPL|REPORT",
                   help="the baseline: dsh (the pinned release, default), dsh@VERSION, or a report file (.jsonl)")
    p.add_argument("--expectations", default="dsh-tools-0.1.0-rc.8",
                   help="the expectations of both runs (default: the pinned release's, dsh-tools-0.1.0-rc.8)")
    p.add_argument("--examples", type=int, default=100, help="generated scenarios per run (default 100)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated scenarios (default 0)")
    p.add_argument("--cases", help="the corpus directory of both runs (default: the built-in corpus)")
    p.add_argument("--report", help="write the tree's report here (default: the tree's cache directory)")
    p.add_argument("--no-build", action="store_true", help="run the tree as it is built (a stale build is refused)")
    p.add_argument("--ignore-scripts", action="store_true", help="install the tree's dependencies without running "
                   "their lifecycle scripts (the tree's build and packages still run: see the trust model)")
    p.add_argument("--format", choices=["text", "md", "json"], default="text", help="the diff's format (default text)")
    p.add_argument("--full", action="store_true", help="text: also every changed case, one by one")
    _runs(p, "tree_command", "cmd_tree")


def _kit(sub: Subparsers) -> None:
    p = sub.add_parser("kit", help="write an adapter kit: the generic half of an adapter and a binding skeleton "
                       "for your implementation")
    kits = p.add_subparsers(dest="kit_command", required=True)
    js = kits.add_parser("js", help="write the Node adapter's kit (kit/, adapter.mjs, binding.mjs) into DIR")
    js.add_argument("directory", metavar="DIR", help="where to write it (created when missing; nothing in it is "
                    "overwritten)")
    _runs(js, "porting.kit_js", "cmd_kit")
    py = kits.add_parser("py", help="write a Python starter port on dsh_conformance.kit (core_pipeline.py) into DIR")
    py.add_argument("directory", metavar="DIR", help="where to write it (created when missing; nothing in it is "
                    "overwritten)")
    _runs(py, "porting.kit_py", "cmd_kit")
    agree = kits.add_parser("agree", help="run the starter example on the Python kit and on the JS kit over the "
                            "corpus and generated draws; exit 1 when any answer differs")
    agree.add_argument("--seeds", default="1-5", help="seeds of the generated draws, N or N-M (default 1-5)")
    agree.add_argument("--examples", type=count(0), default=500, help="draws per seed and profile set (default 500)")
    agree.add_argument("--profiles", help="draw for these profiles only (comma-separated; default: core, "
                       "core+reference, code-mode, loop and all four, each)")
    agree.add_argument("--no-corpus", action="store_true", help="the draws only")
    _runs(agree, "measuring.kit_agreement", "cmd_agree")


def _mutate(sub: Subparsers) -> None:
    p = sub.add_parser("mutate", help="measure the suite: run mutants of the oracle through the default run "
                                      "and print a kill table per rule and theme")
    p.add_argument("--budget", type=count(0), default=DEFAULT_BUDGET,
                   help=f"operator mutants to draw over the oracle's modules (default {DEFAULT_BUDGET})")
    p.add_argument("--seed", type=int, default=0, help="seed of the mutant sample and of the generated scenarios "
                   "(default 0)")
    p.add_argument("--examples", type=count(0), default=100, help="generated scenarios of the default run (default 100)")
    p.add_argument("--no-corpus", action="store_true", help="judge the mutants on the generated scenarios only")
    p.add_argument("--cases", default=None, help="the corpus directory (default: the built-in corpus)")
    p.add_argument("--no-faults", action="store_true", help="leave out the fault catalogue")
    p.add_argument("--only", action="append", metavar="ID", help="just this mutant (repeatable; ids as the report "
                   "names them, fault:NAME for a fault of the catalogue)")
    p.add_argument("--module", action="append", metavar="FILE", help="draw operator mutants from this oracle module "
                   "only (repeatable, e.g. loop.py)")
    p.add_argument("--replay", metavar="CASE", help="with one --only: run this case (a corpus id, a case file, or "
                   "a generated scenario's id) against the mutant and print every divergence")
    p.add_argument("--jobs", type=count(1), default=DEFAULT_JOBS, help=f"mutants run at once (default {DEFAULT_JOBS})")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_SCENARIO_TIMEOUT,
                   help=f"seconds a mutant may take per scenario (default {DEFAULT_SCENARIO_TIMEOUT:g})")
    p.add_argument("--mutant-timeout", type=seconds, default=DEFAULT_MUTANT_TIMEOUT,
                   help=f"seconds a mutant's whole run may take before it is killed (default {DEFAULT_MUTANT_TIMEOUT:g})")
    p.add_argument("--output", default="dsh-mutation", help="directory for mutants.jsonl, mutation.md and "
                   "mutation.html (default dsh-mutation)")
    p.add_argument("--markdown", help="also write the Markdown report here (e.g. docs/mutation-report.md)")
    p.add_argument("--html", help="also write the HTML report here")
    p.add_argument("-q", "--quiet", action="store_true", help="no line per mutant on stderr")
    _runs(p, "measuring.mutate", "cmd_mutate")


def _docs(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``docs generate|check|record|coverage`` (tools/docs_cli.py)."""
    # Light (conformance.command_line): where the files are, not the modules that read them.

    docs_dir = OUR_DOCS if OUR_DOCS is not None else Path("docs")  # as tools.pipeline_page: installed, ./docs

    docs = sub.add_parser("docs", help="generate or check the pipeline doc page, or show the flow's coverage")
    actions = docs.add_subparsers(dest="action", required=True)
    gen = actions.add_parser("generate", help="write docs/tool-execution-pipeline.{md,zh.md,i18n.yaml} and docs/rule-reach.md")
    gen.add_argument("--docs", default=str(docs_dir), help="the directory to write into (default: this project's "
                     "docs/ in a clone, else ./docs)")
    gen.set_defaults(func=Command("dsh_conformance.tools.docs_cli", "cmd_generate"))
    check = actions.add_parser("check", help="check a docs tree: pairing, Mermaid block, names")
    check.add_argument("--root", default=str(CLONE) if CLONE is not None else None, required=CLONE is None,
                       help="the tree: a directory holding docs/, or the docs directory itself (default: this "
                            "project, in a clone; an installed suite needs it)")
    check.add_argument("--catalogs", default=str(CATALOGS), help="the catalogs and flow model (default: catalogs/)")
    check.add_argument("--max-per-file", type=int, default=DOCS_MAX_PER_FILE, metavar="N",
                       help=f"findings shown per file; the rest are counted (default {DOCS_MAX_PER_FILE}; 0: all)")
    check.add_argument("--as-of", metavar="COMMIT", default=None,
                       help="check the tree as it was at COMMIT (ROOT must be in a git repository): its pairs by the "
                            "pairing rules its own tooling enforced then, its pipeline facts by the catalogs")
    check.add_argument("--tree-rules", action="store_true",
                       help="judge the pairs by the pairing rules the checked tree's own tooling enforces "
                            "(implied by --as-of)")
    check.set_defaults(func=Command("dsh_conformance.tools.docs_cli", "cmd_check"))
    record = actions.add_parser("record", help="re-record a pair: write PAGE.i18n.yaml with both sides' hashes")
    record.add_argument("pages", nargs="+", metavar="PAGE.md", help="a pair's English (or Chinese) side")
    record.set_defaults(func=Command("dsh_conformance.tools.docs_cli", "cmd_record"))
    cov = actions.add_parser("coverage", help="list each flow edge with the corpus cases that walk it")
    cov.add_argument("--catalogs", default=str(CATALOGS), help="where the flow model is (default: catalogs/)")
    cov.add_argument("--cases", default=None, help="a directory of case files (default: the built-in corpus)")
    cov.set_defaults(func=Command("dsh_conformance.tools.docs_cli", "cmd_coverage"))
