"""The IUT contract (issue 23): the observation catalog describes every observation an
implementation reports, the schemas hold answers to it, blame names what broke, and
``replay --all`` lists the divergences ``first_divergence`` walks."""

from __future__ import annotations

import itertools
import json
import sys
from functools import cache
from pathlib import Path

import jsonschema
import pytest

from dsh_conformance.judge import trace_lanes
from dsh_conformance.cli import main
from dsh_conformance.judge.blame import contract_error
from dsh_conformance.judge.compare import divergences, first_divergence
from dsh_conformance.spec.corpus import CASES, load_case, load_corpus
from dsh_conformance.spec import contract
from dsh_conformance.oracle import parse_trace, run_scenario
from dsh_conformance.kit.trace import is_portable, trace_json_schema
from dsh_conformance.reporting.report import read_report
from dsh_conformance.tools import observation_catalog

from .conftest import corpus_subset

CONTRACT_FAKE = Path(__file__).parent / "fakes" / "contract_fake.py"


@cache
def _corpus_traces():
    return [(case, run_scenario(case.scenario)) for case in load_corpus()]


def _item(o):
    return {"stage": o.stage, "what": o.what, "who": o.who, "value": o.value}


# ------------------------------------------------------------------ the catalog and the corpus

def test_every_portable_observation_of_the_corpus_is_in_the_catalog():
    """What the oracle makes, the catalog describes: its kind, its value's schema, its rules."""
    for case, trace in _corpus_traces():
        for n, o in enumerate(trace.observations):
            if not is_portable(o):
                assert o.what in contract.ORACLE_ONLY.get(o.stage, ()) or o.who in contract.BUILTIN_PARTICIPANTS, (
                    case.id, n, o.stage, o.what)
                continue
            item = _item(o)
            assert contract_error(item) is None, (case.id, n, item, contract_error(item))
            extra = set(o.rules) - set(contract.witnessed(o.stage, o.what, o.who))
            assert not extra, f"{case.id} observation {n} ({o.stage} {o.what}): rules {sorted(extra)} not in the catalog"


def test_generated_scenarios_stay_within_the_catalog():
    """The strategies reach further than the corpus: what the oracle makes for their draws
    is in the catalog too (60 independent draws, seed 0)."""
    from dsh_conformance.strategies.draws import draw_examples

    for example in draw_examples(60, 0):
        for n, o in enumerate(example.trace.observations):
            if is_portable(o):
                assert contract_error(_item(o)) is None, (n, _item(o), contract_error(_item(o)))
            else:
                assert o.what in contract.ORACLE_ONLY.get(o.stage, ()) or o.who in contract.BUILTIN_PARTICIPANTS, (
                    n, o.stage, o.what)


def test_every_catalog_entry_is_made_by_some_case():
    probes, kinds, steps, program = set(), set(), set(), set()
    for _case, trace in _corpus_traces():
        for o in trace.observations:
            if not is_portable(o):
                continue
            if o.who is None:
                probes.add((o.stage, o.what))
            else:
                kinds.add(o.stage)
                (program if o.stage == "program" else steps).add(o.what)
    assert {(p.stage, p.what) for p in contract.PROBES} - probes == set()
    assert {k.stage for k in contract.PARTICIPANTS} - kinds == set()
    assert {s.what for s in contract.STEPS} - steps == set()
    assert {s.what for s in contract.PROGRAM_STEPS} - program == set()


def test_oracle_traces_meet_the_trace_schema():
    """The union is strict and still takes every trace the oracle makes (a sample: the
    whole corpus takes seconds of schema checks)."""
    validator = jsonschema.Draft202012Validator(contract.install(trace_json_schema()))
    for case, trace in _corpus_traces()[::9]:
        errors = list(validator.iter_errors(json.loads(trace.dumps())))
        assert errors == [], (case.id, errors[0].message)


def test_the_catalog_names_who_reports_each_entry():
    doc = observation_catalog.build()
    assert {p["stage"] for p in doc["participants"]} == {k.stage for k in contract.PARTICIPANTS}
    assert all(p["who"] is None and p["profiles"] for p in doc["probes"])
    mutate = next(s for s in doc["steps"] if s["what"] == "mutate")
    assert mutate["value"]["properties"]["outcome"]["enum"] == ["applied", "failed"]
    page = Path(__file__).parents[1] / "docs" / observation_catalog.PAGE
    assert "| `result` | `start` |" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize("item, where", [
    ({"stage": "body", "what": "mutate", "who": "t", "value": {"target": "record.x", "op": "set", "outcome": "ok"}},
     "$.value.outcome"),
    ({"stage": "body", "what": "mutate", "who": "t", "value": {"target": "record.x", "op": "set"}}, "$.value"),
    ({"stage": "execute", "what": "call", "who": None, "value": None}, "$.what"),
    ({"stage": "body", "what": "start", "who": "t", "value": None}, "$.what"),
    ({"stage": "approval", "what": "request", "who": None, "value": {"agent": "a", "toolName": "t"}}, "$.value"),
    ({"stage": "body", "what": "return", "who": "t", "value": {"$js": "nonsense"}}, "$.value.$js"),
])
def test_contract_errors_name_the_place(item, where):
    error = contract_error(item)
    assert error is not None and error.startswith(where + ":"), error


