"""Loop side steps (conformance/strategies/loop_side.py): focused recipes drawn last in a loop
run. Over the default run's own draws they come after every drawn block, each recipe meets
the oracle branch it is there for, and the generated run alone kills the mutants that only
the corpus used to kill (P108's wait for in-flight dispatches, P111's FIFO order)."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_conformance.measuring import mutants
from dsh_conformance.measuring.mutate import run_mutants
from dsh_conformance.strategies.loop_side import ENTER_NOTHING, SIDE_TOOLS


@pytest.fixture(scope="module")
def loop_docs(default_draws: list[Any]) -> list[Any]:
    cases = default_draws
    return [c for c in cases if c.doc["run"]["kind"] == "loop"]


@pytest.fixture(scope="module")
def side_docs(loop_docs: list[Any]) -> list[Any]:
    return [c for c in loop_docs if any(b["name"] in SIDE_TOOLS for b in c.doc["run"]["blocks"])]


def _side(doc: dict[str, Any], tool: str | None = None) -> list[str]:
    return [b["id"] for b in doc["run"]["blocks"] if b["name"] in SIDE_TOOLS and (tool is None or b["name"] == tool)]


def _events(example: Any, kind: str) -> list[Any]:
    return [e for e in example.trace.events if e.type == kind]


def _result(example: Any, call: str) -> Any:
    return next((r.result for r in example.trace.results if r.callId == call), None)


def _ran(example: Any, call: str, who: str) -> bool:
    return any(o.call == call and o.stage == "body" and o.who == who for o in example.trace.observations)


def _refs(v: Any) -> set[str]:
    """The participants the steps inside ``v`` name (``ref``)."""
    if isinstance(v, list):
        return set().union(*map(_refs, v)) if v else set()
    if isinstance(v, dict):
        return ({v["ref"]} if isinstance(v.get("ref"), str) else set()) | _refs(list(v.values()))
    return set()


def _loop_end(example: Any) -> list[Any]:
    return [o.value for o in example.trace.observations if o.stage == "loop" and o.what == "end"]


def test_side_blocks_come_after_every_drawn_block_and_nothing_drawn_names_them(side_docs):
    assert len(side_docs) >= 20, len(side_docs)  # most loop draws of the default run
    for c in side_docs:
        ids = [b["id"] for b in c.doc["run"]["blocks"]]
        side = _side(c.doc)
        assert ids[-len(side):] == side, ids
        drawn = [t for t in c.doc["tools"] if t["name"] not in SIDE_TOOLS]
        assert not _refs(drawn) & set(SIDE_TOOLS), drawn  # no drawn step registers or unregisters them
        if "tp" in {b["name"] for b in c.doc["run"]["blocks"]}:  # a pool of two only where no drawn pool forms
            safe = {t["name"] for t in drawn if "concurrencySafe" in t}
            names = [b["name"] for b in c.doc["run"]["blocks"] if b["id"] not in side]
            assert not any(a in safe and b in safe for a, b in zip(names, names[1:]))
        else:
            assert c.doc["run"]["maxParallelToolCalls"] == 1


@pytest.mark.rules("P110", "P111")
def test_injections_and_contexts_enter_the_next_step_in_time_order(side_docs):
    seen = 0
    for c in side_docs:
        blocks = _side(c.doc, "tq")
        if not blocks or not _events(c, "step/start"):
            continue
        entered = [e.data["id"] for e in _events(c, "user/message") if e.data["id"].startswith("q")]
        queued = [q for b, order in zip(blocks, (["q1", "q2", "q3"], ["q5", "q4"])) if _ran(c, b, "tq") for q in order]
        if not queued or not entered:
            continue  # a drawn pre-step listener rewrote or rejected the step
        assert [q for q in entered if q in queued] == queued, (entered, queued)
        seen += 1
    assert seen >= 2, seen


@pytest.mark.rules("P106", "P110")
def test_a_concluded_step_whose_queue_pre_step_empties_ends_the_turn(side_docs):
    seen = 0
    for c in side_docs:
        blocks = _side(c.doc, "tc")
        step = next((l for l in c.doc.get("listeners", []) if l["id"] == "Lq-step"), None)
        if not blocks or _result(c, blocks[0]) is None or step["script"]["perInvocation"][0] != ENTER_NOTHING:
            continue
        asked = [o for o in c.trace.observations if o.who == "Lq-step" and o.what == "call"]
        if not asked or any(o.stage == "loop" and o.what == "throw" for o in c.trace.observations):
            continue  # the turn ended before the boundary, or a drawn pre-step listener threw
        assert _result(c, blocks[0])["concludesTurn"] is True
        assert "concluded" in _loop_end(c), _loop_end(c)
        steps = [e.data for e in _events(c, "step/start") if e.data["turn"] == 1]
        assert steps == [], steps  # the claimed context entered no step
        seen += 1
    assert seen >= 1, seen


@pytest.mark.rules("P108", "P113")
def test_a_commit_side_failure_waits_for_the_dispatch_in_flight(side_docs):
    seen = 0
    for c in side_docs:
        pool = _side(c.doc, "tp")
        if not pool or not any(o.stage == "loop" and o.what == "throw" for o in c.trace.observations):
            continue
        first, second, *rest = pool
        if not _ran(c, first, "tp"):
            continue  # the drawn blocks failed the turn first
        called = [e.data["callId"] for e in _events(c, "tool/call")]
        committed = {e.data["message"]["source"]["callId"] for e in _events(c, "tool/result")}
        assert first in committed and second in called and second not in committed
        assert not set(rest) & set(called)  # no further call starts
        assert any(o.call == second and o.what == "observe" for o in c.trace.observations)  # it settled
        seen += 1
    assert seen >= 1, seen


@pytest.mark.rules("P56")
def test_a_restriction_hides_an_ancestors_scoped_tool(side_docs):
    """P56 (revision 3): the ancestor's scoped definition runs for the loop agent unless a
    restriction on the chain denies the name; then it is hidden like the global one, and
    the call is an unknown tool. The recipe draws both."""
    hidden = plain = 0
    for c in side_docs:
        for b in _side(c.doc, "ta"):
            r = _result(c, b)
            if r is None:
                continue
            if any(o.call == b and o.what == "hide" for o in c.trace.observations):
                assert r["isError"] is True and r["error"].get("info", {}).get("code") == "UNKNOWN_TOOL", r
                assert not _ran(c, b, "ta@ancestor") and not _ran(c, b, "ta")
                hidden += 1
            elif _ran(c, b, "ta@ancestor"):
                assert r["isError"] is False and r["value"] == "scoped", r
                plain += 1
    assert hidden >= 1 and plain >= 1, (hidden, plain)


@pytest.mark.rules("P81", "P82")
def test_an_accepted_value_for_a_tool_gone_is_an_unknown_tool(side_docs):
    seen = 0
    for c in side_docs:
        for b in _side(c.doc, "tg"):
            r = _result(c, b)
            if r is None or not _ran(c, b, "tg"):
                continue
            assert r["isError"] is True and r["error"]["info"]["code"] == "UNKNOWN_TOOL", r
            seen += 1
    assert seen >= 1, seen


@pytest.mark.rules("P70", "P61")
def test_the_deadline_of_an_already_aborted_signal_never_launches_the_body(side_docs):
    seen = 0
    for c in side_docs:
        for b in _side(c.doc, "tt"):
            r = _result(c, b)
            if r is None or not any(o.call == b and o.who == "Lq-pre-execute" for o in c.trace.observations):
                continue
            assert not _ran(c, b, "tt")
            assert r["error"]["info"]["code"] == "ABORTED_BEFORE_DISPATCH", r
            seen += 1
    assert seen >= 1, seen


@pytest.mark.rules("P107")
def test_a_step_aborted_before_its_batch_gives_every_block_a_synthetic_pair(loop_docs):
    aborted = [c for c in loop_docs if c.doc["run"].get("aborted")]
    assert aborted
    for c in aborted:
        blocks = [b["id"] for b in c.doc["run"]["blocks"]]
        assert not c.trace.results  # no registry stage ran
        assert [e.data["message"]["source"]["callId"] for e in _events(c, "tool/result")] == blocks


P108_WAIT_SKIPPED = ("""    except Thrown:
        for task in list(in_flight.values()):  # P108: wait for in-flight dispatches to settle
            if not task.done:
                await task
        raise""", """    except Thrown:
        raise""")


def test_the_generated_run_alone_kills_the_loops_corpus_only_mutants(side_docs, tmp_path):
    source = mutants.module_source("loop.py")
    assert P108_WAIT_SKIPPED[0] in source  # the oracle's text this mutant changes
    no_wait = mutants.Mutant(id="test:p108-no-wait", kind="operator", module="loop.py", line=1, operator="test",
                             change="the loop fails the turn without waiting for in-flight dispatches",
                             rules=("P108",), theme="adjacency", mutated=source.replace(*P108_WAIT_SKIPPED))
    reversed_fifo = next(f for f in mutants.faults() if f.id == "fault:contexts-reversed")
    got = {m.id: a for m, a in run_mutants([no_wait, reversed_fifo], side_docs, 2, 10, 120, tmp_path)}
    assert got["test:p108-no-wait"]["status"] == "killed", got["test:p108-no-wait"]
    assert got["fault:contexts-reversed"]["status"] == "killed", got["fault:contexts-reversed"]
