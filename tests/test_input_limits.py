"""Bad input files: one line naming the file and the place, exit 2, never a traceback; and
the input limits (kit/jsonio.py) the same in the oracle and in the suite."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_conformance.cli import main as suite
from dsh_conformance.oracle import ScenarioError, parse_scenario
from dsh_conformance.oracle.__main__ import main as oracle
from dsh_conformance.kit.jsonio import MAX_DEPTH, MAX_FILE_BYTES, MAX_MESSAGE_DEPTH

from .conftest import ROOT

BASE = json.loads((ROOT / "conformance" / "cases" / "pre-deny-skips-body.json").read_text())
BASE.pop("expect")


def nested(depth: int, leaf: object = 1) -> object:
    v = leaf
    for _ in range(depth):
        v = {"a": v}
    return v


def depth(v: object) -> int:
    if isinstance(v, dict):
        return 1 + max(map(depth, v.values()), default=0)
    if isinstance(v, list):
        return 1 + max(map(depth, v), default=0)
    return 0


def with_arguments(arguments: object) -> dict:
    doc = json.loads(json.dumps(BASE))
    doc["run"]["calls"][0]["arguments"] = arguments
    return doc


def one_line(fn, argv: list[str]) -> tuple[int, str]:
    """Run a CLI entry point in-process; its exit code and its stderr (asserted one line)."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = fn(argv)
    text = err.getvalue()
    assert "Traceback" not in text, text
    assert len(text.splitlines()) == 1, text
    return code, text.strip()


def check_refused(path: Path, where: str, what: str) -> None:
    """The oracle, replay, and a run over a corpus holding the file all refuse it alike."""
    expected = f"error: {path}: {where}"
    for fn, argv in ((oracle, ["run", str(path)]), (suite, ["replay", str(path), "--impl", "oracle-inprocess"])):
        code, err = one_line(fn, argv)
        assert code == 2 and err.startswith(expected) and what in err, err
    corpus = path.parent / f"corpus-{path.stem}"
    corpus.mkdir(exist_ok=True)
    (corpus / path.name).write_bytes(path.read_bytes())
    code, err = one_line(suite, ["run", "--impl", "oracle-inprocess", "--cases", str(corpus), "--examples", "0"])
    assert code == 2 and err.startswith(f"error: {corpus / path.name}: {where}") and what in err, err


# ---------------------------------------------------------------------------- the reproductions

def test_not_utf8(tmp_path):
    f = tmp_path / "latin1.json"
    f.write_bytes(json.dumps(BASE).replace('"not today"', '"caf\\u00e9"').encode().replace(b"caf\\u00e9", b"caf\xe9"))
    check_refused(f, "$", "not UTF-8: byte 0xe9")


def test_nested_100000_deep(tmp_path):
    f = tmp_path / "deep.json"
    f.write_text("[" * 100_000 + "]" * 100_000)
    check_refused(f, "$", f"nested deeper than {MAX_DEPTH} levels (at line 1 column {MAX_DEPTH + 1})")


def test_400_digit_integer_in_arguments(tmp_path):
    f = tmp_path / "big.json"
    f.write_text(json.dumps(with_arguments({"n": 1})).replace('"n": 1', '"n": ' + "9" * 400))
    check_refused(f, "$.run.calls[0].arguments.n", "an integer literal of 400 digits")


@pytest.mark.parametrize("literal", ["1e400", "-1e999", "2" + "0" * 308])
def test_numbers_beyond_a_double(tmp_path, literal):
    f = tmp_path / "inf.json"
    f.write_text(json.dumps(with_arguments({"n": 1})).replace('"n": 1', f'"n": {literal}'))
    check_refused(f, "$.run.calls[0].arguments.n", "beyond the range of a double")


@pytest.mark.parametrize("depth", [250, 300, 900])
def test_values_nested_past_the_limit(tmp_path, depth):
    """Formerly "Circular reference detected" or a RecursionError, and under run and replay
    an exit 3 blaming the implementation with the oracle's traceback as its stderr."""
    f = tmp_path / f"nest{depth}.json"
    f.write_text(json.dumps(with_arguments(nested(depth))))
    check_refused(f, "$.run.calls[0].arguments.a", f"nested deeper than {MAX_DEPTH} levels")