# ------------------------------------------------------------------ --validate and blame, with fakes

PICK = ["args-snapshot-frozen-and-shared-with-body", "record-added-property-after-freeze",
        "pre-deny-post-bound-replaceable", "guard-denial-never-runs-body"]


def _run(tmp_path, mode, *extra):
    cases = corpus_subset(tmp_path, PICK)
    report = tmp_path / f"{mode}.jsonl"
    code = main(["run", "--impl", f"{sys.executable} {CONTRACT_FAKE} {mode}", "--cases", str(cases),
                 "--examples", "0", "--report", str(report), "--timeout", "20", *extra])
    return code, {c.id: c for c in read_report(report).cases}


@pytest.mark.parametrize("mode, path, says", [
    ("ok-for-applied", ".value.outcome", "'ok' is not one of ['applied', 'failed']"),
    ("missing-field", ".value", "'outcome' is a required property"),
    ("extra-kind", ".what", "'call' is not one of"),
])
def test_validate_rejects_observations_outside_the_contract(tmp_path, mode, path, says):
    code, cases = _run(tmp_path, mode, "--validate")
    assert code == 3
    broken = [c for c in cases.values() if c.outcome.value == "invalid"]
    assert broken, {c.id: c.outcome.value for c in cases.values()}
    for c in broken:
        assert "$.trace.observations[" in c.message and path + ":" in c.message and says in c.message, c.message
    if mode == "extra-kind":
        assert len(broken) == len(PICK)  # every case has a probe's start


@pytest.mark.rules("P24", "P99")
def test_a_word_outside_the_vocabulary_is_blamed_on_the_contract(tmp_path):
    """Without --validate, the divergence an `ok` for `applied` causes is a contract error,
    not P23 or another pipeline rule."""
    code, cases = _run(tmp_path, "ok-for-applied")
    assert code == 3
    for case in ("args-snapshot-frozen-and-shared-with-body", "record-added-property-after-freeze"):
        rec = cases[case]
        assert rec.outcome.value == "invalid" and rec.failing_rules == [], (case, rec.outcome, rec.failing_rules)
        assert rec.divergence["contract"].startswith("$.value.outcome: 'ok' is not one of"), rec.divergence
        assert "contract error" in rec.message
    assert cases["guard-denial-never-runs-body"].outcome.value == "pass"


@pytest.mark.rules("P5", "P76")
def test_a_listener_never_called_is_blamed_on_the_waterfall_rule(tmp_path):
    """A post-execute listener left out while its stage ran breaks P5 (the matching
    listeners run, in order), not the tags of the missing line (P76 is the stage's own
    rule: the stage did run)."""
    code, cases = _run(tmp_path, "skip-post-listener")
    assert code == 1
    rec = cases["pre-deny-post-bound-replaceable"]
    assert rec.outcome.value == "fail" and rec.failing_rules == ["P5"], (rec.failing_rules, rec.divergence)
    assert rec.divergence["expected"]["what"] == "call" and rec.divergence["expected"]["stage"] == "post-execute"
    assert "was never called" in rec.divergence["reason"]


def _edited(case, edit):
    trace = run_scenario(load_case(CASES / f"{case}.json").scenario)
    doc = json.loads(trace.dumps())
    edit(doc["observations"])
    return trace, parse_trace(doc)


@pytest.mark.rules("P100")
def test_observers_left_out_after_a_throw_are_blamed_on_containment():
    """An implementation that stops calling tools/result observers once one threw: P100
    (a throw affects neither the outcome nor the other observers), not the call's routing."""
    def edit(obs):
        at = next(n for n, o in enumerate(obs) if o["stage"] == "result" and o["what"] == "throw" and o["who"])
        thrower, call = obs[at]["who"], obs[at]["call"]
        obs[:] = [o for n, o in enumerate(obs) if not (n > at and o["call"] == call and o["stage"] == "result"
                                                       and o["who"] not in (None, thrower))]
    expected, actual = _edited("result-observer-failures-contained", edit)
    d = first_divergence(expected, actual, {"core"})
    assert d is not None and d.rules == ["P100"] and d.contract is None, d.describe()
    assert d.expected["what"] == "call" and "never called" in d.reason


