"""The generated catalogs are fresh, valid JSON Schemas, and describe what the oracle emits."""

from __future__ import annotations

import json

import jsonschema
import pytest

from conformance.corpus import load_corpus
from oracle import run_scenario
from oracle.scenario import scenario_to_json
from tools import catalogs


def test_catalogs_are_fresh():
    assert catalogs.check() == []


@pytest.mark.parametrize("name", ["scenario.schema.json", "trace.schema.json"])
def test_schema_is_valid(name):
    schema = json.loads((catalogs.CATALOGS / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)


def _validator(name):
    schema = json.loads((catalogs.CATALOGS / name).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def test_corpus_files_and_traces_validate():
    scenario_v, trace_v = _validator("scenario.schema.json"), _validator("trace.schema.json")
    for case in load_corpus():
        raw = json.loads(case.path.read_text(encoding="utf-8"))
        scenario_v.validate(raw)
        scenario_v.validate(scenario_to_json(case.scenario))
        trace_v.validate(json.loads(run_scenario(case.scenario).dumps()))


def test_schema_rejects_what_the_parser_rejects():
    v = _validator("scenario.schema.json")
    bad = {"run": {"kind": "direct", "calls": [{"callId": "c", "name": "t"}]},
           "listeners": [{"id": "x", "event": "tools/nope"}]}
    assert not v.is_valid(bad)
