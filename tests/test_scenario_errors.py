"""Bad scenario files get one line naming the file and the JSON path, and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dsh_conformance.oracle import ScenarioFileError, load_scenario
from dsh_conformance.oracle.__main__ import main

GOOD = {"tools": [{"name": "t"}], "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "t"}]}}


def _with(**changes):
    doc = json.loads(json.dumps(GOOD))
    doc.update(changes)
    return doc


BAD = [
    ("not-json", "{", "$", "not JSON"),
    ("nan-literal", '{"run": NaN}', "$", "NaN is not JSON"),
    ("top-level-array", "[]", "$", ""),
    ("no-run", {"tools": []}, "$.run", "Field required"),
    ("unknown-key", _with(extra=1), "$.extra", "Extra inputs are not permitted"),
    ("bad-run-kind", _with(run={"kind": "batch"}), "$.run", ""),
    ("no-calls", _with(run={"kind": "direct", "calls": []}), "$.run.calls", ""),
    ("bad-step", _with(tools=[{"name": "t", "body": [{"do": "explode"}]}]), "$.tools[0].body[0]", "explode"),
    ("step-missing-field", _with(tools=[{"name": "t", "body": [{"do": "mutate"}]}]), "$.tools[0].body[0].target", "Field required"),
    ("bad-event", _with(listeners=[{"id": "l", "event": "tools/nope"}]), "$.listeners[0].event", ""),
    ("unknown-agent", _with(guards=[{"id": "g", "scope": "ghost"}]), "$.guards[0].scope", "unknown agent"),
    ("agent-cycle", _with(agents=[{"id": "a", "parent": "b"}, {"id": "b", "parent": "a"}]), "$.agents[0].parent", "cycle"),
    ("dup-participant", _with(guards=[{"id": "g"}, {"id": "g"}]), "$.guards[1]", "duplicate"),
    ("dup-call", _with(run={"kind": "direct", "calls": [{"callId": "c", "name": "t"}, {"callId": "c", "name": "t"}]}),
     "$.run.calls[1].callId", "duplicate call id"),
    ("sync-next", _with(guards=[{"id": "g", "script": [{"do": "next"}]}]), "$.guards[0].script.steps[0]",
     "synchronous"),
    ("register-unknown", _with(tools=[{"name": "t", "body": [{"do": "register", "ref": "zz"}]}]),
     "$.tools[0].body.steps[0].ref", "no tool, listener or guard"),
    ("mutate-bad-root", _with(tools=[{"name": "t", "body": [{"do": "mutate", "target": "window.x"}]}]),
     "$.tools[0].body.steps[0].target", "a target starts with"),
    ("release-unknown", _with(agents=[{"id": "a"}], run={"kind": "loop", "agent": "a", "release": ["x"]}),
     "$.run.release[0]", "no block"),
    ("negative-timeout", _with(tools=[{"name": "t", "timeoutMs": 0}]), "$.tools[0].timeoutMs", ""),
    # the body's own work (P71): only a tool body dispatches an intent or appends a session event
    ("dispatch-in-a-hook", _with(listeners=[{"id": "l", "event": "tools/pre-execute",
                                             "script": [{"do": "dispatch", "event": "fs/write-intent"}]}]),
     "$.listeners[0].script.steps[0]", "step 'dispatch' is the work of a tool body"),
    ("append-in-a-hook", _with(listeners=[{"id": "l", "event": "tools/post-execute",
                                           "script": [{"do": "append", "data": {"todos": []}}, {"do": "next"}]}]),
     "$.listeners[0].script.steps[0]", "step 'append' is the work of a tool body"),
    ("append-in-a-finalizer", _with(tools=[{"name": "t", "finalizeContent": [{"do": "append", "data": {"todos": []}}]}]),
     "$.tools[0].finalizeContent.steps[0]", "only a body's script may use it"),
    ("dispatch-in-an-intent-listener", _with(listeners=[{"id": "l", "event": "fs/write-intent", "script": {
        "byCall": {"c1": [{"do": "dispatch", "event": "fs/edit-intent"}]}}}]),
     "$.listeners[0].script.byCall.c1[0]", "step 'dispatch' is the work of a tool body"),
    ("scoped-intent-listener", _with(agents=[{"id": "a"}], listeners=[{"id": "l", "event": "fs/write-intent", "scope": "a"}]),
     "$.listeners[0].scope", "cannot be scoped"),
    ("define-presenter-with-viewer", _with(
        agents=[{"id": "a"}], tools=[{"name": "t", "define": True, "presentCall": [{"do": "return", "value": 1}]}],
        run={"kind": "loop", "agent": "a", "present": True, "blocks": [{"id": "A1", "name": "t"}]}),
     "$.tools[0].presentCall", "presents raw definitions only"),
    ("append-bad-todo-status", _with(tools=[{"name": "t", "body": [
        {"do": "append", "data": {"todos": [{"content": "x", "status": "done"}]}}]}]),
     "$.tools[0].body[0].data.todos[0].status", "'pending', 'in_progress' or 'completed'"),
    ("append-unknown-type", _with(tools=[{"name": "t", "body": [{"do": "append", "type": "todo/read", "data": {"todos": []}}]}]),
     "$.tools[0].body[0].type", "'todo/write'"),
    ("dispatch-unknown-event", _with(tools=[{"name": "t", "body": [{"do": "dispatch", "event": "fs/delete-intent"}]}]),
     "$.tools[0].body[0].event", "'fs/write-intent' or 'fs/edit-intent'"),
    ("present-on-a-direct-run", _with(run={"kind": "direct", "present": True, "calls": [{"callId": "c1", "name": "t"}]}),
     "$.run.present", "Extra inputs are not permitted"),
    # tokens that refer beyond themselves (kit.value_refs)
    ("getter-undeclared", _with(run={"kind": "direct", "calls": [{"callId": "c1", "name": "t", "arguments": {
        "a": {"$js": "getter", "id": "g9"}}}]}), "$.run.calls[0].arguments.a", "no getter has id 'g9'"),
    ("getter-as-a-whole-value", _with(getters=[{"id": "g"}], tools=[{"name": "t", "body": [
        {"do": "return", "value": {"$js": "getter", "id": "g"}}]}]), "$.tools[0].body.steps[0].value",
     "where a property value stands"),
    ("input-getter-undeclared", _with(run={"kind": "direct", "calls": [{"callId": "c1", "name": "t", "getters": {"name": "g"}}]}),
     "$.run.calls[0].getters.name", "no getter has id 'g'"),
    ("getter-id-taken", _with(getters=[{"id": "t"}]), "$.getters[0].id", "duplicate participant id"),
    ("getter-suspends", _with(getters=[{"id": "g", "script": [{"do": "sleep", "ms": 1}]}]), "$.getters[0].script.steps[0]",
     "synchronous"),
    ("shared-before-defined", _with(run={"kind": "direct", "calls": [{"callId": "c1", "name": "t", "arguments": {
        "a": {"$js": "shared", "id": "s"}, "b": {"$js": "shared", "id": "s", "value": {}}}}]}),
     "$.run.calls[0].arguments.a", "reached before it is defined"),
    ("shared-inside-itself", _with(run={"kind": "direct", "calls": [{"callId": "c1", "name": "t", "arguments": {
        "a": {"$js": "shared", "id": "s", "value": {"self": {"$js": "shared", "id": "s"}}}}}]}),
     "$.run.calls[0].arguments.a.value.self", "write a cycle token"),
    ("shared-not-an-object", _with(run={"kind": "direct", "calls": [{"callId": "c1", "name": "t", "arguments": {
        "a": {"$js": "shared", "id": "s", "value": 3}}}]}), "$.run.calls[0].arguments.a.value", "an object or an array"),
    ("shared-defined-differently", _with(tools=[{"name": "t", "body": [{"do": "return", "value": {
        "$js": "shared", "id": "s", "value": [1]}}]}], run={"kind": "direct", "calls": [{"callId": "c1", "name": "t",
        "arguments": {"$js": "shared", "id": "s", "value": {}}}]}), "$", "defined twice, differently"),
    ("cancel-in-a-direct-run", _with(tools=[{"name": "t", "body": [{"do": "cancel"}]}]), "$.tools[0].body.steps[0]",
     "needs a loop run"),
    # the oracle's own signals (registry.World.signal): another implementation would make a fresh one
    ("set-signal-to-a-callers-name", _with(tools=[{"name": "t", "body": [{"do": "set-signal", "signal": "caller:c1"}]}]),
     "$.tools[0].body.steps[0].signal", "is the pipeline's own"),
    ("set-signal-named-step", _with(tools=[{"name": "t", "body": [{"do": "set-signal", "signal": "step"}]}]),
     "$.tools[0].body.steps[0].signal", "is the pipeline's own"),
    ("abort-a-turns-signal", _with(tools=[{"name": "t", "body": [{"do": "abort", "signal": "turn-2"}]}]),
     "$.tools[0].body.steps[0].signal", "is the pipeline's own"),
    # a token of no kind of section 3.11 (the escape of a literal "$js" key stays allowed)
    ("unknown-token-kind", _with(tools=[{"name": "t", "body": [{"do": "return", "value": {"a": [{"$js": "weird"}]}}]}],
                                 run={"kind": "direct", "calls": [{"callId": "c1", "name": "t", "arguments": {
                                     "$js": "object", "entries": {"$js": "literal"}}}]}),
     "$.tools[0].body.steps[0].value.a[0].$js", "unknown token kind 'weird'"),
    ("scoped-pre-step-listener", _with(agents=[{"id": "a"}], listeners=[{"id": "l", "event": "agent/pre-step", "scope": "a"}]),
     "$.listeners[0].scope", "cannot be scoped"),
    ("negative-abort-at", _with(run={"kind": "direct", "calls": [{"callId": "c1", "name": "t", "abortAt": -1}]}),
     "$.run.calls[0].abortAt", ""),
]


@pytest.mark.parametrize("name,doc,path,needle", BAD, ids=[b[0] for b in BAD])
def test_bad_scenario_names_file_and_path(tmp_path, name, doc, path, needle):
    f = tmp_path / f"{name}.json"
    f.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    with pytest.raises(ScenarioFileError) as err:
        load_scenario(f)
    assert err.value.file == str(f)
    assert err.value.path == path
    assert needle in err.value.message
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{f}: {path}: ")


# Where the new steps and settings do belong: the rejections above are about the place.
GOOD_WORK = [
    ("body-dispatches-and-appends", _with(agents=[{"id": "a"}], tools=[{"name": "t", "body": [
        {"do": "dispatch", "event": "fs/edit-intent", "target": {"path": "a.txt"}, "catch": True},
        {"do": "append", "data": {"todos": [{"content": "x", "status": "in_progress"}]}},
        {"do": "return", "value": 1}]}])),
    ("unscoped-intent-listener", _with(listeners=[{"id": "l", "event": "fs/write-intent", "prepend": True,
                                                   "script": [{"do": "next"}, {"do": "return-next"}]}])),
    ("define-presenter-without-viewer", _with(
        agents=[{"id": "a"}], tools=[{"name": "t", "define": True, "presentCall": [{"do": "return", "value": 1}]}],
        run={"kind": "loop", "agent": "a", "blocks": [{"id": "A1", "name": "t"}]})),
    ("raw-presenter-with-viewer", _with(
        agents=[{"id": "a"}], tools=[{"name": "t", "presentResult": [{"do": "observe", "what": "result"}]}],
        run={"kind": "loop", "agent": "a", "present": True, "blocks": [{"id": "A1", "name": "t"}]})),
]


@pytest.mark.parametrize("name,doc", GOOD_WORK, ids=[g[0] for g in GOOD_WORK])
def test_new_steps_accepted_where_they_belong(tmp_path, name, doc):
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps(doc))
    load_scenario(f)


def test_cli_exit_2_one_line(tmp_path, capsys):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(_with(guards=[{"id": "g", "scope": "ghost"}])))
    assert main(["run", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {f}: $.guards[0].scope: unknown agent 'ghost'"]


def test_cli_missing_file(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_scenario_that_never_settles(tmp_path, capsys):
    doc = _with(tools=[{"name": "t", "body": [{"do": "await-signal"}]}])
    f = tmp_path / "hang.json"
    f.write_text(json.dumps(doc))
    assert main(["run", str(f)]) == 2
    assert "never settles" in capsys.readouterr().err


def test_cli_prints_trace_as_a_process(tmp_path):
    f = tmp_path / "ok.json"
    f.write_text(json.dumps(GOOD))
    out = subprocess.run([sys.executable, "-m", "dsh_conformance.oracle", "run", str(f)], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["$format"] == "dsh-conformance/trace/v1"
    assert doc["results"][0]["result"]["isError"] is False