@pytest.mark.rules("P5", "P7")
def test_a_listener_called_that_the_oracle_never_calls_is_blamed_on_selection():
    """A post-execute listener the call's agent does not select, called anyway: which
    listeners a waterfall selects and runs (P7, P5), not the tags of the line it displaced. Scope
    filtering is a reference rule: a core verdict names only P5 (section 2)."""
    def edit(obs):
        at = next(n for n, o in enumerate(obs) if (o["stage"], o["what"], o["who"]) == ("post-execute", "start", None))
        obs[at + 1:at + 1] = [dict(obs[at], what="call", who="scoped-elsewhere", value=None),
                              dict(obs[at], what="return", who="scoped-elsewhere", value={"kind": "accept"})]
    expected, actual = _edited("pre-deny-skips-body", edit)
    d = first_divergence(expected, actual, {"core", "reference"})
    assert d is not None and d.rules == ["P7", "P5"] and d.actual["who"] == "scoped-elsewhere", d.describe()
    core = first_divergence(expected, actual, {"core"})
    assert core is not None and core.rules == ["P5"], core.describe()


def test_an_unreported_script_step_is_a_contract_error():
    """A participant's `abort` line left out while its next line is there: the step ran as
    the scenario says and was not reported; no pipeline rule (P5, P30, P52, ...) is to blame."""
    def edit(obs):
        obs.pop(next(n for n, o in enumerate(obs) if o["what"] == "abort" and o["who"] == "pre"))
    expected, actual = _edited("checkpoint-caller-abort-after-guards", edit)
    d = first_divergence(expected, actual, {"core", "reference"})
    assert d is not None and d.rules == [] and d.contract is not None, d.describe()
    assert "'abort' step of 'pre'" in d.contract


# ------------------------------------------------------------------ replay --all and first_divergence

EXTRA = ("reference", "loop", "code-mode")
PROFILE_SETS = [{"core", *extra} for n in range(len(EXTRA) + 1) for extra in itertools.combinations(EXTRA, n)]


def _changed(trace):
    """The trace with its texts changed (Code Mode's own among them) and every fifth
    portable observation left out: differences in many lanes at once."""
    doc = json.loads(trace.dumps())

    def edit(v):
        if isinstance(v, str):
            return v + " (changed)" if v.startswith(("Error: ", "code ", "run_code")) else v
        if isinstance(v, list):
            return [edit(x) for x in v]
        if isinstance(v, dict):
            return {k: (x + " (changed)" if k in ("message", "text") and isinstance(x, str) else edit(x))
                    for k, x in v.items()}
        return v

    portable = [n for n, o in enumerate(doc["observations"]) if o["who"] is not None]
    drop = set(portable[4::5])
    doc["observations"] = [edit(o) for n, o in enumerate(doc["observations"]) if n not in drop]
    doc["results"] = edit(doc["results"])
    doc["warnings"] = [w + " (changed)" for w in doc["warnings"]]
    doc["events"] = edit(doc["events"])
    return parse_trace(doc)


def _lane(where):
    return "results" if where.startswith("results[") else where if where == "warnings" else where.rsplit("[", 1)[0]


def test_divergences_and_first_divergence_agree_on_every_corpus_case():
    checked = 0
    for case, expected in _corpus_traces():
        actual = _changed(expected)
        for profiles in PROFILE_SETS:
            found = divergences(expected, actual, profiles)
            first = first_divergence(expected, actual, profiles)
            lanes = {lane.name for lane in trace_lanes.lanes(expected, actual, profiles) if lane.first_divergence}
            assert {_lane(d.where) for d in found} == lanes, (case.id, sorted(profiles))
            assert (found[0].to_json() if found else None) == (first.to_json() if first else None), case.id
            checked += bool(found)
    assert checked > len(_corpus_traces())  # most cases differ under most profile sets


def test_replay_all_lists_a_code_mode_text_divergence(tmp_path, capsys):
    """The bug: under core,code-mode a Code Mode text that differs replayed with "0
    divergences" while its first divergence was found."""
    case = next(c for c, t in _corpus_traces() if "code-mode" in {p for p in _needed(c)}
                and first_divergence(t, _changed(t), {"core", "code-mode"}) is not None
                and first_divergence(t, _changed(t), {"core"}) is None)
    expected = run_scenario(case.scenario)
    found = divergences(expected, _changed(expected), {"core", "code-mode"})
    assert found and found[0].to_json() == first_divergence(expected, _changed(expected), {"core", "code-mode"}).to_json()


def _needed(case):
    from dsh_conformance.spec.rules import profiles_needed

    return profiles_needed(list(case.scenario.rules))


def test_blame_reasons_are_one_line():
    for case, expected in _corpus_traces()[::7]:
        for d in divergences(expected, _changed(expected), {"core", "reference", "loop", "code-mode"}):
            assert d.reason and "\n" not in d.reason, (case.id, d.where)


def test_corpus_dir_is_the_builtin_one():
    assert CASES.is_dir()
