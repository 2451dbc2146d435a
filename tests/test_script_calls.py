"""Script calls (conformance/strategies/script_calls.py): calls of a tool of their own drawn
last in a direct run. Over the default run's own draws they come after every drawn call,
and each situation does in the oracle's trace what it is there for."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_conformance.strategies.script_calls import EARLY_TIMER, INPUT_WRITES, KEPT, KEPT_SIGNAL, SCRIPT_TOOL


@pytest.fixture(scope="module")
def script_docs(default_draws: list[Any]) -> list[Any]:
    cases = default_draws
    return [c for c in cases if any(t.get("id") == SCRIPT_TOOL for t in c.doc["tools"])]


def _calls(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in doc["run"]["calls"] if c["name"] == SCRIPT_TOOL]


def _obs(example: Any, call: str, stage: str, who: str | None = None, what: str | None = None) -> list[Any]:
    return [o for o in example.trace.observations if o.call == call and o.stage == stage
            and (who is None or o.who == who) and (what is None or o.what == what)]


def _result(example: Any, call: str) -> Any:
    return next(r.result for r in example.trace.results if r.callId == call)


def _by_call(example: Any, lid: str) -> dict[str, Any]:
    listener = next((l for l in example.doc.get("listeners", []) if l["id"] == lid), None)
    return {} if listener is None else listener["script"]["byCall"]


def test_script_calls_come_last_and_nothing_drawn_names_them(script_docs):
    assert len(script_docs) >= 8, len(script_docs)
    for c in script_docs:
        ids = [x["callId"] for x in c.doc["run"]["calls"]]
        ours = [x["callId"] for x in _calls(c.doc)]
        assert ours and ids[-len(ours):] == ours, ids
        drawn = [t for t in c.doc["tools"] if t.get("id") != SCRIPT_TOOL]
        assert f'"{SCRIPT_TOOL}"' not in str(drawn).replace("'", '"')


@pytest.mark.rules("P60", "P63", "P23")
def test_a_restored_signal_is_the_records_own_and_a_kept_result_is_handed_back(script_docs):
    seen = 0
    for c in script_docs:
        for call, steps in _by_call(c, "Ls-exec").items():
            if {"do": "set-signal", "signal": "restore"} not in steps:
                continue
            record = next(o.value for o in _obs(c, call, "execute", "Ls-exec", "observe"))
            assert record["signal"]["is"] != "ss"  # P60: restored, not the replacement
            assert record["rootCallId"] == "root-from-a-getter"  # P23: the getter, read at entry
            later = f"s{int(call[1:]) + 1}"
            assert _by_call(c, "Ls-exec")[later][-1] == {"do": "return-kept", "name": KEPT}
            assert _result(c, later) == _result(c, call)  # P63: the kept result, not the later body's
            seen += 1
    assert seen >= 3, seen


@pytest.mark.rules("P39")
def test_an_approval_writes_the_request_made_for_its_ask(script_docs):
    seen = 0
    for c in script_docs:
        for call in (x["callId"] for x in _calls(c.doc) if x.get("agent")):
            observed = [o.value for o in c.trace.observations if o.call == call and o.stage == "approval"
                        and o.what == "observe"]
            if not observed:
                continue  # no service answered (P37, P38: denied with the reason)
            request = observed[0]
            assert request["reason"] == "rewritten by the approval" and "toolName" not in request, request
            assert "custom" not in request  # a write to the record does not land in the request
            seen += 1
    assert seen >= 2, seen


@pytest.mark.rules("P25", "P84")
def test_a_define_through_a_number_is_the_bodys_throw_and_a_non_array_feedback_throws(script_docs):
    seen = 0
    for c in script_docs:
        for call in _by_call(c, "Ls-post"):
            thrown = _obs(c, call, "body", SCRIPT_TOOL, "throw")
            assert thrown and thrown[0].value["message"] == "Object.defineProperty called on non-object"
            assert _result(c, call)["error"]["message"] == "block feedback is not an array"
            seen += 1
    assert seen >= 2, seen


@pytest.mark.rules("P29", "P35", "P58")
def test_early_ends_and_awaited_settlements(script_docs):
    early = settled = 0
    for c in script_docs:
        calls = _calls(c.doc)
        for i, call in enumerate(calls):
            if call.get("aborted"):
                assert _result(c, call["callId"])["error"]["info"]["code"] == "ABORTED_BEFORE_DISPATCH"
                timed = calls[i + 1]
                assert timed["abortAt"] == EARLY_TIMER
                assert _result(c, timed["callId"])["error"]["message"] == "kind read"  # P35: the getter's throw
                assert not _obs(c, timed["callId"], "body")  # the timer's call never ran its body
                slept = _result(c, calls[i + 2]["callId"])
                assert slept["isError"] is False  # the cancelled timer aborted nothing
                early += 1
        for call in calls:
            body = next(t for t in c.doc["tools"] if t.get("id") == SCRIPT_TOOL)["body"]["byCall"].get(call["callId"])
            if body and body[0].get("value") == {"$js": "hostile"}:
                assert _result(c, call["callId"])["error"]["message"] == "hostile value"
                settled += 1
    assert early >= 2 and settled >= 2, (early, settled)


@pytest.mark.rules("P60", "P61")
def test_kept_signals_are_looked_at_before_and_after_the_body_and_a_fusion_with_an_aborted_caller_aborts_at_launch(script_docs):
    launched = kept = 0
    for c in script_docs:
        for call, steps in _by_call(c, "Ls-exec").items():
            views = [o.value for o in _obs(c, call, "execute", "Ls-exec", "observe")]
            if {"do": "set-signal", "signal": "sf"} in steps:
                assert views == [{"kept": KEPT_SIGNAL}]  # nothing kept under the name: no signal
                assert _result(c, call)["error"]["info"]["code"] == "ABORTED_BEFORE_DISPATCH"
                assert not _obs(c, call, "body")  # the fusion was aborted at launch: the body never ran
                launched += 1
            elif {"do": "set-signal", "signal": "sk"} in steps:
                assert len(views) == 2 and all(v["kept"] == KEPT_SIGNAL for v in views)
                assert [v["signal"]["aborted"] for v in views] == [False, False]  # detached when the body settled
                kept += 1
    assert launched >= 2 and kept >= 2, (launched, kept)


@pytest.mark.rules("P23")
def test_writes_into_the_callers_input_reach_a_token_object_and_an_arrays_end_but_not_the_record(script_docs):
    seen = 0
    for c in script_docs:
        for call, steps in _by_call(c, "Ls-pre").items():
            if not any(isinstance(s, dict) and s.get("target") == "input.arguments.l.3" for s in steps):
                continue
            writes = _obs(c, call, "pre-execute", "Ls-pre", "mutate")
            assert [w.value["target"] for w in writes] == [s["target"] for s in INPUT_WRITES]
            args = next(o.value for o in _obs(c, call, "body", what="observe"))["args"]
            assert args == {"x": 1, "l": [1]}  # the record's arguments were snapshotted at entry
            seen += 1
    assert seen >= 2, seen
