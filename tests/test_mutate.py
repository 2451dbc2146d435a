"""`dsh-conformance mutate`: the mutants, the fault catalogue, and a small run for real.

The smoke run below builds mutants as `dsh-conformance mutate` does (a copy of the oracle
under a temporary package name, forked workers, the default run's cases) so that the
machinery cannot rot; `docs/mutation-report.md` is the full run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh_conformance.measuring import mutants, operators
from dsh_conformance.cli import main
from dsh_conformance.measuring.mutate import default_cases, run_mutants
from dsh_conformance.spec.rules import rules


def test_every_fault_applies_once_and_compiles():
    faults = mutants.faults()
    assert len(faults) >= 60
    assert len({f.id for f in faults}) == len(faults)
    for f in faults:
        compile(f.mutated, f.module, "exec")
        assert f.mutated != mutants.module_source(f.module)
        assert f.rules[0] in rules() and f.theme in mutants.themes()


def test_blame_accuracy_counts_the_caught_faults_blamed_on_their_rule():
    from dsh_conformance.measuring.mutate import Result
    from dsh_conformance.measuring.mutation_report import blame_accuracy

    pool, guard = (next(f for f in mutants.faults() if f.id == i)
                   for i in ("fault:pool-size-plus-one", "fault:guard-throw-abstains"))
    results = [Result(pool, "killed", failing_rules=["P1", "P20"]), Result(guard, "killed", failing_rules=["P1"])]
    got = blame_accuracy(results)
    assert got["caught"] == 2 and got["blamed"] == 1 and got["missed"] == ["fault:guard-throw-abstains"]


def test_themes_hold_every_rule_once():
    listed = [r for t in mutants.themes().values() for r in t["rules"]]
    assert sorted(listed, key=lambda r: int(r[1:])) == sorted(rules(), key=lambda r: int(r[1:]))
    assert len(listed) == len(set(listed))


def test_a_stale_fault_is_named_with_its_place(monkeypatch, tmp_path):
    doc = tmp_path / "faults.yaml"
    doc.write_text("themes: {ordering: {title: t, rules: [P1]}}\nfaults:\n"
                   "- {id: x, rule: P1, theme: ordering, module: loop.py, find: 'no such text', replace: y, why: z}\n")
    monkeypatch.setattr(mutants, "FAULTS_FILE", doc)
    mutants._catalogue.cache_clear()
    mutants.themes.cache_clear()
    mutants.faults.cache_clear()
    try:
        with pytest.raises(mutants.MutantError, match=r"faults\[0\]\.find: occurs 0 times in oracle/loop.py"):
            mutants.faults()
    finally:
        mutants._catalogue.cache_clear()
        mutants.themes.cache_clear()
        mutants.faults.cache_clear()


def test_the_sample_is_reproducible_and_spread_over_modules():
    a = operators.plan(24, 7, with_faults=False, modules=["loop.py", "registry.py", "classify.py"])
    b = operators.plan(24, 7, with_faults=False, modules=["loop.py", "registry.py", "classify.py"])
    assert [m.id for m in a.mutants] == [m.id for m in b.mutants]
    assert len(a.mutants) == 24
    assert {m.module for m in a.mutants} == {"loop.py", "registry.py", "classify.py"}
    c = operators.plan(24, 8, with_faults=False, modules=["loop.py", "registry.py", "classify.py"])
    assert [m.id for m in c.mutants] != [m.id for m in a.mutants]
    # an id names one change, found again without sampling
    again = operators.plan(0, 0, only=[a.mutants[0].id])
    assert again.mutants[0].mutated == a.mutants[0].mutated


def test_the_sample_outlives_unrelated_edits():
    """Points are drawn by a keyed digest of their ids, not by index: a point added to a
    module (an edit elsewhere in it) leaves the other draws as they were, so that the
    committed report's equivalents and survivors stay the ones a rerun finds."""
    import random
    from dataclasses import replace

    pts = operators.points("registry.py")
    before = {p.id for p in operators._sample({"registry.py": pts}, 40, random.Random(0))}
    extra = replace(pts[0], id="registry.new_function#00000000")
    after = {p.id for p in operators._sample({"registry.py": [extra, *pts]}, 40, random.Random(0))}
    assert len(before) == len(after) == 40
    assert len(before - after) <= 1, before ^ after


def test_the_operators_include_the_classic_ones_beside_mutmuts():
    ops = {p.operator for p in operators.points("loop.py")}
    assert {"negate_condition", "delete_statement", "swap_statements", "number_minus_one", "early_return",
            "return_none", "swap_op", "number"} <= ops


