"""The comparison's own rules: which differences are divergences, by profile."""

from __future__ import annotations

from dsh_conformance.judge.agreement import agree

from dsh_conformance.judge.lanes import events_for

from dsh_conformance.judge.compare import first_divergence
from dsh_conformance.oracle import texts
from dsh_conformance.kit.trace import Event, Trace


def test_refused_writes_agree_whatever_the_engines_wording():
    # The TypeError of a refused write is worded by the engine (spec section 1).
    assert agree("Cannot create property 'x' on a primitive", "Cannot create property 'x' on string 'c1'", True)
    assert not agree("Cannot create property 'x' on a primitive", "x is not allowed", True)


def test_a_circular_structure_message_keeps_only_the_engines_first_line_fixed():
    # V8's JSON.stringify says where the circle closes after the fixed sentence (case
    # approval-outcome-circular); another wording of the sentence is a divergence.
    v8 = ("Converting circular structure to JSON\n    --> starting at object with constructor 'Object'\n"
          "    --- property 'self' closes the circle")
    assert agree("Converting circular structure to JSON", v8, True)
    assert agree("Error: Converting circular structure to JSON", "Error: " + v8, True)
    assert not agree("Converting circular structure to JSON", "converting circular structure to json", True)
    assert not agree("Converting circular structure to JSON", "Do not know how to serialize a BigInt", True)


def test_core_masks_messages_and_reference_compares_them():
    e, a = {"isError": True, "error": {"message": "no"}}, {"isError": True, "error": {"message": "nope"}}
    assert agree(e, a, False) and not agree(e, a, True)


def _warned(*warnings: str) -> Trace:
    return Trace(warnings=list(warnings))


def test_observer_warnings_compare_their_message_as_a_failure_message():
    expected = _warned(texts.observer_failed("t1", "c1", "Cannot create property 'x' on a primitive"))
    same_head = _warned(texts.observer_failed("t1", "c1", "Cannot create property 'x' on string 'c1'"))
    other_call = _warned(texts.observer_failed("t1", "c2", "Cannot create property 'x' on string 'c1'"))
    other_message = _warned(texts.observer_failed("t1", "c1", "boom"))
    assert first_divergence(expected, same_head, {"core", "reference"}) is None
    for actual in (other_call, other_message, _warned()):
        d = first_divergence(expected, actual, {"core", "reference"})
        assert d is not None and d.where == "warnings" and d.rules == ["P101"]
    assert first_divergence(expected, other_message, {"core"}) is None  # core reads no warning texts


def test_a_bodys_session_events_are_compared_under_reference():
    t = Trace(events=[Event(agent="a", seq=1, type="todo/write", data={"todos": []})])
    assert events_for(t, {"reference"}) and not events_for(t, {"core", "loop"})
    lost = first_divergence(t, Trace(), {"reference"})
    assert lost is not None and lost.where.startswith("events") and "P71" in lost.rules


def _approval_trace(order: list[tuple[str, str, str | None, object]]) -> Trace:
    from dsh_conformance.kit.trace import Observation
    return Trace(observations=[Observation(call="c1", stage=s, what=w, who=who, value=v) for s, w, who, v in order])


def test_an_abandoned_answer_may_settle_after_the_cancelled_outcome():
    # P43.5: the answerer (L5) aborted the request signal while answering; the service
    # settled as cancelled, and where the answerer's own return falls is the scheduler's.
    answered_first = _approval_trace([
        ("approval", "request", None, None), ("approval", "call", "L5", None), ("approval", "return", "L5", "allowed-once"),
        ("approval", "abandon", None, None), ("approval", "outcome", None, "cancelled"), ("post-execute", "start", None, None)])
    cancelled_first = _approval_trace([
        ("approval", "request", None, None), ("approval", "call", "L5", None), ("approval", "outcome", None, "cancelled"),
        ("post-execute", "start", None, None), ("approval", "return", "L5", "allowed-once")])
    assert first_divergence(answered_first, cancelled_first, {"core", "reference"}) is None
    # The answerer's own steps keep their order, and the pipeline's stages theirs.
    wrong_answer = _approval_trace([
        ("approval", "request", None, None), ("approval", "call", "L5", None), ("approval", "outcome", None, "cancelled"),
        ("post-execute", "start", None, None), ("approval", "return", "L5", "rejected")])
    d = first_divergence(answered_first, wrong_answer, {"core", "reference"})
    assert d is not None and d.where == "observations[c1 answerers][1]"


