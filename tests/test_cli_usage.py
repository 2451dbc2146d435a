"""Bad command lines are rejected before any work (exit 2, nothing started, nothing
written); every option has help text; the console tells the truth."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_conformance.cli import main, parser
from dsh_conformance.reporting.report import Outcome
from dsh_conformance.running.progress import Progress

from .conftest import FAKE, ROOT, corpus_subset


@pytest.fixture
def marker_impl(tmp_path: Path) -> tuple[str, Path]:
    """An implementation that leaves a file behind when it is started at all."""
    marker = tmp_path / "started"
    return f"sh -c 'touch {marker}; exec {sys.executable} {FAKE} worker'", marker


BAD = [
    (["--junit", "{tmp}/no/such/dir/run.xml"], "--junit {tmp}/no/such/dir/run.xml: no such directory"),
    (["--report", "{tmp}/no/such/dir/run.jsonl"], "--report {tmp}/no/such/dir/run.jsonl: no such directory"),
    (["--report", "{tmp}"], "is a directory"),
    (["--report", "{tmp}/same", "--junit", "{tmp}/same"], "--junit {tmp}/same: the same file as --report"),
    (["--examples", "-5"], "argument --examples: must be at least 0, not -5"),
    (["--timeout", "0"], "argument --timeout: must be a positive number of seconds, not 0"),
    (["--timeout", "nan"], "must be a positive number of seconds"),
    (["--start-timeout", "-1"], "argument --start-timeout: must be a positive number of seconds"),
    (["--give-up-after", "-1"], "argument --give-up-after: must be at least 0"),
    (["--cases", "{tmp}/nowhere"], "--cases {tmp}/nowhere: no such directory"),
    (["--expectations", "{tmp}/nowhere.yaml"], "nowhere.yaml: cannot read"),
    (["--failures", "{tmp}/a-file"], "--failures {tmp}/a-file: not a directory"),
]


@pytest.mark.parametrize("extra,message", BAD, ids=[" ".join(b[0][:1]) + str(i) for i, b in enumerate(BAD)])
def test_bad_run_options_before_any_work(extra, message, marker_impl, tmp_path, capsys):
    impl, marker = marker_impl
    (tmp_path / "a-file").write_text("")
    cases = corpus_subset(tmp_path, ["pre-deny-skips-body"])
    args = [a.format(tmp=tmp_path) for a in extra]
    assert exit_code(["run", "--impl", impl, "--cases", str(cases), "--examples", "0", *args]) == 2
    assert message.format(tmp=tmp_path) in capsys.readouterr().err
    assert not marker.exists(), "the implementation was started"
    assert not (tmp_path / "same").exists()


def exit_code(argv: list[str]) -> object:
    """main's exit code, whether it returns it or argparse exits with it."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def test_a_profile_the_oracle_does_not_implement(marker_impl, tmp_path, capsys, monkeypatch):
    """Refused before any work (the oracle implements every profile today; the check is
    against its list, as when code-mode was missing)."""
    import dsh_conformance.cli

    impl, marker = marker_impl
    monkeypatch.setattr(dsh_conformance.cli, "ORACLE_PROFILES", ("core", "reference", "loop"))
    assert main(["run", "--impl", impl, "--profile", "code-mode", "--examples", "0"]) == 2
    assert "--profile code-mode: the oracle does not implement this profile yet" in capsys.readouterr().err
    assert not marker.exists()


