"""The oracle's reference traces kept on disk (conformance.reference_cache): read back in a
later run, never when the key's inputs changed (the oracle's or the kit's code, the
document), never from a file the user does not own alone, and the same trace as computed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dsh_conformance.oracle
from dsh_conformance import reference_cache, runner
from dsh_conformance.oracle import parse_scenario, run_scenario

CORPUS = Path(__file__).resolve().parent.parent / "conformance" / "cases"
DOC = runner.corpus_items(CORPUS)[0][1]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSH_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(reference_cache.SWITCH, raising=False)
    runner.forget_references()
    yield tmp_path / "cache"
    runner.forget_references()


def _key(doc):
    return runner._key_of(runner._document_text(doc))


def _oracle_runs(monkeypatch) -> list[int]:
    """Count the oracle's runs of the runner from now on."""
    runs: list[int] = []

    def counted(scenario):
        runs.append(1)
        return run_scenario(scenario)
    monkeypatch.setattr(runner, "run_scenario", counted)
    return runs


def test_a_reference_is_kept_and_read_back_by_the_next_run_the_same(cache, monkeypatch):
    fresh = run_scenario(parse_scenario(DOC))
    runner.reference(None, DOC)
    assert (reference_cache.directory() / f"{_key(DOC)}.pickle").is_file()
    runner.forget_references()  # a new run: nothing in memory
    runs = _oracle_runs(monkeypatch)
    kept = runner.reference(None, DOC)
    assert runs == [] and kept == fresh and kept.dumps() == fresh.dumps()


def test_another_process_reads_the_kept_reference(cache):
    """Written by this process, read by a fresh interpreter whose oracle cannot run."""
    runner.reference(None, DOC)
    script = ("import json, sys\nfrom dsh_conformance import runner\n"
              "runner.run_scenario = lambda s: sys.exit('the oracle ran')\n"
              "doc = json.loads(sys.stdin.read())\nprint(runner.reference(None, doc).dumps(), end='')\n")
    done = subprocess.run([sys.executable, "-c", script], input=runner.jsontext.dumps(DOC), capture_output=True,
                          text=True, env={**os.environ}, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_scenario(parse_scenario(DOC)).dumps()


def test_changed_oracle_code_is_another_digest_and_the_reference_is_computed_anew(cache, tmp_path, monkeypatch):
    copy = tmp_path / "oracle"
    shutil.copytree(Path(dsh_conformance.oracle.__file__).parent, copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = reference_cache.digest_of({"dsh_conformance.oracle": copy})
    run_py = copy / "run.py"
    run_py.write_text(run_py.read_text() + "\n# one line more\n")
    after = reference_cache.digest_of({"dsh_conformance.oracle": copy})
    assert before != after
    (copy / "extra.py").write_text("")
    assert reference_cache.digest_of({"dsh_conformance.oracle": copy}) != after

    runner.reference(None, DOC)
    runner.forget_references()
    monkeypatch.setattr(reference_cache, "source_digest", lambda: after)  # the code changed since
    runs = _oracle_runs(monkeypatch)
    runner.reference(None, DOC)
    assert runs == [1]
    assert (reference_cache.directory(after) / f"{_key(DOC)}.pickle").is_file()


def test_a_changed_document_is_another_key_even_in_key_order(cache, monkeypatch):
    runner.reference(None, DOC)
    runner.forget_references()
    runs = _oracle_runs(monkeypatch)
    reordered = dict(reversed(list(DOC.items())))
    runner.reference(None, reordered)
    assert runs == [1]


def test_the_running_code_is_what_the_digest_covers():
    import dsh_conformance.kit

    assert reference_cache.source_digest() == reference_cache.digest_of({
        "dsh_conformance.oracle": Path(dsh_conformance.oracle.__file__).parent,
        "dsh_conformance.kit": Path(dsh_conformance.kit.__file__).parent})


@pytest.mark.parametrize("spoil", ["torn", "another key", "group-writable", "folder world-writable"])
def test_a_file_not_to_trust_is_not_read(cache, monkeypatch, spoil):
    runner.reference(None, DOC)
    path = reference_cache.directory() / f"{_key(DOC)}.pickle"
    if spoil == "torn":
        path.write_bytes(path.read_bytes()[:100])
    elif spoil == "another key":
        other = runner.corpus_items(CORPUS)[1][1]
        runner.reference(None, other)
        shutil.copy(reference_cache.directory() / f"{_key(other)}.pickle", path)
    elif spoil == "group-writable":
        path.chmod(0o664)
    else:
        path.parent.chmod(0o777)
    runner.forget_references()
    runs = _oracle_runs(monkeypatch)
    assert runner.reference(None, DOC) == run_scenario(parse_scenario(DOC))
    assert runs == [1]


def test_off_reads_and_writes_nothing(cache, monkeypatch):
    monkeypatch.setenv(reference_cache.SWITCH, "off")
    runner.reference(None, DOC)
    assert not cache.exists()


def test_an_unwritable_cache_costs_the_speed_not_the_run(cache, monkeypatch):
    cache.write_text("a file where the folder would be")
    assert runner.reference(None, DOC) == run_scenario(parse_scenario(DOC))
