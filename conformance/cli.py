"""The ``dsh-conformance`` command.

Until the protocol-based suite lands, ``run`` checks the corpus against the embedded
oracle and prints the compliance table (rule x outcome). Exit codes: 0 every case passes,
1 some case fails, 2 usage error or bad input file.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from oracle import ScenarioFileError, ScenarioRunError, run_scenario

from . import __version__
from .corpus import CASES, load_case
from .expect import check
from .rules import ORACLE_PROFILES, rules

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _run(args: argparse.Namespace) -> int:
    directory = Path(args.cases)
    paths = sorted(directory.glob("*.json"))
    if not paths:
        print(f"error: {directory}: no case files (*.json)", file=sys.stderr)
        return EXIT_USAGE
    try:
        cases = [load_case(p) for p in paths]
    except ScenarioFileError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    profiles = args.profile or list(ORACLE_PROFILES)
    verdicts: dict[str, list[tuple[str, bool]]] = defaultdict(list)
    failed: list[tuple[str, list[str]]] = []
    for case in cases:
        try:
            problems = check(case.scenario.expect or {}, run_scenario(case.scenario))
        except ScenarioRunError as e:
            problems = [f"error: {e}"]
        if problems:
            failed.append((case.id, problems))
        for r in case.scenario.rules:
            verdicts[r].append((case.id, not problems))
    print(f"dsh-conformance {__version__}: {len(cases)} corpus cases against the embedded oracle "
          f"(profiles: {', '.join(profiles)})\n")
    print(f"{'profile':<10} {'rule':<5} {'title':<58} {'cases':>5}  result")
    counts = {"pass": 0, "fail": 0, "no case": 0}
    for rule in rules().values():
        if rule.profile not in profiles:
            continue
        vs = verdicts.get(rule.id, [])
        outcome = "no case" if not vs else ("pass" if all(ok for _, ok in vs) else "fail")
        counts[outcome] += 1
        print(f"{rule.profile:<10} {rule.id:<5} {rule.title[:58]:<58} {len(vs):>5}  {outcome}")
    for case_id, problems in failed:
        print(f"\nFAIL {case_id} ({CASES.name}/{case_id}.json)")
        for p in problems:
            print(f"  - {p}")
    n_rules = sum(counts.values())
    print(f"\n{n_rules} rules: {counts['pass']} pass, {counts['fail']} fail, {counts['no case']} without a case; "
          f"{len(cases)} cases: {len(cases) - len(failed)} passed, {len(failed)} failed")
    return EXIT_FAIL if failed else EXIT_OK


def _catalogs(args: argparse.Namespace) -> int:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dsh-conformance", description="Conformance suite for the DSH tool execution pipeline.")
    parser.add_argument("--version", action="version", version=f"dsh-conformance {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="check the corpus against the embedded oracle and print the compliance table")
    run.add_argument("--cases", default=str(CASES), help="a directory of case files (default: the built-in corpus)")
    run.add_argument("--profile", action="append", choices=list(ORACLE_PROFILES),
                     help="limit the table to these profiles (repeatable)")
    run.set_defaults(func=_run)
    cat = sub.add_parser("catalogs", help="generate or check the generated catalogs")
    cat.add_argument("action", choices=["generate", "check"])
    cat.set_defaults(func=_catalogs)
    from tools import docs_cli

    docs_cli.register(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