@pytest.mark.parametrize("impl,message", [
    ("", "--impl '': an empty command line"),
    ("   ", "--impl '': an empty command line"),
    ('python "unbalanced', "not a command line: No closing quotation"),
    ("py:json", "--impl py:json: json is not an in-process implementation: it needs the functions started() and answer"),
    ("py:no_such_module_here", "cannot import no_such_module_here"),
    ("py:", "name a module"),
])
def test_bad_impl(impl, message, capsys):
    assert main(["run", "--impl", impl, "--examples", "0"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("repeat", ["0", "-1"])
def test_bench_repeat_must_be_positive(repeat, capsys):
    with pytest.raises(SystemExit) as e:
        main(["bench", "--repeat", repeat])
    assert e.value.code == 2 and f"must be at least 1, not {repeat}" in capsys.readouterr().err


def test_every_option_has_help_text():
    def walk(p: argparse.ArgumentParser, where: str) -> list[str]:
        missing = []
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    missing += walk(sub, f"{where} {name}")
                for choice in action._choices_actions:
                    if not choice.help:
                        missing.append(f"{where} {choice.dest}")
            elif not action.help and action.dest != "help":
                missing.append(f"{where} {'/'.join(action.option_strings) or action.dest}")
        return missing

    assert walk(parser(), "dsh-conformance") == []


# ---------------------------------------------------------------------------- the console

def test_no_see_the_report_without_a_report(tmp_path, capsys):
    """More than 20 failures without --report: the console says how to see them all."""
    cases = tmp_path / "cases"
    cases.mkdir()
    from dsh_conformance.spec.corpus import CASES

    for path in sorted(CASES.glob("*.json"))[:30]:
        (cases / path.name).write_bytes(path.read_bytes())
    code = main(["run", "--impl", f"{sys.executable} {FAKE} errored-all", "--cases", str(cases), "--examples", "0"])
    out = capsys.readouterr().out
    assert code == 3
    assert "see the report" not in out and "(run with --report FILE to keep them all)" in out
    code = main(["run", "--impl", f"{sys.executable} {FAKE} errored-all", "--cases", str(cases), "--examples", "0",
                 "--report", str(tmp_path / "r.jsonl")])
    assert f"(all of them are in the report {tmp_path / 'r.jsonl'})" in capsys.readouterr().out


def test_the_shrunk_case_is_printed_with_its_replay(tmp_path, capsys):
    impl = f"{sys.executable} {FAKE} mutable-result"  # fails every scenario: a short shrink
    code = main(["run", "--impl", impl, "--no-corpus", "--examples", "5", "--failures", str(tmp_path / "f")])
    out = capsys.readouterr().out
    assert code == 1
    (saved,) = list((tmp_path / "f").glob("prop-*.json"))
    assert f"saved the shrunk counterexample: {saved}" in out
    assert f"replay it: dsh-conformance replay {saved} --impl '{impl}'" in out


def test_progress_shrinks_only_divergences():
    """A timeout among generated scenarios is counted and the drawing goes on; only a
    divergence starts the shrinking (formerly every timeout did, and the line read [198/5])."""
    p = Progress(io.StringIO())
    p.phase("generated", 5)
    p.done(Outcome.TIMEOUT)
    p.done(Outcome.PASS)
    assert "shrinking" not in p.line() and p.line().startswith("generated 2/5 | 1 failed")
    p.done(Outcome.FAIL)
    p.done(Outcome.PASS)
    assert "shrinking the failure (step 2)" in p.line() and p.line().startswith("generated 3/5")


def test_plugin_from_a_project_root_runs_only_the_suite(tmp_path):
    """`pytest --dsh-impl` in a project with testpaths: the suite only, no .hypothesis/ left."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_own.py").write_text("def test_own():\n    raise AssertionError('must not run')\n")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--dsh-impl", "oracle"]
    listed = subprocess.run([*pytest, "--collect-only"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    items = [line for line in listed.stdout.splitlines() if "::" in line]
    assert any("test_case[pre-deny-skips-body]" in line for line in items), listed.stdout[-2000:]
    assert any("test_generated_scenarios" in line for line in items) and "test_own" not in listed.stdout
    out = subprocess.run([*pytest, "--dsh-examples", "3", "-k", "generated"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0 and "1 passed" in out.stdout.splitlines()[-1], out.stdout[-2000:]
    assert not (tmp_path / ".hypothesis").exists()


def test_a_run_leaves_no_hypothesis_directory(tmp_path):
    out = subprocess.run([sys.executable, "-m", "dsh_conformance.cli", "run", "--no-corpus", "--examples", "3",
                          "--impl", "oracle-inprocess"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / ".hypothesis").exists()


def test_one_profile_asked_scores_it_from_generated_scenarios(tmp_path, capsys):
    """`--profile code-mode` checks core too (every profile needs it, section 2): the
    generated scenarios are judged and the passing run counts for the rules its draws
    exercised. Formerly each draw was left unscored for want of core, and the run still
    read pass."""
    report = tmp_path / "r.jsonl"
    code = main(["run", "--no-corpus", "--examples", "40", "--profile", "code-mode", "--report", str(report)])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    assert "NOT SCORED" not in out
    import json

    (gen,) = [json.loads(line) for line in report.read_text().splitlines() if '"generated-seed-' in line]
    assert gen["outcome"] == "pass" and {"P114", "P117", "P1"} <= set(gen["rules"]), gen


def test_generated_scenarios_that_cannot_be_scored_do_not_pass(tmp_path, capsys):
    impl = f"{sys.executable} {FAKE} no-core"
    code = main(["run", "--impl", impl, "--no-corpus", "--examples", "5", "--report", str(tmp_path / "r.jsonl")])
    out = capsys.readouterr().out
    assert "NOT-SCORED generated-seed-0" in out or "not-scored" in out, out[-2000:]
    assert "none of the 5 generated scenarios could be scored" in out
    assert code == 1 and "NOTHING SCORED" in out and "1 pass" not in out.splitlines()[-1]
