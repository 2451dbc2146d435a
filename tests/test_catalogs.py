"""The generated catalogs are fresh, valid JSON Schemas, and describe what the oracle emits."""

from __future__ import annotations

import json

import jsonschema
import pytest

from dsh_conformance.spec.corpus import load_corpus
from dsh_conformance.oracle import run_scenario
from dsh_conformance.kit.scenario import scenario_to_json
from dsh_conformance.tools import catalogs


def test_catalogs_are_fresh():
    assert catalogs.check() == []


SCHEMAS = sorted(p.name for p in catalogs.CATALOGS.glob("*.schema.json"))


def test_every_catalog_schema_is_generated():
    assert set(SCHEMAS) == set(catalogs.schemas())
    assert {"session-events.schema.json", "decisions.schema.json", "results.schema.json",
            "tool-definition.schema.json", "protocol-run.schema.json", "report-record.schema.json"} <= set(SCHEMAS)


@pytest.mark.parametrize("name", SCHEMAS)
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


# ---------------------------------------------------------------- the DSH vocabulary


def _defs_validator(name, definition):
    schema = json.loads((catalogs.CATALOGS / name).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator({**schema, "anyOf": [{"$ref": f"#/$defs/{definition}"}]})


@pytest.fixture(scope="module")
def corpus_traces():
    return {c.id: run_scenario(c.scenario) for c in load_corpus()}


def test_index_validates_against_its_schema():
    _validator("pipeline.catalog.schema.json").validate(
        json.loads((catalogs.CATALOGS / "pipeline.catalog.json").read_text(encoding="utf-8")))


def test_every_session_event_and_result_of_the_corpus_validates(corpus_traces):
    from dsh_conformance.tools.catalog_index import build_index

    events, result = _validator("session-events.schema.json"), _defs_validator("results.schema.json", "ToolExecutionResult")
    index = build_index()
    seen = set()
    for trace in corpus_traces.values():
        for e in trace.events:
            events.validate({"type": e.type, "data": e.data})
            seen.add(e.type)
        for r in trace.results:
            result.validate(r.result)
    oracle_written = {e.name for e in index.sessionEvents if e.writtenByOracle}
    assert seen == oracle_written  # the catalog says which events the oracle's traces carry


def test_decisions_the_registry_accepts_validate(corpus_traces):
    pre = _defs_validator("decisions.schema.json", "PreExecuteDecision")
    post = _defs_validator("decisions.schema.json", "PostExecuteDecision")
    outcome = _defs_validator("decisions.schema.json", "ApprovalOutcome")
    request = _defs_validator("decisions.schema.json", "ApprovalRequest")
    checked = 0
    for trace in corpus_traces.values():
        obs = trace.observations
        for o, nxt in zip(obs, obs[1:] + obs[-1:]):
            if o.who is not None:
                continue
            # A pre-execute decision the registry took as well formed is followed by a stage,
            # not by a final route (P31).
            if (o.stage, o.what) == ("pre-execute", "end") and not (nxt.stage == "route" and nxt.value == "final") \
                    and json.dumps(o.value).find("$js") < 0:
                pre.validate(o.value)
                checked += 1
            # An outcome with tokens (an instance, a getter read while it is written, P41) is
            # none the registry takes; the schema describes plain JSON outcomes.
            if (o.stage, o.what) == ("approval", "outcome") and not (nxt.stage == "route" and nxt.value == "final") \
                    and json.dumps(o.value).find("$js") < 0:
                outcome.validate(o.value)
            if (o.stage, o.what) == ("approval", "request"):
                request.validate(o.value)
    assert checked > 100
    assert post.is_valid({"kind": "block", "feedback": [{"type": "text", "text": "no"}]})
    assert not post.is_valid({"kind": "reject"})
    assert not pre.is_valid({"kind": "deny"})  # a deny needs its reason (P31)


def test_live_events_cover_the_oracles_events_with_their_modes():
    from dsh_conformance.kit.scenario import EVENTS
    from dsh_conformance.tools.catalog_index import build_index

    index = build_index()
    for name in EVENTS:
        entry = index.live_event(name)
        assert entry is not None, name
        assert entry.mode == ("emit" if name == "tools/result" else "waterfall")
    pre = index.live_event("tools/pre-execute")
    assert pre.signature == "(exec: ToolExecution, next: () => Promise<PreToolDecision>) => Promise<PreToolDecision>"
    assert index.live_event("fs/observed").mode == "emit"


def test_tool_definition_members_match_the_scenario_language():
    from dsh_conformance.kit.scenario import Tool
    from dsh_conformance.oracle.tool_definitions import MEMBERS, RUN_CODE

    fields = set(Tool.model_fields)
    assert [m.scenario_field for m in MEMBERS if m.scenario_field not in fields] == []
    validator = _validator("tool-definition.schema.json")
    validator.validate(RUN_CODE.model_dump())
    jsonschema.Draft202012Validator.check_schema(RUN_CODE.parameters)
    args = jsonschema.Draft202012Validator(RUN_CODE.parameters)
    assert args.is_valid({"code": "return 1", "description": "one"})
    assert not args.is_valid({"code": "return 1"})  # both required (P115)


def test_catalog_page_lists_every_name():
    from dsh_conformance.tools.catalog_index import build_index

    page = (catalogs.CATALOGS / "catalog.md").read_text(encoding="utf-8")
    index = build_index()
    for e in index.sessionEvents:
        assert f"### `{e.name}` — {e.badge}" in page
    for e in index.liveEvents:
        assert f"### `{e.name}` — {e.mode}" in page
    assert "### `run_code`" in page and "### `ctx.approval` — `ApprovalService`" in page


def test_catalogs_commands(capsys):
    from dsh_conformance.cli import main

    assert main(["catalogs", "check"]) == 0
    assert "up to date" in capsys.readouterr().out
