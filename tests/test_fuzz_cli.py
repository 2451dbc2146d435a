"""No traceback reaches a user, whatever the file or the command line (issue 21): hypothesis
draws case files, report records and command lines, the CLI's ``main()`` runs them
in-process, and every outcome is a documented exit code (0, 1, 2, 3, 4) with, for a refusal
(2), one line of error."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_conformance.cli import main
from dsh_conformance.spec.corpus import CASES

from .test_hostile_files import small_report

SETTINGS = settings(max_examples=int(os.environ.get("DSH_FUZZ_EXAMPLES", "40")), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
DOCUMENTED = {0, 1, 2, 3, 4}
BASE_CASE = json.loads((CASES / "pre-deny-skips-body.json").read_text())


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's refusal of a command line: its usage and one error line
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def check(argv: list[str], cwd: Path) -> int:
    with contextlib.chdir(cwd):  # a drawn command line writes its defaults (badges, dsh-failures) there only
        code, out, err = run(argv)
    assert "Traceback" not in out + err, (argv, err)
    assert code in DOCUMENTED, (argv, code, err)
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        errors = [line for line in lines if "error:" in line]
        assert len(errors) == 1 and (len(lines) == 1 or lines[0].startswith("usage:")), (argv, err)
    return code


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10 ** 400), max_value=10 ** 400),
                      st.floats(allow_nan=False), st.text(max_size=20))
def _containers(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)


json_values = st.recursive(json_leaf, _containers, max_leaves=20)


def mutate(doc: dict, path: list[str], value: object) -> dict:
    """``doc`` with the value at ``path`` (keys that exist, as far as they go) replaced."""
    out = json.loads(json.dumps(doc))
    node = out
    for key in path[:-1]:
        nxt = node.get(key) if isinstance(node, dict) else None
        if not isinstance(nxt, dict):
            break
        node = nxt
    if isinstance(node, dict):
        node[path[-1] if path else "id"] = value
    return out


def _paths(doc: object, prefix: tuple[str, ...] = ()) -> list[list[str]]:
    found = [list(prefix)] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += _paths(v, (*prefix, k))
    return found


CASE_PATHS = _paths(BASE_CASE)


@st.composite
def case_files(draw) -> bytes:
    kind = draw(st.sampled_from(["bytes", "json", "mutated"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "json":
        return json.dumps(draw(json_values)).encode()
    doc = mutate(BASE_CASE, draw(st.sampled_from(CASE_PATHS)), draw(json_values))
    return json.dumps(doc).encode()


@given(data=case_files())
@SETTINGS
def test_case_files(tmp_path_factory, data):
    d = tmp_path_factory.mktemp("case")
    (d / "cases").mkdir()
    f = d / "cases" / "pre-deny-skips-body.json"
    f.write_bytes(data)
    check(["replay", str(f), "--impl", "oracle-inprocess"], d)
    check(["run", "--impl", "oracle-inprocess", "--cases", str(d / "cases"), "--examples", "0", "--quiet",
           "--report", str(d / "r.jsonl"), "--failures", str(d / "f")], d)


@pytest.fixture(scope="module")
def good_lines(tmp_path_factory) -> list[dict]:
    p = small_report(tmp_path_factory.mktemp("good") / "good.jsonl")
    return [json.loads(line) for line in p.read_text().splitlines()]


@given(which=st.integers(0, 2), key=st.text(max_size=12), pick=st.integers(0, 99), value=json_values, known=st.booleans(),
       raw=st.binary(max_size=60), how=st.sampled_from(["value", "raw line", "truncate"]))
@SETTINGS
def test_report_records(tmp_path_factory, good_lines, which, key, pick, value, known, raw, how):
    d = tmp_path_factory.mktemp("report")
    lines = [json.dumps(x).encode() for x in good_lines]
    if how == "value":
        doc = dict(good_lines[which])
        doc[sorted(doc)[pick % len(doc)] if known else key] = value
        lines[which] = json.dumps(doc).encode()
    elif how == "raw line":
        lines[which] = raw
    else:
        lines[which] = lines[which][: len(raw)]
    p = d / "r.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    good = small_report(d / "good.jsonl")
    for argv in (["report", str(p)], ["report", str(p), "--format", "html"], ["report", str(p), "--format", "json"],
                 ["diff", str(good), str(p)], ["diff", str(p), str(good), "--format", "md"],
                 ["badge", str(p), "-o", str(d / "b")],
                 ["expectations", "update", "--report", str(p), "--output", str(d / "e.yaml"), "--allow-partial"]):
        code = check(argv, d)
        if argv[0] != "diff":
            assert code in (0, 2), (argv, code)


WORDS = ["run", "replay", "report", "diff", "badge", "expectations", "update", "--format", "md", "html", "json",
         "text", "-o", "--output", "--report", "--junit", "--examples", "--seed", "--timeout", "--start-timeout",
         "--profile", "--profiles", "core,loop", "nope", "--give-up-after", "--expectations", "--cases", "--failures",
         "--all", "--title", "--note", "-1", "0", "nan", "inf", "1e999", "--allow-partial", "--quiet", "", "-",
         "\x1b[2J", "--no-corpus", "--validate", "pre-deny-skips-body", "no-such-case", "/dev/zero", "/", "--", "-h"]


@given(words=st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(["@good", "@out", "@dir"]),
                                st.text(max_size=6)), max_size=8),
       command=st.sampled_from(["report", "diff", "badge", "replay", "expectations", "run"]))
@SETTINGS
def test_command_lines(tmp_path_factory, words, command):
    """Only in-process implementations: a drawn command line never starts a program."""
    d = tmp_path_factory.mktemp("argv")
    good = small_report(d / "good.jsonl")
    (d / "cases").mkdir()
    (d / "cases" / "pre-deny-skips-body.json").write_text(json.dumps(BASE_CASE))
    names = {"@good": str(good), "@out": str(d / "out.txt"), "@dir": str(d)}
    argv = [command, *(names.get(w, w) for w in words)]
    if command in ("run", "replay"):
        argv += ["--impl", "oracle-inprocess"]
    if command == "run":
        argv += ["--cases", str(d / "cases"), "--examples", "0", "--failures", str(d / "f"), "--quiet"]
    check(argv, d)