def test_replay_of_a_scenario_that_never_settles(tmp_path):
    f = tmp_path / "never.json"
    f.write_text(json.dumps({"tools": [{"name": "t", "body": [{"do": "await-signal"}]}],
                             "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]}}))
    code, err = one_line(suite, ["replay", str(f)])
    assert code == 2 and err.startswith(f"error: {f}: $: the scenario never settles"), err
    code, err = one_line(oracle, ["run", str(f)])
    assert code == 2 and "never settles" in err


def test_a_file_over_the_size_limit(tmp_path):
    f = tmp_path / "huge.json"
    with f.open("wb") as out:
        out.truncate(MAX_FILE_BYTES + 1)  # sparse: no need to fill it
    check_refused(f, "$", f"the file has {MAX_FILE_BYTES + 1} bytes")


# ---------------------------------------------------------------------------- the limits themselves

def test_the_limit_is_inclusive_and_the_same_everywhere(tmp_path):
    """A document exactly at the depth limit is accepted by every reader; one level more is
    refused by every reader with the same path: the file loader, the in-memory parser, the
    oracle's protocol server."""
    inner = MAX_DEPTH - 4  # the root, run, calls and the call: four levels above the arguments
    ok, bad = with_arguments(nested(inner)), with_arguments(nested(inner + 1))
    assert depth(ok) == MAX_DEPTH
    parse_scenario(ok)
    with pytest.raises(ScenarioError) as e:
        parse_scenario(bad)
    assert e.value.message == f"nested deeper than {MAX_DEPTH} levels"
    f = tmp_path / "ok.json"
    f.write_text(json.dumps(ok))
    with contextlib.redirect_stdout(io.StringIO()):
        assert suite(["replay", str(f), "--impl", "oracle-inprocess"]) == 0
    out = subprocess.run([sys.executable, "-m", "dsh_conformance.oracle", "run", str(f)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("{")
    served = subprocess.run([sys.executable, "-m", "dsh_conformance.oracle", "serve"], capture_output=True, text=True, timeout=120,
                            input="\n".join(json.dumps(m) for m in (
                                {"cmd": "start", "version": 1}, {"cmd": "run", "seq": 1, "scenario": ok},
                                {"cmd": "run", "seq": 2, "scenario": bad}, {"cmd": "stop"})) + "\n")
    answers = [json.loads(line) for line in served.stdout.splitlines()]
    assert "trace" in answers[1]
    assert answers[2]["errored"] and answers[2]["message"] == f"bad scenario: {e.value}"


def test_oracle_serve_survives_unreadable_lines():
    lines = b"\n".join([b'{"cmd":"start","version":1}', b"\xff\xfe not utf-8", b"[" * 5000 + b"]" * 5000,
                        b'{"cmd":"run","seq":' + b"9" * 400 + b"}", b"not json", b'{"cmd":"run","seq":3}',
                        b'{"cmd":"stop"}']) + b"\n"
    served = subprocess.run([sys.executable, "-m", "dsh_conformance.oracle", "serve"], capture_output=True, input=lines, timeout=120)
    assert served.returncode == 0 and b"Traceback" not in served.stderr
    answers = [json.loads(line) for line in served.stdout.splitlines()]
    assert len(answers) == 6 and "implementation" in answers[0]
    assert [a["errored"] for a in answers[1:]] == [True] * 5
    assert "not UTF-8" in answers[1]["message"] and f"nested deeper than {MAX_MESSAGE_DEPTH}" in answers[2]["message"]


# ---------------------------------------------------------------------------- malformed documents

def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


malformed = st.one_of(
    st.binary(min_size=1, max_size=300),  # anything at all
    st.builds(lambda d: _deep(d).encode(), st.integers(MAX_DEPTH + 1, 20_000)),
    st.builds(lambda n: json.dumps(with_arguments({"n": 0})).replace('"n": 0', '"n": ' + "7" * n).encode(),
              st.integers(310, 5000)),
    st.builds(lambda d: json.dumps(with_arguments(nested(d))).encode(), st.integers(MAX_DEPTH - 3, 600)),
    st.builds(lambda doc, cut: json.dumps(doc).encode()[:cut], st.just(BASE), st.integers(1, 200)),  # truncated
    st.builds(lambda b, at: (lambda t: t[:at] + b + t[at:])(json.dumps(BASE).encode()),
              st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"]), st.integers(0, 300)),
    st.sampled_from([b"NaN", b'{"run": Infinity}', b"-Infinity", b"[1e999]", b"\xef\xbb\xbf{}", b"null", b"[]"]),
)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=malformed)
def test_malformed_documents_get_one_line_and_exit_2(data: bytes, tmp_path_factory) -> None:
    f = tmp_path_factory.mktemp("malformed") / "case.json"
    f.write_bytes(data)
    for fn, argv in ((oracle, ["run", str(f)]), (suite, ["replay", str(f), "--impl", "oracle-inprocess"])):
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = fn(argv)
        if code == 0:  # hypothesis may build a scenario that happens to be fine
            continue
        text = err.getvalue()
        assert code == 2, (code, text, out.getvalue())
        assert len(text.splitlines()) == 1 and text.startswith(f"error: {f}: $"), text


# ---------------------------------------------------------------------------- docs check

@pytest.fixture
def docs_tree(tmp_path) -> Path:
    from dsh_conformance.tools.pipeline_page import generate

    docs = tmp_path / "docs"
    docs.mkdir()
    for path, text in generate(docs).items():
        path.write_bytes(text.encode("utf-8"))
    return tmp_path


def test_docs_check_on_a_binary_pairing_record(docs_tree, capsys):
    from dsh_conformance.tools.pipeline_page import PAGE

    record = docs_tree / "docs" / f"{PAGE}.i18n.yaml"
    record.write_bytes(bytes(range(256)) * 8)
    assert suite(["docs", "check", "--root", str(docs_tree)]) == 1
    out = capsys.readouterr().out
    # byte 10 is a line feed: the bad byte 128 is on line 2
    assert f"{record}:2: error: not UTF-8 (invalid start byte at byte 128); a pairing record is a short text file" in out


def test_docs_check_caps_a_flood_of_errors(docs_tree, capsys):
    """A 10 MB Mermaid block: each file's first 50 findings, one line counting the rest."""
    from dsh_conformance.defaults import DOCS_MAX_PER_FILE as MAX_PER_FILE
    from dsh_conformance.tools.pipeline_page import PAGE

    page = docs_tree / "docs" / f"{PAGE}.md"
    text = page.read_text(encoding="utf-8")
    at = text.index("```mermaid\n") + len("```mermaid\n")
    junk = "".join(f"  N{i}[\"node {i}\"] --> M{i}\n" for i in range(300_000))
    page.write_text(text[:at] + junk + text[at:], encoding="utf-8")
    assert page.stat().st_size > 10_000_000
    assert suite(["docs", "check", "--root", str(docs_tree)]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) < 2 * MAX_PER_FILE + 10 and len(out) < 100_000
    assert any(f"{page}: ... and " in line and "more error(s)" in line for line in lines)
    assert lines[-1].startswith("docs check: 3000") and "error(s)" in lines[-1]  # every error is still counted
