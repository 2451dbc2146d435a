"""``run``'s console for a newcomer (issue 44, item 5): a selection's table holds the rules it
decides; every FAIL block ends with the command that replays it; a usage error is one line
with the nearest option, before the corpus is loaded; a program missing from PATH is named;
Ctrl-C prints a partial summary; ``--max-fail`` leaves the rules it did not run out of the
score, as ``-k`` does."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys

import pytest

from dsh_conformance import cli
from dsh_conformance.cli import main
from dsh_conformance.iut.connection import IUTFailure
from dsh_conformance.iut.process import ProcessIUT
from dsh_conformance.reporting.report import read_report, rule_outcomes
from dsh_conformance.spec.rules import rules
from dsh_conformance.reporting.scores import SCORED, profile_scores

from .conftest import FAKE, ROOT, corpus_subset
from .hang_guards import wait_until

pytestmark = pytest.mark.rules("P1")

HANG_GUARD = 30.0  # seconds on an idle machine: a test module's subprocess timeouts are hang guards (tests/hang_guards.py)
TABLE_ROW = re.compile(r"^(core|reference|loop|code-mode)\s+P\d+\s")


def _light(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dsh_conformance", *argv], capture_output=True, text=True,
                          timeout=HANG_GUARD)


def test_a_selection_prints_the_rows_it_decides(capsys):
    assert main(["run", "-k", "guard-denies-with-number", "-q"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if TABLE_ROW.match(line)]
    assert rows and len(rows) < 20, out
    assert not any(line.endswith("no case") for line in rows)
    assert re.search(r"; \d+ rules no case of this selection cites are not shown\)", out)


def test_every_fail_block_ends_with_its_replay_command(tmp_path, capsys):
    impl = f"{sys.executable} {FAKE} guard-bypass"
    assert main(["run", "--impl", impl, "--max-fail", "2", "-q", "--report", str(tmp_path / "r.jsonl")]) == 1
    out = capsys.readouterr().out
    blocks = re.findall(r"^FAIL (\S+).*?(?=^\S|\Z)", out, re.M | re.S)
    assert len(blocks) == 2, out
    for block in re.split(r"^(?=FAIL )", out, flags=re.M)[1:]:
        case = block.split()[1]
        replay = re.search(r"^  replay: (dsh-conformance replay (\S+) --impl .*)$", block, re.M)
        assert replay and replay.group(2) == case, block


def test_a_fail_blocks_replay_command_runs_where_the_run_was_started(tmp_path, capsys, monkeypatch):
    """The console's replay line is pasted where the run was started: the command and the
    corpus as given (the report's are made portable for other machines: a fake outside the
    working directory and the suite's tree was named by its file name alone, which led nowhere)."""
    elsewhere, here = tmp_path / "elsewhere", tmp_path / "here"
    elsewhere.mkdir(), here.mkdir()
    fake = elsewhere / "my_port.py"
    shutil.copy(FAKE, fake)
    shutil.copy(FAKE.with_name("serve_loop.py"), elsewhere)  # what the fake imports from its own directory
    cases = corpus_subset(elsewhere, ["guard-denies-with-number", "pre-deny-skips-body"])
    monkeypatch.chdir(here)
    impl = f"{sys.executable} {fake} guard-bypass"
    assert main(["run", "--impl", impl, "--cases", str(cases), "--examples", "0", "-q", "--report", "r.jsonl"]) == 1
    lines = re.findall(r"^  replay: dsh-conformance (.*)$", capsys.readouterr().out, re.M)
    assert lines
    for line in lines:
        assert main(shlex.split(line)) == 1
        assert "first divergence at observations" in capsys.readouterr().out


def test_max_fail_scores_only_what_it_decided(tmp_path, capsys):
    report = tmp_path / "r.jsonl"
    impl = f"{sys.executable} {FAKE} guard-bypass"
    assert main(["run", "--impl", impl, "--max-fail", "3", "-q", "--report", str(report)]) == 1
    out = capsys.readouterr().out
    rep = read_report(report)
    outcomes = rule_outcomes(rep.cases)
    assert "not-run" in outcomes.values()  # rules the stop left undecided...
    decided = [r for r in rules().values() if r.profile in rep.header.profiles and outcomes.get(r.id) in SCORED]
    assert not any(outcomes[r.id] == "not-run" for r in decided)  # ...are not scored
    everything = profile_scores(rep.cases, set(rep.header.profiles))[-1]
    assert everything.scored == len(decided)
    assert f"all {everything}" in out


@pytest.mark.parametrize("argv, says", [
    (["run", "--profils", "core"], "unrecognized arguments: --profils core; did you mean --profiles? "
                                   "(see dsh-conformance run --help)"),
    (["run", "--profile", "cor"], "did you mean 'core'?"),
    (["run", "--shard", "3/2"], "argument --shard: not K/M with 1 <= K <= M: '3/2'"),
    (["repaly", "x"], "did you mean 'replay'?"),
    (["docs", "check", "--rot", "x"], "did you mean --root? (see dsh-conformance docs check --help)"),
])
def test_a_usage_error_is_one_line_with_the_nearest_option(argv, says):
    done = _light(*argv)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert not done.stdout


def test_usage_errors_come_before_the_oracle_runs_the_corpus(monkeypatch, capsys):
    def loaded(groups):
        raise AssertionError("the corpus's traces were computed before a usage error")

    monkeypatch.setattr(cli, "_expected_traces", loaded)
    assert main(["run", "--shard", "1/2", "--max-fail", "2"]) == 2
    assert main(["run", "--impl", "py:", "-k", "guard"]) == 2
    err = capsys.readouterr().err
    assert "--shard with --max-fail" in err


def test_a_program_missing_from_path_is_named(tmp_path):
    iut = ProcessIUT(["no-such-program-dsh44", "my-adapter.mjs"], cwd=str(tmp_path))
    with pytest.raises(IUTFailure, match="the program 'no-such-program-dsh44' is not on PATH"):
        iut.start()
    iut = ProcessIUT(["./no-such-adapter.sh"], cwd=str(tmp_path))
    with pytest.raises(IUTFailure, match=r"no such program: \./no-such-adapter\.sh"):
        iut.start()


def test_ctrl_c_prints_a_partial_summary(tmp_path):
    cases = corpus_subset(tmp_path, ["finalize-content-only", "guard-denies-with-number", "pre-deny-skips-body",
                                     "loop-contexts-after-batch"])
    report = tmp_path / "r.jsonl"
    slow = ROOT / "tests" / "fakes" / "slow_iut.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "dsh_conformance", "run", "--impl", f"{sys.executable} {slow} 2",
                             "--cases", str(cases), "--examples", "0", "--report", str(report)], env=env,
                            cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        # Two cases written: the first is surely among the run's decided ones (a case is written
        # to the report just before the run counts it, and the interrupt may land between).
        wait_until(lambda: report.exists() and len(report.read_text().splitlines()) >= 3, proc, HANG_GUARD)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert re.search(r"INTERRUPTED \(interrupted\): a partial summary of the [1-9]\d* case\(s\) decided", out), out
    assert "score (rules passing / scored):" in out and "; exit 130" in out
