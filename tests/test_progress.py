"""The progress line of a long run: on a terminal (a real pty) it shows, elsewhere and with
``--quiet`` nothing extra is written. The implementation is the oracle slowed down, so
that the runs last longer than the line's delay whatever the machine's load."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

from dsh_conformance.running.progress import DELAY, Progress
from dsh_conformance.reporting.report import Outcome

from .conftest import ROOT, corpus_subset

SLOW = Path(__file__).parent / "fakes" / "slow_iut.py"
CASES = ["pre-deny-skips-body", "guard-denies-with-number", "guard-falsy-returns-deny", "approval-shipped-allowed-once",
         "approval-ask-without-agent-denies", "approval-ask-without-service-denies", "post-default-accept-passes-unchanged",
         "execute-wrapper-replaces-result"]
DELAY_PER_CASE = 0.4
assert len(CASES) * DELAY_PER_CASE > DELAY + 1  # the corpus phase outlasts the delay by a second


def _command(cases: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "dsh_conformance.cli", "run", "--impl", f"{sys.executable} {SLOW} {DELAY_PER_CASE}",
            "--cases", str(cases), *extra]


def _in_pty(cmd: list[str], columns: int = 200) -> tuple[str, str, int]:
    """Run ``cmd`` with its stderr on a terminal ``columns`` wide; its stderr as the
    terminal shows it, its stdout, and its exit code."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out = proc.stdout.read().decode()
    return b"".join(chunks).decode(errors="replace"), out, proc.wait()


def test_progress_shows_on_a_terminal(tmp_path):
    cases = corpus_subset(tmp_path, CASES)
    term, out, code = _in_pty(_command(cases, "--examples", "4"))
    assert code == 0 and f"{len(CASES) + 1} cases ({len(CASES)} corpus cases + 1 case for 4 generated draws): {len(CASES) + 1} pass" in out
    lines = [s for s in term.split("\r\x1b[K") if s]
    corpus = [s for s in lines if s.startswith("corpus ")]
    generated = [s for s in lines if s.startswith("generated ")]
    assert corpus and generated, term
    # cases done / total | failures so far | elapsed, time left | the case running now
    pattern = re.compile(r"^corpus (\d+)/(\d+) \| 0 failed \| \d\d:\d\d elapsed(, ~\d\d:\d\d left)? \| (\S+)$")
    for line in corpus:
        m = pattern.match(line)
        assert m, line
        assert int(m.group(2)) == len(CASES) and int(m.group(1)) < len(CASES) and m.group(4) in CASES
    assert any("left" in line for line in corpus)
    assert all(re.match(r"^generated \d/4 \| 0 failed \| [^|]* elapsed[^|]*( \| generated scenario \d)?$", s)
               for s in generated), generated
    assert any(" | generated scenario " in s for s in generated)
    assert term.endswith("\r\x1b[K")  # the line is erased at the end
    assert "corpus 1/" not in out and "elapsed" not in out  # stdout stays the table


def test_a_terminal_of_0_columns_gets_a_whole_line(tmp_path):
    """A pty that reports 0 columns (as some CI runners' do) is drawn 100 wide, not cut to 10."""
    cases = corpus_subset(tmp_path, CASES[:6])
    term, out, code = _in_pty(_command(cases, "--examples", "0"), columns=0)
    assert code == 0
    lines = [s for s in term.split("\r\x1b[K") if s]
    assert lines and all(re.match(r"^corpus \d/6 \| 0 failed \| \d\d:\d\d elapsed", s) for s in lines), lines
    assert any(s.rstrip("…").endswith(tuple(CASES)) for s in lines)


def test_quiet_or_not_a_terminal_shows_nothing(tmp_path):
    cases = corpus_subset(tmp_path, CASES[:6])
    term, out, code = _in_pty(_command(cases, "--examples", "0", "--quiet"))
    assert code == 0 and "6 cases: 6 pass" in out
    assert term == ""
    proc = subprocess.run(_command(cases, "--examples", "0"), cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""


def test_line_counts_failures_and_shrinking():
    class Tty:
        def __init__(self) -> None:
            self.text = ""

        def isatty(self) -> bool:
            return True

        def write(self, s: str) -> None:
            self.text += s

        def flush(self) -> None:
            pass

    p = Progress(Tty())
    try:
        p.phase("corpus", 3)
        p.begin("a")
        p.done(Outcome.PASS)
        p.begin("b")
        p.done(Outcome.XFAIL)
        p.begin("c")
        p.done(Outcome.TIMEOUT)
        assert p.line(now=p.t0 + 65).startswith("corpus 3/3 | 1 failed, 1 expected | 01:05 elapsed | c")
        p.phase("generated", 10)
        p.begin("generated scenario 1")
        p.done(Outcome.FAIL)  # the first unexpected failure is shrunk next
        p.begin("generated scenario 2")
        p.done(Outcome.FAIL)
        assert "2 failed, 1 expected" in p.line() and "shrinking the failure (step 2)" in p.line()
        assert "generated 1/10" in p.line()
    finally:
        p.close()
