"""The Node adapter that drives the real DeepSeek Harness package (tools/dsh-adapter):
its protocol, its translation of scenarios (real traces of a handful of corpus cases are
pinned), its determinism, and how it answers what it cannot run.

Skipped when node or the adapter's node_modules (``npm ci`` in tools/dsh-adapter) is
missing. The adapter is driven over the IUT protocol directly, with a small client here.
"""

from __future__ import annotations

import json
import os
import random
import selectors
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dsh_conformance.spec.corpus import CASES
from dsh_conformance.resources import EXPECTATIONS
from dsh_conformance.running.expectations import load_expectations
from dsh_conformance.kit import jsontext
from dsh_conformance.iut.protocol import Errored, Skipped, Traced, parse_answer, parse_started

from .hang_guards import SLICE, watch

ROOT = Path(__file__).resolve().parent.parent
ADAPTER_DIR = ROOT / "tools" / "dsh-adapter"
ADAPTER = ADAPTER_DIR / "adapter.mjs"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(not (ADAPTER_DIR / "node_modules" / "@deepseek-ai" / "dsh-tools").is_dir(),
                       reason="the adapter is not installed: run `npm ci` in tools/dsh-adapter"),
]

TIMEOUT = 60.0  # seconds on an idle machine: a hang guard by progress (tests/hang_guards.py)


