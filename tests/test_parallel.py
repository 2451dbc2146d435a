"""Going wide (issue 25): ``run --jobs N`` gives the report of ``--jobs 1``, case by case;
``run --shard K/M`` parts merged by ``dsh-conformance merge`` give the unsharded run's
report, footer and exit code included; merge refuses what is not the shards of one run.

Every run here is a real ``dsh-conformance run`` process against a real implementation
(the oracle over the protocol, the embedded oracle, a ``py:`` host, a deliberately wrong
process IUT whose divergence is shrunk), on a few corpus cases and draws: the machine is
shared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_conformance.reporting.report import read_report

from .conftest import FAKE, corpus_subset
from .hang_guards import wait_until

pytestmark = pytest.mark.rules("P1", "P11", "P46")

CASES = ["guard-denies-with-number", "guard-throw-is-final", "pre-deny-skips-body", "loop-contexts-after-batch",
         "execute-wrapper-replaces-result", "post-throw-replaces-result", "results-handed-out-are-immutable"]
WRONG = f"{sys.executable} {FAKE} mutable-result"  # every result unfrozen: corpus cases and draws fail (P11)
RC8 = "dsh-tools-0.1.0-rc.8"
# What may differ between two runs of one suite: the clock.
TIMING = ("duration_ms", "started", "finished", "machine")


def _run(tmp_path: Path, name: str, *argv: str) -> tuple[int, Path, str]:
    report = tmp_path / f"{name}.jsonl"
    p = subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "run", *argv, "--report", str(report), "-q",
                        "--failures", str(tmp_path / f"failures-{name}")],
                       capture_output=True, text=True, timeout=600)
    return p.returncode, report, p.stdout + p.stderr


def _records(report: Path) -> list[dict]:
    out = []
    for line in report.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            doc = json.loads(line)
            for key in TIMING:
                doc.pop(key, None)
            out.append(doc)
    return out


def _same(a: Path, b: Path) -> None:
    """The two reports hold the same records, in the same order, field for field."""
    left, right = _records(a), _records(b)
    assert [r.get("id") for r in left] == [r.get("id") for r in right]
    for x, y in zip(left, right):
        assert x == y, (x.get("id"), x, y)


@pytest.mark.parametrize("impl", ["oracle", "oracle-inprocess", "py:dsh_conformance.oracle.serve", WRONG],
                         ids=["process", "in-process", "py-host", "wrong"])
def test_jobs_gives_the_report_of_one_job(tmp_path, impl):
    cases = corpus_subset(tmp_path, CASES)
    argv = ["--impl", impl, "--cases", str(cases), "--examples", "8", "--seed", "3"]
    code1, one, out1 = _run(tmp_path, "one", *argv)
    code3, three, out3 = _run(tmp_path, "three", *argv, "--jobs", "3")
    assert code1 == code3 == (1 if impl == WRONG else 0), (out1, out3)
    _same(one, three)
    digests = [c.trace_digest for c in read_report(three).cases if c.source == "corpus"]
    assert all(digests) and len(digests) == len(CASES)
    if impl == WRONG:  # the first failing draw, shrunk by a worker as one job shrinks it
        shrunk = [c for c in read_report(three).cases if c.source == "property"]
        assert shrunk[-1].outcome.value == "fail" and shrunk[-1].case_file
        assert sorted(p.name for p in (tmp_path / "failures-one").iterdir()) == \
            sorted(p.name for p in (tmp_path / "failures-three").iterdir())
    # The console's table and totals too (the progress line is off).
    assert out1.splitlines()[-1] == out3.splitlines()[-1]


def test_jobs_ends_every_instance(tmp_path):
    """Each worker's instance is stopped at the end: none of the run's processes is left."""
    marker = f"dsh-jobs-marker-{os.getpid()}"
    impl = f"{sys.executable} {FAKE} worker {tmp_path / marker}"
    code, _, out = _run(tmp_path, "w", "--impl", impl, "--cases", str(corpus_subset(tmp_path, CASES[:3])),
                        "--examples", "0", "--jobs", "2")
    assert code == 0, out
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert not left


@pytest.mark.parametrize("impl, extra", [("oracle", ["--expectations", RC8]), (WRONG, [])],
                         ids=["stale-expectations", "wrong"])
def test_three_shards_merged_are_the_whole_run(tmp_path, impl, extra):
    cases = corpus_subset(tmp_path, CASES)
    argv = ["--impl", impl, "--cases", str(cases), "--examples", "12", "--seed", "3", *extra]
    code, whole, out = _run(tmp_path, "whole", *argv)
    parts = []
    for k in (1, 2, 3):
        kcode, part, kout = _run(tmp_path, f"s{k}", *argv, "--shard", f"{k}/3", *(["--jobs", "2"] if k == 2 else []))
        assert kcode in (0, 1), kout
        assert read_report(part).header.shard == f"{k}/3"
        parts.append(str(part))
    merged = tmp_path / "merged.jsonl"
    p = subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "merge", *reversed(parts), "-o", str(merged)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == code == 1, (p.stdout, p.stderr, out)  # stale expectations, or a failure
    _same(whole, merged)
    footer = read_report(merged).footer
    assert footer is not None and footer.exit == 1
    if extra:  # only the whole run can call a listed rule stale: no shard exits 1 for it
        assert footer.stale and all(read_report(s).footer.exit == 0 for s in parts)


def test_a_shard_is_a_slice_and_every_case_is_in_one(tmp_path):
    from dsh_conformance.running.shards import Shard, attempts_of, cases_of

    items = list(range(10))
    got = [cases_of(Shard(k, 3), items) for k in (1, 2, 3)]
    assert sum(got, []) == items and [len(g) for g in got] == [3, 3, 4]
    assert [attempts_of(Shard(k, 4), 10)[0] for k in (1, 2, 3, 4)] == [range(0, 2), range(2, 5), range(5, 7),
                                                                        range(7, 10)]
    assert attempts_of(None, 10) == (range(0, 40), 10)


def _merge(tmp_path: Path, *reports: str, out: str = "m.jsonl") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "merge", *reports, "-o", str(tmp_path / out)],
                          capture_output=True, text=True, timeout=120)


def test_merge_refuses_what_is_not_one_run(tmp_path):
    cases = corpus_subset(tmp_path, CASES[:4])
    base = ["--cases", str(cases), "--examples", "2"]
    reports = {}
    for name, argv in {"s1": ["--shard", "1/2"], "s2": ["--shard", "2/2"], "seed": ["--shard", "2/2", "--seed", "9"],
                       "m3": ["--shard", "2/3"], "whole": []}.items():
        code, report, out = _run(tmp_path, name, *base, *argv)
        assert code == 0, out
        reports[name] = str(report)
    cut = tmp_path / "cut.jsonl"  # a shard killed mid-run: no footer
    cut.write_text("\n".join(Path(reports["s2"]).read_text().split("\n")[:-2]) + "\n")
    refusals = {
        (reports["s1"], reports["seed"]): "its seed differs",
        (reports["s1"], reports["m3"]): "is a shard of 2",
        (reports["s1"],): "shard 2/2 missing",
        (reports["s1"], reports["s1"]): "twice",
        (reports["s1"], reports["whole"]): "not the report of a shard",
        (reports["s1"], str(cut)): "did not finish",
    }
    lines = Path(reports["s2"]).read_text(encoding="utf-8").split("\n")
    header = json.loads(lines[0])
    for field, value, why in (("suite", {**header["suite"], "version": "0.0.0"}, "its suite differs"),
                              ("implementation", {**header["implementation"], "name": "another"}, "its name"),
                              ("profiles", ["core"], "its profiles differ"),
                              ("options", {**header["options"], "impl": "dsh"}, "its options differ")):
        crafted = tmp_path / f"crafted-{field}.jsonl"
        crafted.write_text("\n".join([json.dumps({**header, field: value}), *lines[1:]]), encoding="utf-8")
        refusals[(reports["s1"], str(crafted))] = why
    for argv, why in refusals.items():
        p = _merge(tmp_path, *argv)
        assert p.returncode == 2 and why in p.stderr, (argv, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
        assert not (tmp_path / "m.jsonl").exists()
    assert _merge(tmp_path, reports["s1"], reports["s2"]).returncode == 0
    p = _merge(tmp_path, reports["s1"], reports["s2"], out=Path(reports["s1"]).name)  # onto one of its inputs
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_merge_reads_shards_as_every_reader_does(tmp_path):
    """The hostile-file rules of the other readers: a FIFO is refused without blocking, a
    directory too, a report line of the wrong shape is one line naming the file and line."""
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind":"header","format":"dsh-conformance/report/v1","shard":"x"}\n')
    for path in (fifo, tmp_path, bad):
        p = _merge(tmp_path, str(path))
        assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_bad_shards_and_jobs_are_usage_errors(tmp_path, capsys):
    from dsh_conformance.cli import main

    for argv in (["--shard", "0/3"], ["--shard", "4/3"], ["--shard", "3"], ["--shard", "a/b"], ["--shard", "1/0"],
                 ["--jobs", "0"]):
        with pytest.raises(SystemExit) as e:
            main(["run", *argv, "--report", str(tmp_path / "r.jsonl")])
        err = capsys.readouterr().err
        assert e.value.code == 2 and argv[0] in err and "Traceback" not in err, (argv, err)
    assert main(["run", "--shard", "1/2", "--max-fail", "2", "--report", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--max-fail" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.jsonl").exists()


def test_an_interrupted_wide_run_ends_its_workers_and_keeps_its_report(tmp_path):
    """Ctrl-C during --jobs: one line, exit 130, the report completed with a footer, and
    no worker or instance left running."""
    import signal
    import time

    marker = tmp_path / f"dsh-interrupt-marker-{os.getpid()}"
    report = tmp_path / "r.jsonl"
    p = subprocess.Popen([sys.executable, "-m", "dsh_conformance.cli", "run", "--impl",
                          f"{sys.executable} {FAKE} plain {marker}", "--no-corpus", "--examples", "400", "--jobs", "2",
                          "-q", "--report", str(report), "--failures", str(tmp_path / "f")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    def instances() -> list[int]:
        return [int(pid) for pid in subprocess.run(["pgrep", "-f", str(marker)], capture_output=True,
                                                   text=True).stdout.split()]

    wait_until(lambda: report.exists() and len(instances()) >= 2, p, 240, pause=0.2)
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted" in err.lower() or "ctrl-c" in err.lower(), err
    footer = read_report(report).footer
    assert footer is not None and footer.exit == 130
    wait_until(lambda: not instances(), None, 10, pids=instances)  # ended, if asynchronously


def test_jobs_stops_where_one_job_stops(tmp_path):
    """--max-fail: what the workers decided past the stop is recorded not-run, as one job
    never ran it; the generated draws are not run either."""
    argv = ["--impl", WRONG, "--cases", str(corpus_subset(tmp_path, CASES)), "--examples", "5", "--max-fail", "2"]
    code1, one, _ = _run(tmp_path, "one", *argv)
    code2, two, _ = _run(tmp_path, "two", *argv, "--jobs", "2")
    assert code1 == code2 == 1
    _same(one, two)
    outcomes = [c.outcome.value for c in read_report(two).cases]
    assert outcomes.count("fail") == 2 and outcomes[-1] == "not-run"


def test_a_worker_killed_mid_run_is_exit_3_with_a_complete_report(tmp_path):
    """A worker that dies (SIGKILLed here; an in-process implementation's os._exit alike):
    one line, exit 3, the report completed with a footer, nothing left running."""
    import signal
    import time

    report = tmp_path / "r.jsonl"
    p = subprocess.Popen([sys.executable, "-m", "dsh_conformance.cli", "run", "--impl", "oracle-inprocess",
                          "--no-corpus", "--examples", "400", "--jobs", "2", "-q", "--report", str(report),
                          "--failures", str(tmp_path / "f")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    def workers() -> list[int]:
        return [int(pid) for pid in subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True,
                                                   text=True).stdout.split()]

    wait_until(lambda: report.exists() and len(workers()) >= 2, p, 240, pause=0.2)
    time.sleep(1)
    first, *others = workers()
    os.kill(first, signal.SIGKILL)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 3, err
    assert "worker" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    footer = read_report(report).footer
    assert footer is not None and footer.exit == 3 and "worker" in (footer.stopped or "")

    def left() -> list[int]:
        return [pid for pid in others if Path(f"/proc/{pid}").exists()]  # gone, not even a zombie

    wait_until(lambda: not left(), None, 10, pids=left)  # the other worker was ended with the run
