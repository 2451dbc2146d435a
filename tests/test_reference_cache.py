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
from dsh_conformance.running import reference_cache, references
from dsh_conformance.running.runner import Runner
from dsh_conformance.oracle import parse_scenario, run_scenario

CORPUS = Path(__file__).resolve().parent.parent / "conformance" / "cases"
DOC = references.corpus_items(CORPUS)[0][1]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSH_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(reference_cache.SWITCH, raising=False)
    references.forget_references()
    yield tmp_path / "cache"
    references.forget_references()


def _key(doc):
    return references.key_of(references.document_text(doc))


def _oracle_runs(monkeypatch) -> list[int]:
    """Count the oracle's runs of the runner from now on."""
    runs: list[int] = []

    def counted(scenario):
        runs.append(1)
        return run_scenario(scenario)
    monkeypatch.setattr(references, "run_scenario", counted)
    return runs


def test_a_reference_is_kept_and_read_back_by_the_next_run_the_same(cache, monkeypatch):
    fresh = run_scenario(parse_scenario(DOC))
    references.reference(None, DOC)
    assert (reference_cache.directory() / f"{_key(DOC)}.pickle").is_file()
    references.forget_references()  # a new run: nothing in memory
    runs = _oracle_runs(monkeypatch)
    kept = references.reference(None, DOC)
    assert runs == [] and kept == fresh and kept.dumps() == fresh.dumps()


