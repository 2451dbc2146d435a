"""Generated catalogs: JSON Schemas, the catalog index, its Markdown page, and the rule index.

``generate()`` renders every catalog file in memory; ``write`` puts them in ``catalogs/``
and ``check`` compares them byte for byte with what is committed (the drift check).
Rendering is pure: the same code gives the same bytes. ``check`` also loads the curated
flow model (catalogs/*.flow.yaml), which is not generated but must stay valid.

The schemas come from typed sources: the oracle's scenario and trace languages, the
protocol's message models (``conformance.protocol``), the report record (``conformance.report``,
when present), and the DSH vocabulary typed in oracle/ (session events, decisions, results,
tool definitions), whose names and vocabularies are the oracle's own. The project's copies
of the spec's rule index and rule statements (``conformance/``) follow the spec when it is
beside the clone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from dsh_conformance.spec import rule_text
from dsh_conformance.spec import rules as rule_index
from dsh_conformance.spec import contract
from dsh_conformance.iut.protocol import message_schemas
from dsh_conformance.reporting.report import report_schemas
from dsh_conformance.resources import CATALOGS as CATALOG_DIR
from dsh_conformance.resources import CLONE, DOCS, SUITE
from dsh_conformance.kit.scenario import scenario_json_schema
from dsh_conformance.kit.trace import trace_json_schema

from dsh_conformance.kit import decisions, results, session_events
from .catalog_index import INDEX_FILE, build_index, index_json, index_json_schema
from dsh_conformance.kit.schema_doc import DRAFT

from . import adapter_page, observation_catalog, scenario_page
from .catalog_page import render_catalog_page
from .flow_model import FLOW_FILE, FlowModelError, flow_model_json_schema, load_flow_model
from dsh_conformance.oracle.tool_definitions import ToolSchema

ROOT = CLONE if CLONE is not None else SUITE.parent  # what written paths are shown relative to
CATALOGS = CATALOG_DIR


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def _schema(file: str, title: str, tp: Any) -> dict[str, Any]:
    schema = TypeAdapter(tp).json_schema(ref_template="#/$defs/{model}")
    return {"$schema": DRAFT, "$id": file, "title": title, **schema}


def _defs_schema(file: str, title: str, types: dict[str, Any]) -> dict[str, Any]:
    """One schema file naming several types: each is ``#/$defs/<name>``; the root accepts
    any of them."""
    defs: dict[str, Any] = {}
    for name, tp in types.items():
        schema = TypeAdapter(tp).json_schema(ref_template="#/$defs/{model}")
        for key, sub in schema.pop("$defs", {}).items():
            if key in defs and defs[key] != sub:
                raise ValueError(f"{file}: two different definitions named {key!r}")
            defs[key] = sub
        defs[name] = schema
    return {"$schema": DRAFT, "$id": file, "title": title,
            "anyOf": [{"$ref": f"#/$defs/{name}"} for name in types], "$defs": dict(sorted(defs.items()))}


def schemas() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every generated JSON Schema by file name, with a one-line description."""
    out: dict[str, tuple[str, dict[str, Any]]] = {
        "scenario.schema.json": ("a scenario: registry, participants' scripts, calls (specified in docs/scenario-language.md)",
                                 scenario_json_schema()),
        "trace.schema.json": ("a trace: observations (the observation catalog's union), session events, results",
                              contract.install(trace_json_schema())),
        "session-events.schema.json": ("session-log events by `type`, with their payloads",
                                       _schema("session-events.schema.json", "Session-log event",
                                               session_events.SessionEvent)),
        "decisions.schema.json": ("pre-execute and post-execute decisions, the approval request and outcome",
                                  _defs_schema("decisions.schema.json", "Decisions", {
                                      "PreExecuteDecision": decisions.PreExecuteDecision,
                                      "PostExecuteDecision": decisions.PostExecuteDecision,
                                      "ApprovalRequest": decisions.ApprovalRequest,
                                      "ApprovalOutcome": decisions.ApprovalOutcome})),
        "results.schema.json": ("tool execution results, content blocks, user messages",
                                _defs_schema("results.schema.json", "Results", {
                                    "ToolExecutionResult": results.ToolExecutionResult,
                                    "ContentBlock": results.ContentBlock,
                                    "UserMessage": results.UserMessage})),
        "tool-definition.schema.json": ("the part of a tool definition offered to the model",
                                        _schema("tool-definition.schema.json", "Tool definition", ToolSchema)),
        "pipeline.catalog.schema.json": ("the catalog index's own schema", index_json_schema()),
        "flow-model.schema.json": ("the flow model's own schema (tools.flow_model)", flow_model_json_schema()),
    }
    for name, schema in {**message_schemas(), **report_schemas()}.items():
        what = "an IUT protocol message" if name.startswith("protocol-") else "a report message"
        out[name] = (f"{what} ({name.removesuffix('.schema.json')})", schema)
    return out


def generate() -> dict[Path, str]:
    """Every generated file and its text."""
    all_schemas = schemas()
    index = build_index()
    files = {name: desc for name, (desc, _) in all_schemas.items()}
    files[INDEX_FILE] = "the catalog index: every name the docs use, with kind and facts"
    files[FLOW_FILE.name] = "the flow model of the pipeline graph (curated, not generated)"
    files[observation_catalog.FILE] = ("the observation catalog: every observation an implementation reports, "
                                       "its value's schema, who reports it, its rules and profiles")
    out = {CATALOGS / name: _dump(schema) for name, (_, schema) in all_schemas.items()}
    contract_files = observation_catalog.files()
    out[CATALOGS / observation_catalog.FILE] = contract_files[observation_catalog.FILE]
    if DOCS is not None:  # the pages for readers live in a clone's docs/
        out[DOCS / observation_catalog.PAGE] = contract_files[observation_catalog.PAGE]
        out[DOCS / scenario_page.PAGE] = scenario_page.render_page()
        out[DOCS / adapter_page.PAGE] = adapter_page.render_page()
    out[CATALOGS / INDEX_FILE] = _dump(index_json(index))
    out[CATALOGS / "catalog.md"] = render_catalog_page(
        index, load_flow_model(FLOW_FILE), files, {name: s for name, (_, s) in all_schemas.items()})
    if rule_index.SPEC_RULES.is_file():
        # The project's copy of the rule index follows the spec whenever the spec is at hand.
        out[rule_index.INDEX] = rule_index.dumps_index(rule_index.index_from_spec())
    if rule_text.SPEC_TEXT.is_file():
        # So do the rules' statements that reports show.
        out[rule_text.STATEMENTS] = rule_text.dumps_statements(rule_text.statements_from_spec())
    return out


def write() -> list[Path]:
    changed = []
    for path, text in generate().items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def check() -> list[str]:
    """The stale or missing generated files and an invalid flow model, as messages (empty
    when all is well)."""
    problems = []
    try:
        load_flow_model(FLOW_FILE)
    except FlowModelError as e:
        return [str(e)]
    for path, text in generate().items():
        rel = path.relative_to(ROOT)
        if not path.is_file():
            problems.append(f"{rel}: missing; run `dsh-conformance catalogs generate`")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{rel}: stale; run `dsh-conformance catalogs generate`")
    return problems
