"""The standing chaos matrix: the suite run for real (a ``dsh-conformance run`` process)
against hostile implementations, each fault of its own (hangs, crashes, a closed stdout,
children left holding the pipe, garbage, floods, signals ignored, broken in-process code).

Every row asserts the outcome of each case, the exit code, that the report is complete and
valid against its schema, and that no process the run started is alive afterwards (every
process of the run carries a tag in its environment, looked for in /proc). The wall-time
bound is a hang guard, not a performance assertion: it is generous, and only a run that
hangs can reach it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pytest

from dsh_conformance.reporting.report import read_report, report_schemas

from .conftest import FAKE, ROOT, corpus_subset
from .hang_guards import wait_until

FAKES = FAKE.parent
# Sorted as the runner runs them: run 1, 2, 3, 4.
CASES = ["finalize-content-only", "guard-denies-with-number", "loop-contexts-after-batch", "pre-deny-skips-body"]
WALL = 180.0  # seconds: the hang guard of one run
TAG = "DSH_CHAOS_TAG"
HANG = ("--timeout", "3", "--give-up-after", "2")  # rows whose IUT hangs: short timeouts, early stop


@dataclass(frozen=True)
class Row:
    name: str
    impl: str  # a fake_iut.py mode, or "py:MODE" for fake_inprocess
    outcomes: list[str]  # per corpus case, in order; plus generated records when examples run
    exit: int
    args: tuple[str, ...] = ()
    message: str | None = None  # in the message of the first case that did not pass
    env: dict[str, str] = field(default_factory=dict)


P, E, T, N = "pass", "error", "timeout", "not-run"

ROWS = [
    # the process level
    Row("closes-stdout-and-keeps-running", "close-stdout", [E, E, N, N], 3, HANG, "closed its stdout"),
    # its reaper ends the child holding the pipe when the IUT exits: the exit is seen at once
    Row("exits-leaving-a-child-on-the-pipe", "orphan-child", [P, E, P, P], 3, HANG, "exited (status 71) before answering"),
    Row("never-answers", "never-answers", [T, T, N, N], 3, HANG, "no answer to run 1 within 3s"),
    Row("hangs-once", "hang", [P, T, P, P], 3, HANG, "no answer to run 2"),
    Row("crashes-always", "crash-always", [E, E, N, N], 3, HANG, "exited (status 72)"),
    Row("crashes-once", "crash", [P, E, P, P], 3, (), "exited (status 70)"),
    Row("crashes-and-cannot-restart", "unrestartable", [E, E, N, N], 3, HANG, "exited (status 72)"),
    Row("segfaults", "segfault", [P, E, P, P], 3, (), "was killed by signal 11 (SIGSEGV)"),
    Row("killed-by-sigkill", "sigkill", [P, E, P, P], 3, (), "was killed by signal 9 (SIGKILL)"),
    Row("ignores-sigterm-and-stop", "ignore-term", [P, P, P, P], 0),
    Row("keeps-a-worker-process", "worker", [P, P, P, P], 0),
    Row("descendants-leave-its-group-and-session", "escapes", [P, P, P, P], 0),
    Row("slow-handshake", "slow-start", [P, P, P, P], 0),
    Row("floods-stderr", "stderr-flood", [P, P, P, P], 0),
    # the wire
    Row("garbage-line", "garbage", [P, E, P, P], 3, (), "not a JSON line"),
    Row("fifty-megabyte-line", "huge-line", [P, E, P, P], 3, (), "not a JSON line"),
    Row("partial-line-then-hang", "partial-line", [P, T, P, P], 3, HANG, "no answer to run 2"),
    Row("answers-twice", "doubled", [P, P, E, P], 3, (), "answer for seq 2 while waiting for 3"),
    Row("wrong-seq-always", "wrong-seq", [E, E, E, E], 3, HANG, "while waiting for 1"),
    Row("json-nested-100000-deep", "deep-json", [P, E, P, P], 3, (), "nested deeper than 216 levels"),
    Row("trace-nested-300-deep", "deep-trace", [P, E, P, P], 3, (), "nested deeper than 216 levels"),
    Row("not-utf8", "non-utf8", [P, E, P, P], 3, (), "not UTF-8"),
    Row("400-digit-number", "big-number", [P, E, P, P], 3, (), "400 digits"),
    # answered errors (issue 16: they count)
    Row("errored-once", "errored-one", [P, E, P, P], 1, (), "cannot run this"),
    Row("errored-always", "errored-all", [E, E, E, E], 3, (), "cannot run this"),
    # in-process implementations: the same timeout, outcome and early stop
    Row("in-process-busy-loop", "py:loop", [P, T, P, P], 3, HANG, "no answer to run 2 within 3s"),
    Row("in-process-blocking-call", "py:sleep", [P, T, P, P], 3, HANG, "no answer to run 2 within 3s"),
    Row("in-process-loops-always", "py:loop-always", [T, T, N, N], 3, HANG, "no answer to run 1"),
    Row("in-process-raises", "py:raise", [P, E, P, P], 3, (), "raised ValueError: the implementation fell over"),
    Row("in-process-recursion", "py:recursion", [P, E, P, P], 3, (), "RecursionError"),
    Row("in-process-sys-exit", "py:exit", [P, E, P, P], 3, (), "raised SystemExit"),
    Row("in-process-not-a-dict", "py:not-a-dict", [E, E, E, E], 3, (), "returned str, not a dict"),
    Row("in-process-errored", "py:errored", [E, E, E, E], 3, (), "cannot run this"),
    # in a worker process of its own: its death is a crash, its threads die with it, and what
    # it patches is the worker's copy of the suite, not the judge's
    Row("in-process-os-exit", "py:os-exit", [P, E, P, P], 3, (), "exited (status 0) before answering run 2"),
    Row("in-process-leaves-a-thread", "py:thread", [P, P, P, P], 0),
    Row("in-process-patches-the-judge", "py:patch-judge", ["fail", "fail", "fail", "fail"], 1),
    # the generated phase: no shrinking of timeouts, an early stop there too
    Row("never-answers-generated", "never-answers", [T, T, N], 3, (*HANG, "--no-corpus", "--examples", "10")),
    Row("never-answers-corpus-and-generated", "never-answers", [T, T, N, N, N], 3, (*HANG, "--examples", "5")),
    Row("errored-generated", "errored-all", [E, E, E, "not-scored"], 3, ("--no-corpus", "--examples", "3"),
        "cannot run this"),  # not one draw passed: the folded case is no pass (issue 26)
]


def _impl(mode: str) -> tuple[str, dict[str, str]]:
    if mode.startswith("py:"):
        return "py:fake_inprocess", {"FAKE_INPROCESS_MODE": mode[3:], "PYTHONPATH": str(FAKES),
                                     "FAKE_INPROCESS_ONCE": "{state}"}
    return f"{sys.executable} {FAKE} {mode} {{state}}", {}


def alive(tag: str) -> list[str]:
    """Processes (not zombies) whose environment carries the tag."""
    out = []
    needle = f"{TAG}={tag}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if needle not in (d / "environ").read_bytes().split(b"\0"):
                continue
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out.append(f"{d.name}: {cmd[:200]}")
    return out


def assert_none_alive(tag: str) -> None:
    try:  # SIGKILL is delivered asynchronously; the wait fails once those left stop moving
        wait_until(lambda: not alive(tag), None, 10, pids=lambda: [int(line.split(":")[0]) for line in alive(tag)])
    except AssertionError as stalled:
        raise AssertionError(f"processes of the run still alive: {alive(tag)} ({stalled})") from None


def run_cli(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
            wall: float = WALL) -> tuple[subprocess.CompletedProcess[str], str]:
    """``dsh-conformance ARGS`` as a process of its own, tagged; killed (with its group) and
    failed when it outlives ``wall`` seconds."""
    tag = uuid.uuid4().hex
    full_env = {**os.environ, **(env or {}), TAG: tag}
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full_env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "dsh_conformance.cli", *args], cwd=cwd, env=full_env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=wall)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the run hung: still going after {wall:g}s\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), tag


_VALIDATOR = jsonschema.Draft202012Validator(report_schemas()["report-record.schema.json"])


def assert_valid_report(path: Path, count: int, code: int) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]  # JSON lines: U+2028 or NEL is no line end
    for line in lines:
        _VALIDATOR.validate(json.loads(line))
    rep = read_report(path)
    assert rep.footer is not None, "the report has no footer"
    assert len(rep.cases) == count and rep.footer.exit == code
    assert sum(rep.footer.counts.values()) == count


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_chaos(row: Row, tmp_path: Path) -> None:
    cases = corpus_subset(tmp_path, CASES)
    impl, env = _impl(row.impl)
    report = tmp_path / "report.jsonl"
    args = ["run", "--impl", impl.format(state=tmp_path / "state"), "--cases", str(cases), "--report", str(report),
            "--failures", str(tmp_path / "failures"), *row.args]
    if "--examples" not in row.args:
        args += ["--examples", "0"]
    env = {k: v.format(state=tmp_path / "state") for k, v in env.items()}
    done, tag = run_cli(args, {**env, **row.env}, cwd=tmp_path)
    assert done.returncode == row.exit, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    rep = read_report(report)
    assert [c.outcome.value for c in rep.cases] == row.outcomes, done.stdout[-3000:]
    if row.message:
        first = next(c for c in rep.cases if c.outcome.value != "pass")
        assert row.message in (first.message or ""), first.message
    assert_valid_report(report, len(row.outcomes), row.exit)
    assert_none_alive(tag)
    assert not (tmp_path / ".hypothesis").exists()


def test_generated_timeouts_are_saved_unshrunk(tmp_path: Path) -> None:
    """A timeout in the generated phase is recorded and saved as drawn: replayable, never
    shrunk (the run makes no more attempts than the early stop allows)."""
    report = tmp_path / "report.jsonl"
    done, tag = run_cli(["run", "--impl", f"{sys.executable} {FAKE} never-answers", "--no-corpus", "--examples", "10",
                         *HANG, "--report", str(report), "--failures", str(tmp_path / "failures")], cwd=tmp_path)
    assert done.returncode == 3
    rep = read_report(report)
    saved = [c for c in rep.cases if c.outcome.value == "timeout"]
    # saved under --failures, named relative to the run's working directory (portable)
    assert len(saved) == 2 and all(c.case_file and (tmp_path / c.case_file).is_file() for c in saved)
    assert "declared broken after 2 consecutive timeouts" in rep.cases[-1].message
    assert "generated scenario(s) that ended in an error, a timeout or a crash" in done.stdout
    assert "STOPPED: the implementation was declared broken" in done.stdout
    assert_none_alive(tag)


def test_a_big_scenario_to_an_iut_that_does_not_read(tmp_path: Path) -> None:
    """Writing a scenario larger than a pipe's buffer to a process that stopped reading
    counts into the timeout instead of blocking the suite."""
    doc = json.loads((ROOT / "conformance" / "cases" / "pre-deny-skips-body.json").read_text())
    doc["id"] = "zz-big-arguments"
    doc.pop("expect")
    doc["run"]["calls"][0]["arguments"] = {"big": "x" * 1_000_000}
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "zz-big-arguments.json").write_text(json.dumps(doc))
    report = tmp_path / "report.jsonl"
    done, tag = run_cli(["run", "--impl", f"{sys.executable} {FAKE} deaf", "--cases", str(cases),
                         "--examples", "0", *HANG, "--report", str(report)], cwd=tmp_path)
    assert done.returncode == 3
    (case,) = read_report(report).cases
    assert case.outcome.value == "timeout" and "did not read run 1 within 3s" in case.message
    assert_none_alive(tag)


@pytest.mark.parametrize("mode,args,expect", [
    ("hang-at-start", ("--start-timeout", "3"), "handshake failed: no answer to the handshake within 3s"),
    ("exit-at-start", (), "handshake failed: the IUT exited (status 9)"),
    ("py:start-raises", (), "handshake failed: started() raised RuntimeError: no handshake today"),
])
def test_cannot_start(mode: str, args: tuple[str, ...], expect: str, tmp_path: Path) -> None:
    cases = corpus_subset(tmp_path, CASES[:1])
    impl, env = _impl(mode)
    done, tag = run_cli(["run", "--impl", impl.format(state=tmp_path / "state"), "--cases", str(cases),
                         "--examples", "0", *args], env, cwd=tmp_path)
    assert done.returncode == 3 and expect in done.stderr.splitlines()[0], done.stderr
    assert_none_alive(tag)


def test_ctrl_c_ends_the_run_and_its_children(tmp_path: Path) -> None:
    """Ctrl-C: one line, exit 130, the IUT and its children ended, the report completed."""
    cases = corpus_subset(tmp_path, CASES)
    report = tmp_path / "report.jsonl"
    tag = uuid.uuid4().hex
    env = {**os.environ, TAG: tag, "PYTHONPATH": str(ROOT), "FAKE_SLOW_SECONDS": "3600"}
    proc = subprocess.Popen([sys.executable, "-m", "dsh_conformance.cli", "run", "--impl",
                             f"{sys.executable} {FAKE} slow", "--cases", str(cases), "--examples", "0",
                             "--report", str(report)], env=env, cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_until(report.exists, proc, WALL)  # the header is written once the IUT has answered the handshake
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WALL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert len(err.splitlines()) == 1 and err.startswith("dsh-conformance: interrupted"), err
    rep = read_report(report)
    assert rep.footer is not None and rep.footer.exit == 130 and rep.footer.stopped == "interrupted"
    assert_none_alive(tag)


def _start_run(tmp_path: Path, args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """``dsh-conformance ARGS`` through its real entry point, tagged, in a session of its own."""
    tag = uuid.uuid4().hex
    full_env = {**os.environ, **(env or {}), TAG: tag}
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full_env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "dsh_conformance", *args], env=full_env, cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    return proc, tag


def _finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=WALL)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the run hung after a signal\nstderr:\n{err[-3000:]}")


SIGNAL_TRIES = 14


def test_signals_at_random_points_are_never_lost(tmp_path: Path) -> None:
    """SIGTERM or SIGINT at a random moment of a real run (the imports, the handshake, the
    corpus, hypothesis' generated phase, the footer), many times: every try ends with 143 or
    130, one line and no traceback, a report that was begun has its footer, and nothing the
    run started is alive afterwards."""
    import random

    rng = random.Random(21)
    cases = corpus_subset(tmp_path, CASES)
    landed = 0
    for n in range(SIGNAL_TRIES):
        sig = rng.choice([signal.SIGTERM, signal.SIGINT])
        report = tmp_path / f"report-{n}.jsonl"
        proc, tag = _start_run(tmp_path, ["run", "--cases", str(cases), "--examples", "400", "--quiet",
                                          "--report", str(report), "--failures", str(tmp_path / "failures")])
        time.sleep(rng.uniform(0.15, 6.0))
        if proc.poll() is not None:  # it finished first: not a try
            _finish(proc)
            continue
        proc.send_signal(sig)
        out, err = _finish(proc)
        landed += 1
        what = f"try {n}: {sig.name}, exit {proc.returncode}\nstderr:\n{err[-3000:]}"
        assert proc.returncode == 128 + sig, what
        assert "Traceback" not in err and "Exception ignored" not in err, what
        assert err.splitlines()[-1].startswith("dsh-conformance: " + ("terminated" if sig == signal.SIGTERM
                                                                     else "interrupted")), what
        if report.exists():
            rep = read_report(report)
            assert rep.footer is not None, what
            # the footer says the signal, unless the run had written its own before it came
            assert rep.footer.exit == 128 + sig or rep.footer.stopped is None, what
        assert_none_alive(tag)
    assert landed >= SIGNAL_TRIES // 2, f"only {landed} signals landed in a running run"


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit, RuntimeError])
def test_a_run_stopped_mid_scenario_leaves_no_coroutine_unawaited(stop: type[BaseException]) -> None:
    """What the random signals above found once: a signal (or a scenario error) landing
    while a spawned task of the oracle's scheduler had not started left its coroutine to
    the collector, whose "never awaited" warning came after the run's one line. The
    scheduler closes what it never started; a started task is closed without a word."""
    import gc
    import warnings

    from dsh_conformance.kit.scheduler import Deferred, Scheduler

    closed: list[str] = []

    async def started() -> None:
        try:
            await Deferred()  # waits for ever: suspended when the run stops
        finally:
            closed.append("started")

    async def never_started() -> None:
        closed.append("ran")  # pragma: no cover - must never run

    async def main(s: Scheduler) -> None:
        s.spawn(started())
        await s.tick()  # the first task runs up to its wait
        s.spawn(never_started())
        raise stop()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = Scheduler()
        with pytest.raises(stop):
            s.run(main(s))
        del s
        gc.collect()
    assert [str(w.message) for w in caught] == []
    assert closed == ["started"]


def test_two_signals_in_a_row(tmp_path: Path) -> None:
    """Two SIGTERMs in a row into a real run (the second may come during the clean-up, or be
    merged with the first by the kernel): 143, no traceback, nothing it started left alive."""
    cases = corpus_subset(tmp_path, CASES)
    proc, tag = _start_run(tmp_path, ["run", "--impl", f"{sys.executable} {FAKE} ignore-term", "--cases", str(cases),
                                      "--examples", "0", "--report", str(tmp_path / "r.jsonl")],
                           {"FAKE_SLOW_SECONDS": "3600"})
    wait_until((tmp_path / "r.jsonl").exists, proc, WALL, pause=0.05)
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)
    out, err = _finish(proc)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert_none_alive(tag)


def _wait_for(tag: str, count: int, proc: subprocess.Popen[str]) -> None:
    """Until ``count`` processes of the run are alive (the suite, the reaper, the IUT, its two
    descendants that left its group and session, ...)."""
    wait_until(lambda: len(alive(tag)) >= count, proc, WALL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper needs Linux's prctl")
def test_sigkill_of_the_suite_ends_everything_it_started(tmp_path: Path) -> None:
    """A CI timeout SIGKILLs the job's process group: the IUT, and its descendants that left
    its process group (setpgid) and its session (setsid), do not outlive the suite."""
    cases = corpus_subset(tmp_path, CASES)
    proc, tag = _start_run(tmp_path, ["run", "--impl", f"{sys.executable} {FAKE} slow-escapes", "--cases", str(cases),
                                      "--examples", "0"])
    try:
        _wait_for(tag, 5, proc)
        os.killpg(proc.pid, signal.SIGKILL)  # the suite's own group: nothing it can catch
        proc.communicate(timeout=WALL)
        assert_none_alive(tag)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper needs Linux's prctl")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_pytest_session_ends_the_implementation(sig: signal.Signals, tmp_path: Path) -> None:
    """``pytest --dsh-impl``, SIGTERM (pytest's default: it dies at once) or SIGKILL to pytest:
    the implementation and its escaping descendants are ended with it."""
    tag = uuid.uuid4().hex
    env = {**os.environ, TAG: tag, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             "--dsh-impl", f"{sys.executable} {FAKE} slow-escapes", "--dsh-examples", "0"],
                            cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        _wait_for(tag, 5, proc)
        proc.send_signal(sig)
        proc.communicate(timeout=WALL)
        assert_none_alive(tag)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize("validate", [False, True], ids=["lax", "validate"])
@pytest.mark.parametrize("wrong,says", [
    ("seq", '$.seq: must be a whole number, not "2"'),
    ("trace", "$.trace: Input should be a valid dictionary"),
    ("skipped", '$.skipped: Value error, must be true, not "true"'),
    ("errored", "$.errored: Value error, must be true, not 1"),
    ("reason", "$.reason: Input should be a valid string"),
])
def test_an_answer_field_of_the_wrong_json_type_is_refused(wrong: str, says: str, validate: bool,
                                                            tmp_path: Path) -> None:
    """Without --validate as with it: the case is not judged (error, or invalid under the
    schema check), its message names the field, and the run goes on."""
    cases = corpus_subset(tmp_path, CASES)
    report = tmp_path / "report.jsonl"
    done, tag = run_cli(["run", "--impl", f"{sys.executable} {FAKE} wrong-type", "--cases", str(cases),
                         "--examples", "0", "--report", str(report), *(["--validate"] if validate else [])],
                        {"FAKE_WRONG": wrong}, cwd=tmp_path)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stdout[-2000:] + done.stderr[-2000:]
    second = read_report(report).cases[1]
    assert second.outcome.value == ("invalid" if validate else "error"), second
    if not validate or wrong == "seq":  # the schema check's own words otherwise; it names the field too
        assert says in (second.message or ""), second.message
    assert f"$.{wrong}" in (second.message or ""), second.message
    assert [c.outcome.value for c in read_report(report).cases][2:] == ["pass", "pass"]
    assert_none_alive(tag)


@pytest.mark.parametrize("wrong,says", [
    ("profiles", "$.profiles[1]"),
    ("name", "$.implementation.name: Input should be a valid string"),
    ("version", "$.version: Value error, must be 1, not true"),
])
def test_a_handshake_field_of_the_wrong_json_type_is_refused(wrong: str, says: str, tmp_path: Path) -> None:
    cases = corpus_subset(tmp_path, CASES[:1])
    done, tag = run_cli(["run", "--impl", f"{sys.executable} {FAKE} wrong-type", "--cases", str(cases),
                         "--examples", "0"], {"FAKE_WRONG": wrong}, cwd=tmp_path)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    assert "not a valid start answer" in done.stderr.splitlines()[0] and says in done.stderr.splitlines()[0], done.stderr
    assert_none_alive(tag)


_PEAK = """
import resource, sys
from dsh_conformance.cli import main
code = main(sys.argv[1:])
print("peak-kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(code)
"""


def _peak_kib(tmp_path: Path, cases: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAKE_TRACE_MB": "20"}
    done = subprocess.run([sys.executable, "-c", _PEAK, "run", "--impl", f"{sys.executable} {FAKE} big-trace",
                           "--cases", str(cases), "--examples", "0", "--quiet"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=WALL)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    return int(done.stdout.split("peak-kib")[-1])


def test_memory_does_not_grow_with_the_traces_of_every_case(tmp_path: Path) -> None:
    """Every case answered with a 20 MB trace that diverges: the suite keeps what its summary
    needs, not every trace, so 8 cases peak about where 2 do (a generous bound: one kept
    trace of 20 MB a case would add some 120 MB or more)."""
    names = sorted(p.stem for p in (ROOT / "conformance" / "cases").glob("*.json"))[:8]
    (tmp_path / "two").mkdir()
    (tmp_path / "eight").mkdir()
    two = _peak_kib(tmp_path, corpus_subset(tmp_path / "two", names[:2]))
    eight = _peak_kib(tmp_path, corpus_subset(tmp_path / "eight", names))
    assert eight - two < 80 * 1024, f"peak {two} KiB for 2 cases, {eight} KiB for 8"


_GC_SIGNAL = """
import gc, os, signal
from dsh_conformance.running import interrupts

fired = []

def callback(phase, info):
    if phase == "start" and not fired:
        fired.append(1)
        os.kill(os.getpid(), signal.SIGTERM)
        sum(range(1000))  # the handler runs here, inside the callback: its exception is swallowed

with interrupts.handled():
    gc.callbacks.append(callback)
    gc.collect()
    gc.callbacks.remove(callback)
    try:
        interrupts.check()
        print("lost")
    except interrupts.Interrupted as e:
        print("raised", e.code)
"""


def test_a_signal_swallowed_in_a_gc_callback_is_raised_at_the_next_safe_point() -> None:
    """Where hypothesis' gc callback swallows the interruption, the signal is still
    recorded, the swallowed exception prints nothing, and the next safe point raises it."""
    done = subprocess.run([sys.executable, "-c", _GC_SIGNAL], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.strip() == "raised 143", done.stdout + done.stderr
    assert done.stderr == "", done.stderr


_SECOND_SIGNAL = """
import os, signal, time
from dsh_conformance.running import interrupts

with interrupts.handled():
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    except interrupts.Interrupted:
        # a clean-up that hangs (or an interruption lost twice): the second signal ends it
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(60)
print("not ended")
"""


def test_a_second_signal_during_a_hung_clean_up_ends_the_process() -> None:
    done = subprocess.run([sys.executable, "-c", _SECOND_SIGNAL], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 143 and "not ended" not in done.stdout, done.stdout + done.stderr
    assert done.stderr.startswith("dsh-conformance: terminated again: stopped at once"), done.stderr
