"""The values participants hand across the pipeline's boundaries (spec sections 3.10, 3.11):
scalars, lossless JSON and its escapes, JS-only values, thrown values (P9), content arrays,
user messages, and the work a body does (intent waterfalls it dispatches, session events it
appends, P71). Also the abort-and-wait steps every role's terminals share."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import FS_INTENTS

from dsh_conformance.strategies.basics import S, UNDEF, err, message, text, weighted
from dsh_conformance.strategies.value_shapes import ERROR_SHAPES, getter_values, shared_values


ABORT_CALLER = {"do": "abort", "signal": "caller"}
# Waiting for the participant's signal settles only if that signal aborts. Whatever path
# an implementation takes (it may run a body the oracle never reaches), the signal a
# participant waits on is the caller's, one fused with it, or "s1", the one named signal a
# participant can put on the record before an approval request or inside the body: abort
# both, then wait. (Waits under a timeout deadline are the other kind; see body_terminals.)
ABORT_AND_WAIT = [ABORT_CALLER, {"do": "abort", "signal": "s1"}, {"do": "await-signal"}]


# Lone surrogates are lossless (3.10, 3.11): strings and keys hold them now and then.
_STRINGS = st.sampled_from(["a", "", "hello", "Ünïcödé", "x y", "0", "\udc00x", "\ud800"])
_KEYS = st.sampled_from(["a", "b", "x", "__proto__", "10", "2", "k\udbff"])

scalars: S = weighted(
    (2, st.integers(0, 3)),
    (1, st.none()),
    (1, st.booleans()),
    (1, _STRINGS),
    (1, st.sampled_from([1.5, -2.25, 1e21, 1e-7, -7, 2**53 + 2])),
)

lossless_values: S = st.recursive(
    scalars,
    lambda inner: weighted(
        (2, st.dictionaries(_KEYS, inner, max_size=3)),
        (1, st.lists(inner, max_size=3)),
        # escapes that are still lossless (3.11): a null-prototype object, a literal "$js" key
        (1, st.builds(lambda e: {"$js": "null-proto", "entries": e}, st.dictionaries(_KEYS, inner, max_size=2))),
        (1, st.builds(lambda v: {"$js": "object", "entries": {"$js": "literal", "a": v}}, inner)),
    ),
    max_leaves=5,
)
"""Lossless JSON (section 3.10), including the escapes that snapshot to plain objects."""

JS_ONLY: list[Any] = [
    UNDEF, {"$js": "NaN"}, {"$js": "Infinity"}, {"$js": "-Infinity"}, {"$js": "-0"},
    {"$js": "bigint", "value": "12345678901234567890"}, {"$js": "function", "name": "f"},
    {"$js": "symbol", "description": "s"}, {"$js": "date", "value": "2020-01-01T00:00:00.000Z"},
    {"$js": "instance", "class": "Map"}, {"$js": "instance", "class": "Uint8Array"},
    {"$js": "promise", "resolves": 1}, err("as data"),
    [1, {"$js": "hole"}], {"$js": "array", "items": [1], "extra": {"k": 1}},
    {"$js": "object", "entries": {"a": 1}, "symbolKeys": 1},
    {"$js": "object", "entries": {}, "hidden": {"h": 1}},
    {"a": {"$js": "cycle", "up": 1}}, [[{"$js": "cycle", "up": 2}]],
    {"a": 1, "b": {"$js": "getter-throws", "message": "getter boom"}},
    {"g": {"$js": "getter-throws", "thrown": {"$js": "error", "class": "RangeError", "message": "deep getter",
                                               "name": "DeepError", "code": "DEEP", "harness": True}}},
    {"a": {"$js": "NaN"}, "b": {"$js": "getter-throws", "message": "second offender"}},
    {"$js": "hostile"},
]

js_only_values: S = st.sampled_from(JS_ONLY)
"""Values JSON cannot carry, as tokens: none of them is lossless (some throw when read)."""

boundary_values: S = weighted(
    (4, lossless_values),
    (2, js_only_values),
    (1, st.builds(lambda a, b: {"ok": a, "bad": b}, lossless_values, js_only_values)),
    # read once per reach by the snapshot (P13): getters, and one object reached twice
    (1, getter_values(lossless_values)),
    (1, shared_values(lossless_values)),
)
"""What a participant hands across a snapshot boundary: mostly lossless, often not."""

THROWN: list[Any] = [
    err("boom"),
    err("bad type", "TypeError"),
    err("lone \udfff surrogate"),
    {"$js": "error", "class": "PolicyError", "message": "policy refused", "name": "PolicyError", "code": "POLICY",
     "harness": True},
    {"$js": "error", "class": "QuotaError", "message": "no name given", "code": "QUOTA", "harness": True},
    "a thrown string", 42, None, UNDEF, {"message": "plain object"}, {"message": 5}, ["a", "b"], {"x": 1},
    {"$js": "hostile"}, {"$js": "symbol", "description": "thrown"}, {"$js": "null-proto", "entries": {}},
    {"message": {"$js": "getter-throws", "message": "message getter"}}, {"$js": "bigint", "value": "7"},
    *ERROR_SHAPES,
]
# Non-Error objects whose message P9 reads: weighted up, one entry of many otherwise.
MESSAGE_OBJECTS: list[Any] = [{"message": "plain object"}, {"$js": "null-proto", "entries": {"message": "null-proto"}},
                              {"message": "has a name", "name": "Named"}, {"message": ""}]
thrown_values: S = weighted((5, st.sampled_from(THROWN)), (1, st.sampled_from(MESSAGE_OBJECTS)))
"""Thrown values: Errors, HarnessErrors (with and without a name), non-Error values, and
values whose inspection throws (P9)."""

contents: S = weighted(
    (3, st.builds(lambda t: [text(t)], _STRINGS)),
    (1, st.just([])),
    (1, st.just([text("a"), {"type": "image", "attachment": {"id": "img"}}])),
    (1, st.just([{"type": "text", "text": {"$js": "NaN"}}])),
    (1, st.just([{"type": "text", "text": {"$js": "getter-throws", "message": "content getter"}}])),
    (1, st.just({"$js": "undefined"})),
)
"""Content arrays, some of which fail materialization."""


# Scripts refer to the scenario's participants and calls through placeholders, resolved
# once the scenario is drawn: "#r<n>" is the n-th participant id (modulo their number),
# "#c<n>" the n-th call id. So every strategy below is built once and reused (hypothesis
# validates a strategy object on first use: building them per draw would dominate).
REF_SLOTS = 6
CALL_SLOTS = 3
MESSAGE_IDS = ("m1", "m2", "m3", "m4", "m5")

messages: S = weighted(
    (6, st.builds(message, st.sampled_from(MESSAGE_IDS))),
    (1, st.builds(lambda m: message(m, "ctx \ud800"), st.sampled_from(MESSAGE_IDS))),
    (1, st.builds(lambda m: {**message(m), "extra": {"$js": "NaN"}}, st.sampled_from(MESSAGE_IDS))),
)
"""User messages (contexts, injections); a few ids only, so that duplicates happen (P113)."""

context_lists: S = weighted((3, st.lists(messages, min_size=1, max_size=2)), (1, st.just([])))

# The body's own work (P71). Intent targets stay lossless: what a waterfall does with a
# target JSON cannot carry is nobody's rule.
fs_targets: S = weighted((3, st.none()), (1, st.just({"path": "a.txt", "content": "hello"})), (1, lossless_values))


def dispatch(event: str, target: Any = None, catch: bool = False) -> dict[str, Any]:
    """A body's ``dispatch`` step; the target defaults to the language's (``notes.txt``)."""
    step: dict[str, Any] = {"do": "dispatch", "event": event}
    if target is not None:
        step["target"] = target
    if catch:
        step["catch"] = True
    return step


dispatch_steps: S = st.builds(dispatch, st.sampled_from(FS_INTENTS), fs_targets, weighted((3, False), (1, True)))
"""A body dispatching an intent waterfall; a listener's throw is the body's, unless caught."""

TODO_STATUSES = ("pending", "in_progress", "completed")
todo_lists: S = st.lists(st.builds(lambda c, s: {"content": c, "status": s},
                                   st.sampled_from(["read the spec", "write the oracle", "", "Ünïcödé", "fix \udc00"]),
                                   st.sampled_from(TODO_STATUSES)), max_size=3)
append_steps: S = st.builds(lambda todos: {"do": "append", "type": "todo/write", "data": {"todos": todos}},
                            todo_lists)
"""A body appending ``todo/write`` to its call's agent session (a call without an agent:
the step throws)."""