def test_an_answerer_that_answers_cancelled_was_not_abandoned():
    # Its steps keep their place: a divergence in them is found where it happens.
    said = _approval_trace([("approval", "request", None, None), ("approval", "call", "L5", None),
                            ("approval", "mutate", "L5", {"outcome": "failed"}), ("approval", "return", "L5", "cancelled"),
                            ("approval", "outcome", None, "cancelled"), ("post-execute", "start", None, "denied")])
    forged = _approval_trace([("approval", "request", None, None), ("approval", "call", "L5", None),
                              ("approval", "mutate", "L5", {"outcome": "applied"}), ("approval", "return", "L5", "cancelled"),
                              ("approval", "outcome", None, "cancelled"), ("post-execute", "start", None, "forged")])
    assert first_divergence(said, forged, {"core"}).where == "observations[c1][2]"


def test_an_answer_that_was_not_abandoned_keeps_its_place():
    answered = _approval_trace([("approval", "request", None, None), ("approval", "call", "L5", None),
                                ("approval", "return", "L5", "allowed-once"), ("approval", "outcome", None, "allowed-once")])
    late = _approval_trace([("approval", "request", None, None), ("approval", "call", "L5", None),
                            ("approval", "outcome", None, "allowed-once"), ("approval", "return", "L5", "allowed-once")])
    assert first_divergence(answered, late, {"core"}) is not None


def test_the_first_divergence_is_the_one_the_oracles_trace_reaches_first():
    # c2's pre-execute parts at trace position 2; c1's lane parts only at its end (position
    # 4: say, a projection of a tool that c2's body went on to unregister). Report c2.
    from dsh_conformance.kit.trace import Observation

    def trace(c2_decision: str, c1_tail: bool) -> Trace:
        obs = [Observation(call="c1", stage="pre-execute", what="start"),
               Observation(call="c2", stage="pre-execute", what="start"),
               Observation(call="c2", stage="pre-execute", what="end", value=c2_decision),
               Observation(call="c1", stage="result", what="start", value=1)]
        if c1_tail:
            obs.append(Observation(call="c1", stage="presentCall", what="call", who="t.presentCall"))
        return Trace(observations=obs)

    d = first_divergence(trace("deny", True), trace("allow", False), {"core"})
    assert d is not None and d.where == "observations[c2][1]"
    d = first_divergence(trace("deny", True), trace("deny", False), {"core"})
    assert d is not None and d.where == "observations[c1][2]" and d.actual is None


def test_an_extra_step_late_in_the_run_does_not_hide_an_earlier_cause():
    # The IUT let a guard rename the call (applied, where the oracle refuses), so a later
    # call's classifier ran that the oracle never ran: report the rename, not the classifier.
    from dsh_conformance.kit.trace import Observation

    def trace(outcome: str, extra: bool) -> Trace:
        obs = [Observation(call=None, stage="classify", what="call", who="t.isConcurrencySafe"),
               Observation(call="A1", stage="guards", what="mutate", who="G1", value={"outcome": outcome}),
               Observation(call="A1", stage="result", what="start", value=1)]
        if extra:
            obs.append(Observation(call=None, stage="classify", what="call", who="t.isConcurrencySafe"))
        return Trace(observations=obs)

    d = first_divergence(trace("failed", False), trace("applied", True), {"core"})
    assert d is not None and d.where == "observations[A1][0]"