def test_another_process_reads_the_kept_reference(cache):
    """Written by this process, read by a fresh interpreter whose oracle cannot run."""
    references.reference(None, DOC)
    script = ("import json, sys\nfrom dsh_conformance.running import references\n"
              "references.run_scenario = lambda s: sys.exit('the oracle ran')\n"
              "doc = json.loads(sys.stdin.read())\nprint(references.reference(None, doc).dumps(), end='')\n")
    done = subprocess.run([sys.executable, "-c", script], input=references.jsontext.dumps(DOC), capture_output=True,
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

    references.reference(None, DOC)
    references.forget_references()
    monkeypatch.setattr(reference_cache, "source_digest", lambda: after)  # the code changed since
    runs = _oracle_runs(monkeypatch)
    references.reference(None, DOC)
    assert runs == [1]
    assert (reference_cache.directory(after) / f"{_key(DOC)}.pickle").is_file()


def test_a_changed_document_is_another_key_even_in_key_order(cache, monkeypatch):
    references.reference(None, DOC)
    references.forget_references()
    runs = _oracle_runs(monkeypatch)
    reordered = dict(reversed(list(DOC.items())))
    references.reference(None, reordered)
    assert runs == [1]


def test_the_running_code_is_what_the_digest_covers():
    import dsh_conformance.kit

    assert reference_cache.source_digest() == reference_cache.digest_of({
        "dsh_conformance.oracle": Path(dsh_conformance.oracle.__file__).parent,
        "dsh_conformance.kit": Path(dsh_conformance.kit.__file__).parent})


@pytest.mark.parametrize("spoil", ["torn", "another key", "group-writable", "folder world-writable"])
def test_a_file_not_to_trust_is_not_read(cache, monkeypatch, spoil):
    references.reference(None, DOC)
    path = reference_cache.directory() / f"{_key(DOC)}.pickle"
    if spoil == "torn":
        path.write_bytes(path.read_bytes()[:100])
    elif spoil == "another key":
        other = references.corpus_items(CORPUS)[1][1]
        references.reference(None, other)
        shutil.copy(reference_cache.directory() / f"{_key(other)}.pickle", path)
    elif spoil == "group-writable":
        path.chmod(0o664)
    else:
        path.parent.chmod(0o777)
    references.forget_references()
    runs = _oracle_runs(monkeypatch)
    assert references.reference(None, DOC) == run_scenario(parse_scenario(DOC))
    assert runs == [1]


def test_off_reads_and_writes_nothing(cache, monkeypatch):
    monkeypatch.setenv(reference_cache.SWITCH, "off")
    references.reference(None, DOC)
    assert not cache.exists()


def test_an_unwritable_cache_costs_the_speed_not_the_run(cache, monkeypatch):
    cache.write_text("a file where the folder would be")
    assert references.reference(None, DOC) == run_scenario(parse_scenario(DOC))


def test_a_kept_reference_is_read_when_its_case_is_prepared_and_judged_the_same(cache, monkeypatch):
    """A run after the first: ``expected_traces`` only sees that the file is there (the
    oracle ran the case to an end with this code), the case reads it when it is prepared,
    and the record is the one of a run that read it first."""
    from dsh_conformance.iut.in_process import embedded_oracle
    from dsh_conformance.reporting.report import ReportWriter
    from dsh_conformance.spec.rules import ORACLE_PROFILES

    items = references.corpus_items(CORPUS)[:6]

    def records():
        iut = embedded_oracle()
        iut.start()
        try:
            got = Runner(iut, set(ORACLE_PROFILES), writer=ReportWriter(None))
            got.run_cases(items, None, references.expected_traces(items, CORPUS))
            return [r.model_dump(exclude={"duration_ms"}) for r in got.records]
        finally:
            iut.close()

    first = records()  # computes and keeps every reference
    references.forget_references()
    runs = _oracle_runs(monkeypatch)
    expected = references.expected_traces(items, CORPUS)
    assert all(isinstance(v, references.KeptReference) for v in expected.values())
    assert expected[items[0][0]].resolve() == run_scenario(parse_scenario(items[0][1]))
    references.forget_references()
    assert records() == first
    assert runs == []


def test_a_kept_file_spoiled_after_the_check_is_computed_when_its_case_is_prepared(cache, monkeypatch):
    references.reference(None, DOC)
    references.forget_references()
    kept = references.expected_traces([("x", DOC, "x.json")], CORPUS)["x"]
    assert isinstance(kept, references.KeptReference)
    path = reference_cache.directory() / f"{_key(DOC)}.pickle"
    path.write_bytes(path.read_bytes()[:100])  # torn between the run's start and the case
    runs = _oracle_runs(monkeypatch)
    assert kept.resolve() == run_scenario(parse_scenario(DOC))
    assert runs == [1]


def test_without_the_cache_every_reference_is_computed_before_any_work(cache, monkeypatch):
    monkeypatch.setenv(reference_cache.SWITCH, "off")
    expected = references.expected_traces([("x", DOC, "x.json")], CORPUS)
    assert expected["x"] == run_scenario(parse_scenario(DOC))


def test_the_models_read_back_are_the_models_computed(cache):
    """Format v2 pickles each model as ``kit.trace.unvalidated(class, fields, fields given)``: every model of
    the scenario and the trace reads back with the same class, fields and set of fields given
    (``model_fields_set``, which decides what a dump leaves out), and no extra or private values."""
    from pydantic import BaseModel

    scenario = parse_scenario(DOC)
    trace = run_scenario(scenario)
    reference_cache.store(_key(DOC), scenario, trace)
    kept = reference_cache.load(_key(DOC))
    assert kept is not None

    def models(v, out):
        if isinstance(v, BaseModel):
            out.append(v)
            for x in v.__dict__.values():
                models(x, out)
        elif isinstance(v, (list, tuple)):
            for x in v:
                models(x, out)
        elif isinstance(v, dict):
            for x in v.values():
                models(x, out)
        return out
    before, after = models((scenario, trace), []), models(kept, [])
    assert len(before) == len(after) > 10
    for b, a in zip(before, after):
        assert type(a) is type(b) and a.__dict__ == b.__dict__ and a.model_fields_set == b.model_fields_set
        assert a.__pydantic_extra__ is None and a.__pydantic_private__ is None
    assert kept[0].model_dump(exclude_unset=True) == scenario.model_dump(exclude_unset=True)
