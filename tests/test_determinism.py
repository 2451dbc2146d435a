"""``python -m oracle run`` is deterministic: same input, same bytes, across processes
(whatever the hash seed) and across runs; scenarios and traces round-trip through JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from dsh_conformance.spec.corpus import CASES, load_corpus
from dsh_conformance.oracle import parse_scenario, parse_trace, run_scenario
from dsh_conformance.kit.scenario import scenario_to_json

DIGEST = """
import hashlib, io, contextlib, sys
from pathlib import Path
from dsh_conformance.oracle.__main__ import main
h = hashlib.sha256()
for p in sorted(Path(sys.argv[1]).glob('*.json')):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(['run', str(p)]) == 0, p
    h.update(p.name.encode() + b'\\0' + out.getvalue().encode())
print(h.hexdigest())
"""


def _digest(seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    out = subprocess.run([sys.executable, "-c", DIGEST, str(CASES)], capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip()


def test_same_bytes_across_processes_and_hash_seeds():
    assert _digest("1") == _digest("4242")


def test_scenarios_round_trip():
    for case in load_corpus():
        again = parse_scenario(scenario_to_json(case.scenario))
        assert again == case.scenario, case.id


def test_traces_round_trip():
    for case in load_corpus():
        trace = run_scenario(case.scenario)
        assert parse_trace(json.loads(trace.dumps())).dumps() == trace.dumps(), case.id