def test_a_run_failure_repeating_an_implementation_defined_message_keeps_only_its_prefix():
    # P128 repeats the program's message; when that message is one the spec leaves to the
    # implementation (P63's nullish wrapper result, P84's feedback), only the prefix is fixed.
    for inner in (texts.NULLISH_WRAPPER_RESULT, texts.FEEDBACK_NOT_ARRAY):
        expected = f"code run failed (exception): {inner}"
        assert agree(expected, "code run failed (exception): Cannot read properties of undefined", exact=True)
        assert agree("Error: " + expected, "Error: code run failed (exception): x.map is not a function", exact=True)
        assert not agree(expected, "code run failed (program): Cannot read properties of undefined", exact=True)
        assert not agree(expected, "run failed: " + inner, exact=True)
    # Any other program message is compared whole.
    assert not agree("code run failed (exception): boom", "code run failed (exception): bang", exact=True)


def test_a_run_failure_quoting_an_implementation_defined_message_before_its_output_keeps_the_rest():
    # seed 229: the program printed before its awaited call failed with P63's nullish wrapper
    # result; rc.8's message for it is a TypeError's, and the captured output follows it
    out = texts.code_run_failed("exception", texts.NULLISH_WRAPPER_RESULT, ["two", "lines"])
    other = "code run failed (exception): Cannot read properties of undefined (reading 'isError')"
    assert agree(out, other + "\nCaptured output:\ntwo\nlines", exact=True)
    assert agree("Error: " + out, "Error: " + other + "\nCaptured output:\ntwo\nlines", exact=True)
    assert not agree(out, other + "\nCaptured output:\ntwo", exact=True)  # the output is fixed
    assert not agree(out, other.replace("exception", "program") + "\nCaptured output:\ntwo\nlines", exact=True)
    assert not agree(texts.code_run_failed("exception", "boom", ["x"]), texts.code_run_failed("exception", "bang", ["x"]),
                     exact=True)


def test_a_refused_write_quoted_by_a_run_failure_is_the_engines_wording():
    """A program's refused write repeated by run_code's failure (P128): which TypeError the
    engine raises is its own (assignment or defineProperty on a frozen object, seed 262
    prop-f4ace3a142ba: rc.8 says "Cannot define property error, ..."), while the run's head
    and the captured output after it stay exact."""
    out = texts.CAPTURED_OUTPUT + "line"
    e = "code run failed (exception): Cannot add property error, object is not extensible" + out
    assert agree(e, "code run failed (exception): Cannot define property error, object is not extensible" + out,
                 exact=True)
    assert not agree(e, "code run failed (exception): Cannot define property error, object is not extensible"
                     + texts.CAPTURED_OUTPUT + "other", exact=True)
    assert not agree(e, "code run failed (exception): Cannot define property error, object is not extensible",
                     exact=True)
    assert not agree(e, "code run failed (program): Cannot add property error, object is not extensible" + out,
                     exact=True)
    assert not agree(e, "code run failed (exception): boom" + out, exact=True)


def test_equal_items_of_other_types_are_not_taken_as_the_same_json():
    """The matcher's fast path (``==``, then the same marshal bytes or repr) takes two items
    as one only when they are the same JSON: ``True`` and ``1``, ``1`` and ``1.0``, ``-0.0``
    and ``0.0`` are equal in Python, and each pair goes to the comparison proper."""
    from dsh_conformance.judge.agreement import matcher
    from dsh_conformance.judge.same_json import same_json as _same_json

    for e, a in ((True, 1), (1, 1.0), (-0.0, 0.0), ({"v": [False]}, {"v": [0]}), ({"a": 1, "b": 2}, {"b": 2, "a": 1})):
        assert e == a and not _same_json(e, a)
    assert _same_json({"v": [1, "x", None, 2.5, {"k": True}]}, {"v": [1, "x", None, 2.5, {"k": True}]})

    class Odd(dict):  # a type marshal does not write: repr decides
        pass
    assert _same_json(Odd(v=1), Odd(v=1)) and not _same_json(Odd(v=1), Odd(v=True))
    same = matcher({"core", "reference"})
    item = {"stage": "execute", "what": "end", "who": None, "value": {"isError": False, "value": 1}}
    assert same(item, {**item, "value": {"isError": False, "value": 1}})
    assert not same(item, {**item, "value": {"isError": False, "value": True}})
