"""Faults planted in rc.8's own pipeline code fail the default run, blamed on the rule they
break; the unchanged package passes it (issue 37).

Each fault is a maintainer's slip in the built ``packages/dsh-tools/lib/index.js`` of a DSH
tree assembled from the pinned release's tarballs (tests/dsh_trees.py), within the spec's
scope, by class:

- P84, the block message derived from feedback (``failureMessageFromContent``): the
  emptiness test, the separator, the placeholder of a non-text block, the text test;
- P9, message(x) of a thrown Error (``errorMessage``): its first two checks swapped (an
  accessor ``message`` is read twice, a non-string one read again), or an Error whose
  ``message`` is not a string stringified;
- P60, the fusion after the body (``dispatchToolBody``'s ``finally``): not detached, or the
  wrapper's signal not put back on the record;
- P125, ``run_code`` returning before its started sub-calls committed when the code
  runtime's ``run()`` rejects (the drain around ``runtime.run``): not awaited, or moved out
  of the ``finally``.

Every variant is caught by a corpus case, so each runs as the corpus part of the default run
(``--examples 0``). That is the default run's verdict: the default run is the same corpus
plus generated draws, each case is judged on its own, and a draw can add failures to a run
but cannot take a corpus case's unexpected failure (and with it exit 1) away. The unchanged
tree is run once as the full default run (the corpus and the 100 generated draws of seed 0).
A run against a tree takes seconds to a minute; the hang guards are generous.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from dsh_conformance.reporting.report import Outcome, read_report

from .dsh_trees import assemble_tree, patch

EXPECTATIONS = "dsh-tools-0.1.0-rc.8"
HANG_GUARD = 900  # seconds: a hang guard, not a limit on how long a run may take


@dataclass(frozen=True)
class Fault:
    id: str
    rule: str  # the rule the fault breaks: some unexpected failure must be blamed on it
    old: str  # the text of rc.8's lib/index.js the fault replaces (exactly once)
    new: str


_ERROR_MESSAGE = ('\t\tif (error instanceof Error) return error.message;\n'
                  '\t\tif (typeof error === "object" && error !== null && "message" in error'
                  ' && typeof error.message === "string") return error.message;\n')
_BODY_FINALLY = '\t\t} finally {\n\t\t\tfused.dispose();\n\t\t\texec.signal = wrapperSignal;\n'
_RUN_FINALLY = ('\t\t\t\t} finally {\n\t\t\t\t\trunController.abort("run_code settled");\n'
                '\t\t\t\t\tawait drainDispatches();\n\t\t\t\t}\n')

FAULTS = [
    # P84: one-character slips in failureMessageFromContent
    Fault("P84-empty-test", "P84", 'return text.length > 0 ? text : "tool result blocked',
          'return text.length > 1 ? text : "tool result blocked'),
    Fault("P84-separator", "P84", 'content]`).join("\\n");', 'content]`).join(" ");'),
    Fault("P84-placeholder", "P84", "`[${block.type} content]`", "`[${block.type} contents]`"),
    Fault("P84-text-test", "P84", 'block.type === "text" ? block.text', 'block.type !== "text" ? block.text'),
    # P9: errorMessage
    Fault("P9-checks-swapped", "P9", _ERROR_MESSAGE,
          '\t\tif (typeof error === "object" && error !== null && "message" in error'
          ' && typeof error.message === "string") return error.message;\n'
          '\t\tif (error instanceof Error) return error.message;\n'),
    Fault("P9-non-string-stringified", "P9", _ERROR_MESSAGE,
          '\t\tif (error instanceof Error && typeof error.message === "string") return error.message;\n'
          '\t\tif (typeof error === "object" && error !== null && "message" in error'
          ' && typeof error.message === "string") return error.message;\n'),
    # P60: dispatchToolBody's finally
    Fault("P60-not-detached", "P60", _BODY_FINALLY, '\t\t} finally {\n\t\t\texec.signal = wrapperSignal;\n'),
    Fault("P60-not-put-back", "P60", _BODY_FINALLY, '\t\t} finally {\n\t\t\tfused.dispose();\n'),
    # P125: the drain around runtime.run
    Fault("P125-drain-not-awaited", "P125", _RUN_FINALLY, _RUN_FINALLY.replace("await drainDispatches()",
                                                                             "drainDispatches()")),
    Fault("P125-drain-outside-finally", "P125", _RUN_FINALLY,
          '\t\t\t\t} finally {\n\t\t\t\t\trunController.abort("run_code settled");\n\t\t\t\t}\n'
          '\t\t\t\tawait drainDispatches();\n'),
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return assemble_tree(tmp_path_factory.mktemp("tree"))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the module's runs: the oracle's traces are computed once."""
    return tmp_path_factory.mktemp("cache")


def default_run(tree: Path, report: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DSH_CONFORMANCE_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "run", "--impl", f"dsh:{tree}",
                           "--expectations", EXPECTATIONS, "--report", str(report), "--quiet", *extra],
                          capture_output=True, text=True, timeout=HANG_GUARD, env=env)


@pytest.mark.rules("P9", "P60", "P84", "P125")
def test_the_unchanged_package_passes_the_default_run(tree, cache, tmp_path):
    out = default_run(tree, tmp_path / "r.jsonl", cache)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    report = read_report(tmp_path / "r.jsonl")
    assert report.header.examples == 100 and report.header.seed == 0  # the default run's draws


@pytest.mark.parametrize("fault", [pytest.param(f, id=f.id, marks=pytest.mark.rules(f.rule)) for f in FAULTS])
def test_a_planted_fault_fails_the_default_run_on_its_rule(fault, tree, cache, tmp_path):
    work = tmp_path / "dsh"
    shutil.copytree(tree, work, symlinks=True)
    index = work / "packages" / "dsh-tools" / "lib" / "index.js"
    assert index.read_text(encoding="utf-8").count(fault.old) == 1, "the planted text is not rc.8's"
    patch(work, "dsh-tools", fault.old, fault.new)
    out = default_run(work, tmp_path / "r.jsonl", cache, "--examples", "0")
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-2000:]
    report = read_report(tmp_path / "r.jsonl")
    unexpected = {c.id: c.failing_rules for c in report.cases if c.outcome is Outcome.FAIL}
    assert any(fault.rule in rules for rules in unexpected.values()), unexpected