def test_workers_judge_killed_survived_and_broken(tmp_path):
    few_cases = default_cases(3, 0, cases_dir=small_corpus(tmp_path))
    source = mutants.module_source("loop.py")
    noop = mutants.Mutant(id="test:noop", kind="operator", module="loop.py", line=1, operator="test",
                          change="a comment", rules=(), theme="other", mutated=source + "\n# nothing changes\n")
    broken = mutants.Mutant(id="test:broken", kind="operator", module="loop.py", line=1, operator="test",
                            change="an import error", rules=(), theme="other", mutated=source + "\nimport no_such_module\n")
    guard = next(f for f in mutants.faults() if f.id == "fault:guard-throw-abstains")
    got = {m.id: a for m, a in run_mutants([noop, broken, guard], few_cases, 2, 10, 60, tmp_path)}
    assert got["test:noop"]["status"] == "survived"
    assert got["test:broken"]["status"] == "broken" and "no_such_module" in got["test:broken"]["detail"]
    assert got["fault:guard-throw-abstains"]["status"] == "killed"
    assert "P49" in got["fault:guard-throw-abstains"]["failing_rules"]


def small_corpus(tmp_path: Path) -> Path:
    """A few corpus cases, so that the smoke run stays quick."""
    import shutil

    from dsh_conformance.spec.corpus import CASES

    d = tmp_path / "cases"
    d.mkdir()
    for name in ("loop-scheduler-failure-drains-in-flight", "guard-throws-is-final", "pre-no-listeners-allows"):
        shutil.copy(CASES / f"{name}.json", d)
    return d


def test_smoke_run_writes_its_reports_and_blames_the_pool_on_p20(tmp_path, capsys):
    out = tmp_path / "m"
    code = main(["mutate", "--only", "fault:pool-size-plus-one", "--only", "fault:guard-throw-abstains",
                 "--examples", "4", "--cases", str(small_corpus(tmp_path)), "--output", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    lines = [json.loads(x) for x in (out / "mutants.jsonl").read_text().splitlines()]
    assert lines[0]["kind"] == "header" and lines[-1]["kind"] == "footer"
    by_id = {x["id"]: x for x in lines if x["kind"] == "mutant"}
    pool = by_id["fault:pool-size-plus-one"]
    assert pool["status"] == "killed" and pool["killed_by"]["corpus"] >= 1
    assert pool["blamed"] is True and "P20" in pool["failing_rules"]  # not only the stage order it shows first
    assert pool["replay"] and pool["replay"][0].startswith("dsh-conformance mutate --only fault:pool-size-plus-one")
    md = (out / "mutation.md").read_text()
    assert "## Kill rate per theme" in md and "| P20 |" in md
    # blame accuracy beside the kill rate (issue 39): both faults caught, both blamed on their rule
    assert "blame accuracy" in md and lines[-1]["blame"] == {"caught": 2, "blamed": 2, "rate": "100.0%", "missed": []}
    assert (out / "mutation.html").read_text().startswith("<!doctype html>")


def test_the_replay_command_reruns_a_killing_case(capsys):
    code = main(["mutate", "--only", "fault:pool-size-plus-one", "--replay", "loop-scheduler-failure-drains-in-flight"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "fail: loop-scheduler-failure-drains-in-flight" in printed and "P20" in printed


def test_an_unmutated_copy_that_fails_stops_the_measurement(monkeypatch, tmp_path, capsys):
    import dsh_conformance.measuring.mutate as mutate_module

    real = mutate_module.materialize
    fault = next(f for f in mutants.faults() if f.id == "fault:guard-throw-abstains")

    def always_faulty(root: Path, package: str, mutant=None):
        return real(root, package, mutant or fault)
    monkeypatch.setattr(mutate_module, "materialize", always_faulty)
    code = main(["mutate", "--only", "fault:pool-size-plus-one", "--examples", "0", "--cases", str(small_corpus(tmp_path)),
                 "--output", str(tmp_path / "m"), "--quiet"])
    assert code == 3
    assert "the unmutated copy of the oracle does not pass" in capsys.readouterr().err


def test_excluded_functions_name_real_code():
    """Every ``functions:`` entry of the equivalence file names at least one function of
    the oracle with mutation points (a renamed function would otherwise be excluded
    silently), and each carries a reason."""
    import fnmatch

    names = {f"{m.removesuffix('.py')}.{p.function}" for m in mutants.oracle_modules()
             if m not in mutants.excluded_modules() for p in operators.points(m)}
    for pattern, reason in mutants.excluded_functions().items():
        assert reason.strip(), pattern
        assert any(fnmatch.fnmatchcase(n, pattern) for n in names), f"{pattern}: no such function with mutation points"


def test_every_noted_mutant_is_one_the_oracle_still_has():
    """A note for a mutant whose code changed or went away says nothing any more (its id is
    a digest of the change); and a field's description is never a mutation point (it
    documents the catalogs, so each of its mutants would only be another note)."""
    ids = {p.id for m in mutants.oracle_modules() if m not in mutants.excluded_modules() for p in operators.points(m)}
    notes = mutants._equivalence_doc().get("mutants", {})
    assert notes and not sorted(set(notes) - ids)
    described = [p.id for p in operators.points("kit/results.py") if "(P47)" in p.before]
    assert not described, described