class Client:
    """A minimal IUT protocol client: one JSON object a line each way."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        assert NODE is not None
        self.proc = subprocess.Popen([NODE, str(ADAPTER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1,
                                     env={**os.environ, **env} if env else None)
        self.sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.seq = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(jsontext.dumps(message) + "\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        guard = watch(self.proc, TIMEOUT)
        while not self.sel.select(SLICE) and self.proc.poll() is None:
            if why := guard.stalled():
                raise AssertionError(f"the adapter did not answer: {why}")
        line = self.proc.stdout.readline()
        assert line, f"the adapter closed its output; stderr: {self.stderr()}"
        doc = json.loads(line)
        assert isinstance(doc, dict)
        return doc

    def start(self) -> dict[str, Any]:
        self.send({"cmd": "start", "version": 1})
        return self.receive()

    def run(self, scenario: dict[str, Any]) -> dict[str, Any]:
        self.seq += 1
        self.send({"cmd": "run", "seq": self.seq, "scenario": scenario})
        answer = self.receive()
        assert answer.get("seq") == self.seq
        return answer

    def stop(self) -> int:
        self.send({"cmd": "stop"})
        return self.proc.wait(timeout=TIMEOUT)

    def stderr(self) -> str:
        self.proc.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="module")
def adapter():
    client = Client()
    client.start()
    yield client
    client.close()


def case(name: str) -> dict[str, Any]:
    return json.loads((CASES / f"{name}.json").read_text(encoding="utf-8"))


def traced(answer: dict[str, Any]) -> Traced:
    parsed = parse_answer(answer)
    assert isinstance(parsed, Traced), answer
    return parsed


# --------------------------------------------------------------------------- protocol

def test_handshake_names_the_real_package_and_its_profiles():
    client = Client()
    try:
        started = parse_started(client.start())
        assert started.version == 1
        assert started.implementation.name == "@deepseek-ai/dsh-tools"
        assert started.implementation.version == "0.1.0-rc.8"
        assert started.implementation.language == "javascript"
        assert set(started.profiles) == {"core", "reference", "loop", "code-mode"}
        assert client.stop() == 0
    finally:
        client.close()


def test_closing_stdin_ends_the_adapter_cleanly():
    client = Client()
    try:
        client.start()
        assert client.proc.stdin is not None
        client.proc.stdin.close()
        assert client.proc.wait(timeout=TIMEOUT) == 0
    finally:
        client.close()


# --------------------------------------------------------------------------- pinned traces

# Diverse on purpose: direct calls through every stage, the shipped approval service, guard
# layers along a scope chain, a retrying wrapper on the shared cursor, post-execute blocks,
# JS-only argument values, rc.8's applied identity writes (a known divergence), and the
# agent loop (contexts after the batch; a parallel pool whose bodies finish out of order).
PINNED = [
    "stage-order-full-pipeline",
    "approval-shipped-allowed-once",
    "guard-order-global-then-scope-chain",
    "execute-retry-shared-cursor",
    "post-block-derives-message-from-feedback",
    "entry-args-class-instances-not-lossless",
    "identity-writes-fail-in-every-participant",
    "loop-contexts-after-batch",
    "loop-parallel-pool-ordered-stages",
]


@pytest.mark.parametrize("name", PINNED)
def test_real_trace_is_pinned(adapter, name, snapshot):
    assert traced(adapter.run(case(name))).trace.dumps() == snapshot


# --------------------------------------------------------------------------- determinism

@pytest.mark.parametrize("name", ["loop-parallel-pool-ordered-stages", "timeout-policy-fires",
                                  "approval-shipped-cancelled-by-signal", "result-observer-failures-contained"])
def test_same_scenario_same_answer(adapter, name):
    first = adapter.run(case(name))
    second = adapter.run(case(name))
    first.pop("seq")
    second.pop("seq")
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_same_answer_in_a_fresh_process(adapter):
    here = adapter.run(case("loop-pool-max-parallel"))
    other = Client()
    try:
        other.start()
        there = other.run(case("loop-pool-max-parallel"))
    finally:
        other.close()
    assert traced(here).trace.dumps() == traced(there).trace.dumps()


def test_reused_deployments_give_the_answers_of_fresh_ones():
    """The adapter keeps a loaded deployment of the packages per configuration and runs
    each scenario in a fork of it (lib/deployment.mjs). Whatever ran before on it, every
    corpus case gets the answer a deployment loaded for it alone gives: the corpus is run
    fresh in order, and on reused deployments in a shuffled order."""
    docs = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(CASES.glob("*.json"))}
    answers: dict[str, dict[str, dict[str, Any]]] = {}
    order = list(docs)
    for how, env, names in (("fresh", {"DSH_ADAPTER_FRESH": "1"}, order),
                            ("reused", None, random.Random(13).sample(order, len(order)))):
        client = Client(env)
        try:
            client.start()
            for name in names:
                answer = client.run(docs[name])
                answer.pop("seq")
                answer.pop("details", None)  # an errored answer's stack
                answers.setdefault(name, {})[how] = answer
        finally:
            client.close()
    differ = sorted(name for name, both in answers.items() if both["fresh"] != both["reused"])
    assert differ == []


def test_every_corpus_case_is_answered_with_a_trace_or_a_skip(adapter):
    # The only errors allowed are the ones rc.8's expectations list or derive from a listed
    # departure (a run that never settles under it, running.explained.explained_error).
    from dsh_conformance.oracle import parse_scenario
    from dsh_conformance.running.explained import explained_error

    expectations = load_expectations(EXPECTATIONS / "dsh-tools-0.1.0-rc.8.yaml")
    unexpected = {}
    for path in sorted(CASES.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        answer = parse_answer(adapter.run(doc))
        if isinstance(answer, Errored) and path.stem not in expectations.errors and explained_error(
                expectations, parse_scenario(doc), answer.message) is None:
            unexpected[path.stem] = answer.message
    assert unexpected == {}


# --------------------------------------------------------------------------- skip and error

@pytest.mark.rules("P117", "P122", "P128")
def test_code_mode_runs_on_the_real_bridge(adapter):
    """A program runs on the real run_code bridge through the scripted ctx.codeRuntime: its
    bindings, its sub-call, the bridge's dispatch events and run_code's rendered value."""
    answer = parse_answer(adapter.run(case("code-dispatch-logged-with-an-agent")))
    assert not isinstance(answer, Skipped), answer
    trace = answer.trace
    starts = [o.value for o in trace.observations if o.stage == "program" and o.what == "start" and o.call == "c1"]
    assert starts == [{"bindings": ["bad", "t"]}]
    assert [e.type for e in trace.events][:2] == ["tool/code-dispatch-start", "tool/code-dispatch"]
    assert {r.callId for r in trace.results} >= {"c1", "c1:code:1", "c1:code:2", "c2"}


def test_unknown_scenario_field_is_skipped_not_ignored(adapter):
    scenario = case("pre-deny-skips-body")
    scenario["listeners"][0]["priority"] = 3
    answer = parse_answer(adapter.run(scenario))
    assert isinstance(answer, Skipped)
    assert "$.listeners[0].priority" in answer.reason


def test_refused_definition_is_skipped(adapter):
    # rc.8 refuses an output schema that requires an undeclared property: registration-time
    # validation is out of the spec's scope (section 1.3), so the case cannot be run there.
    refused = {
        "id": "refused-schema",
        "tools": [{"name": "calc", "output": {"schema": {"type": "object", "required": ["x"]}},
                   "body": [{"do": "return", "value": {"x": 0}}]}],
        "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "calc"}]},
    }
    answer = parse_answer(adapter.run(refused))
    assert isinstance(answer, Skipped)
    assert "refuses the registration" in answer.reason


def test_broken_scenario_is_errored_and_the_adapter_goes_on(adapter):
    broken = {
        "id": "broken",
        "tools": [{"name": "echo"}],
        # A guard is synchronous: a `next` step makes no sense there.
        "guards": [{"id": "G", "script": [{"do": "next"}]}],
        "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "echo"}]},
    }
    answer = parse_answer(adapter.run(broken))
    assert isinstance(answer, Errored)
    assert "next" in answer.message
    assert "stack" in answer.details
    traced(adapter.run(case("pre-deny-skips-body")))


def test_scenario_that_never_settles_is_errored_and_the_adapter_goes_on(adapter):
    stuck = {
        "id": "stuck",
        "tools": [{"name": "wait", "body": [{"do": "await-signal"}, {"do": "return", "value": 1}]}],
        "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "wait"}]},
    }
    answer = parse_answer(adapter.run(stuck))
    assert isinstance(answer, Errored)
    assert "never settles" in answer.message
    traced(adapter.run(case("pre-deny-skips-body")))


def test_virtual_time_does_not_wait_for_the_wall_clock(adapter):
    slow = {
        "id": "slow",
        "tools": [{"name": "nap", "body": [{"do": "sleep", "ms": 3_600_000}, {"do": "return", "value": "rested"}]}],
        "run": {"kind": "direct", "calls": [{"callId": "c1", "name": "nap"}]},
    }
    result = traced(adapter.run(slow)).trace.results[0]
    assert result.result["value"] == "rested"
