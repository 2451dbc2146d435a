"""The command line's grammar is light: ``--help``, ``--version``, ``COMMAND --help`` and a
usage error are answered through the real entry point without importing the oracle or
the heavy libraries (issue 25: ``--help`` and ``--version`` under 0.3 s), and every
command still reaches the function that runs it."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from dsh_conformance.command_line import Command, parser

# What --help must not pay for: the oracle, the suite's own heavy modules, and the
# libraries that take most of the import time.
HEAVY = re.compile(r"^(pydantic|pydantic_core|hypothesis|jsonschema|yaml|anybadge|dsh_conformance\.oracle"
                   r"|dsh_conformance\.(cli|iut|runner|report|protocol|mutate|coverage|corpus)"
                   r"|dsh_conformance\.tools\.(catalogs|pipeline_page|docs_check))(\.|$)")


def _entry(*argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``python -X importtime -m dsh_conformance ARGV``: its result and the modules it imported."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "dsh_conformance", *argv],
                          capture_output=True, text=True, timeout=120)
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    return proc, imported - {"imported package"}


def _commands() -> list[str]:
    sub = next(a for a in parser()._actions if a.dest == "command")
    return sorted(sub.choices)


@pytest.mark.parametrize("argv", [["--help"], ["--version"]] + [[c, "--help"] for c in _commands()])
def test_help_and_version_import_nothing_heavy(argv: list[str]) -> None:
    proc, imported = _entry(*argv)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "dsh_conformance.command_line" in imported  # the measurement saw the suite's imports
    assert sorted(m for m in imported if HEAVY.match(m)) == []
    assert ("dsh-conformance 0." in proc.stdout) if argv == ["--version"] else ("usage: dsh-conformance" in proc.stdout)


# What --help and --version must not pay for either (issue 25: under 0.3 s, with a margin on
# a busy machine): the standard library's costliest imports (dataclasses brings inspect, ast
# and dis; json its decoder), about a tenth of their CPU between them.
COSTLY_STDLIB = frozenset({"dataclasses", "inspect", "ast", "dis", "json"})


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_help_and_version_import_no_costly_standard_module(argv: list[str]) -> None:
    proc, imported = _entry(*argv)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "dsh_conformance.command_line" in imported
    assert sorted(imported & COSTLY_STDLIB) == []


@pytest.mark.parametrize("argv, message", [
    (["run", "--examples", "x"], "argument --examples: not a whole number: 'x'"),
    (["run", "--timeout", "0"], "argument --timeout: must be a positive number of seconds, not 0"),
    (["bench", "--repeat", "0"], "argument --repeat: must be at least 1, not 0"),
    (["no-such-command"], "invalid choice: 'no-such-command'"),
    ([], "the following arguments are required: command"),
])
def test_a_usage_error_is_exit_2_before_any_heavy_import(argv: list[str], message: str) -> None:
    proc, imported = _entry(*argv)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert errors[-1].startswith("dsh-conformance") and message in errors[-1]
    assert "Traceback" not in proc.stderr
    assert sorted(m for m in imported if HEAVY.match(m)) == []


def _leaves(p: argparse.ArgumentParser, where: str) -> list[tuple[str, argparse.ArgumentParser]]:
    """The parsers that run something: ``docs`` has commands of its own."""
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(where, p)]
    return [leaf for a in subs for name, q in a.choices.items() for leaf in _leaves(q, f"{where} {name}")]


def test_every_command_reaches_its_function() -> None:
    """Each command's function is named by string: a renamed function would only fail when
    that command runs, so every one is loaded here."""
    leaves = _leaves(parser(), "dsh-conformance")
    assert len(leaves) > len(_commands())  # docs' own commands are walked too
    for where, p in leaves:
        func = p._defaults.get("func")
        assert func is not None, where
        assert callable(func.load() if isinstance(func, Command) else func), where


def test_a_command_runs_through_the_entry_point(tmp_path) -> None:
    """The module a command lives in is imported when it runs, and its exit code is the
    command's: ``badge`` on a missing report is a one-line usage error (exit 2)."""
    proc, imported = _entry("badge", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path))
    assert proc.returncode == 2, proc.stderr[-2000:]
    # (importlib.import_module is not timed by -X importtime; what the module imports is)
    assert "anybadge" in imported
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert errors == [errors[-1]] and errors[-1].startswith("error: ")


def test_a_command_of_a_light_module_runs_through_the_entry_point(tmp_path) -> None:
    """``docs`` keeps its grammar beside its functions (a light module): they run as well."""
    proc, _ = _entry("docs", "record", str(tmp_path / "page.txt"))
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert errors == [f"error: {tmp_path / 'page.txt'}: not a Markdown page (PAGE.md or PAGE.zh.md)"]
