"""The oracle on the command line.

``python -m oracle run SCENARIO.json`` prints the oracle's trace (same input, same bytes).
Exit codes: 0 trace printed; 2 bad input (the scenario file does not parse, or cannot be
run to an end), with one line on stderr naming the file and the JSON path.

``python -m oracle serve`` speaks the IUT protocol v1 on stdin/stdout (see
``conformance.protocol``), so that the suite can test the oracle like any implementation.
"""

from __future__ import annotations

import argparse
import sys

from . import ScenarioFileError, ScenarioRunError, load_scenario, run_scenario
from .serve import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oracle", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="print the trace of one scenario file")
    run.add_argument("scenario", help="a scenario file (JSON)")
    sub.add_parser("serve", help="speak the IUT protocol v1 on stdin/stdout")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(sys.stdin.buffer, sys.stdout)
    if args.command == "run":
        try:
            trace = run_scenario(load_scenario(args.scenario))
        except ScenarioFileError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except ScenarioRunError as e:
            print(f"error: {args.scenario}: $: {e}", file=sys.stderr)
            return 2
        sys.stdout.write(trace.dumps())
    return 0


if __name__ == "__main__":
    sys.exit(main())
