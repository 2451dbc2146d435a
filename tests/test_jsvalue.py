"""JavaScript semantics the pipeline leans on: ToString, message(x), info(x), snapshots."""

from __future__ import annotations

import pytest

from dsh_conformance.kit.jsvalue import (
    NotLossless,
    Thrown,
    info_of,
    is_lossless,
    json_text,
    message_of,
    number_to_string,
    snapshot,
    to_string,
)

U = {"$js": "undefined"}


@pytest.mark.parametrize("value,text", [
    (0, "0"), (-0.0, "0"), (1, "1"), (1.5, "1.5"), (-3.25, "-3.25"), (1e21, "1e+21"),
    (1e20, "100000000000000000000"), (1e-7, "1e-7"), (1e-6, "0.000001"), (0.1, "0.1"),
    (123456789012345678901234, "1.2345678901234569e+23"), (5e-324, "5e-324"), (2**53, "9007199254740992"),
    (1.7976931348623157e308, "1.7976931348623157e+308"), (float("nan"), "NaN"), (float("inf"), "Infinity"),
])
def test_number_to_string(value, text):
    assert number_to_string(value) == text


@pytest.mark.parametrize("value,text", [
    ("s", "s"), (None, "null"), (True, "true"), (U, "undefined"), ({"$js": "-0"}, "0"),
    ({"$js": "NaN"}, "NaN"), (["a", "b"], "a,b"), ([1, None, U, [2, 3]], "1,,,2,3"), ({}, "[object Object]"),
    ({"$js": "bigint", "value": "12"}, "12"), ({"$js": "error", "class": "TypeError", "message": "m"}, "TypeError: m"),
    ({"$js": "instance", "class": "Map"}, "[object Map]"), ({"$js": "promise", "resolves": 1}, "[object Promise]"),
])
def test_to_string(value, text):
    assert to_string(value) == text


@pytest.mark.parametrize("value", [{"$js": "symbol"}, {"$js": "null-proto", "entries": {}}, {"$js": "hostile"}])
def test_to_string_throws(value):
    with pytest.raises(Thrown):
        to_string(value)


@pytest.mark.rules("P9")
@pytest.mark.parametrize("thrown,message", [
    ({"$js": "error", "class": "Error", "message": "boom"}, "boom"),
    ({"message": "plain object"}, "plain object"),
    ({"message": 42}, "[object Object]"),
    ("text", "text"), (U, "undefined"), (None, "null"), (["a", "b"], "a,b"), (7, "7"),
    ({"$js": "hostile"}, "<unprintable thrown value>"),
    ({"$js": "symbol"}, "Symbol()"),  # String(x) describes a symbol
    ({"$js": "symbol", "description": "s"}, "Symbol(s)"),
    ([{"$js": "symbol"}], "<unprintable thrown value>"),  # joining an array converts with ToString
    ({"message": {"$js": "getter-throws", "message": "x"}}, "<unprintable thrown value>"),
    ({"$js": "object", "entries": {"message": "escaped"}}, "escaped"),
])
def test_message_of(thrown, message):
    assert message_of(thrown) == message


@pytest.mark.rules("P9")
def test_info_of():
    assert info_of({"$js": "error", "class": "X", "name": "ToolArgsError", "code": "C", "harness": True}) == \
        {"name": "ToolArgsError", "code": "C"}
    assert info_of({"$js": "error", "class": "MyError", "code": "C", "harness": True})["name"] == "MyError"
    assert info_of({"$js": "error", "class": "Error", "message": "m"}) is None
    assert info_of({"name": "X", "code": "C"}) is None


NOT_LOSSLESS = [
    U, {"$js": "NaN"}, {"$js": "Infinity"}, {"$js": "-Infinity"}, {"$js": "-0"}, -0.0,
    {"$js": "bigint", "value": "1"}, {"$js": "function"}, {"$js": "symbol"}, {"$js": "date", "value": "x"},
    {"$js": "instance", "class": "Map"}, {"$js": "cycle", "up": 1}, [1, {"$js": "hole"}],
    {"$js": "array", "items": [1], "extra": {"x": 1}}, {"$js": "object", "entries": {}, "symbolKeys": 1},
    {"$js": "object", "entries": {}, "hidden": {"h": 1}}, {"$js": "error", "message": "m"},
    {"$js": "promise", "resolves": 1}, {"a": [U]},
]


@pytest.mark.rules("P12")
@pytest.mark.parametrize("value", NOT_LOSSLESS)
def test_not_lossless(value):
    with pytest.raises(NotLossless):
        snapshot(value)
    assert not is_lossless(value)


@pytest.mark.rules("P13")
def test_snapshot_details():
    assert snapshot({"$js": "null-proto", "entries": {"a": 1}}) == {"a": 1}
    escaped = {"$js": "object", "entries": {"$js": "data"}}
    assert snapshot(escaped) == escaped  # a literal "$js" key stays escaped on the wire
    assert list(snapshot({"b": 1, "2": 0, "a": 2, "1": 0})) == ["1", "2", "b", "a"]
    assert snapshot({"__proto__": 1}) == {"__proto__": 1}
    assert snapshot(1.0) == 1 and isinstance(snapshot(1.0), int)
    deep: object = 1
    for _ in range(150):
        deep = [deep]
    snapshot(deep)  # the spec puts no bound on depth; the oracle's is the interpreter's (README)


@pytest.mark.rules("P13")
def test_first_offending_item_decides():
    getter = {"$js": "getter-throws", "message": "first"}
    with pytest.raises(Thrown) as t:
        snapshot({"a": getter, "b": {"$js": "NaN"}})
    assert t.value.value["message"] == "first"
    with pytest.raises(NotLossless):
        snapshot({"a": {"$js": "NaN"}, "b": getter})
    with pytest.raises(Thrown) as t2:
        snapshot({"a": {"$js": "getter-throws", "thrown": "raw"}})
    assert t2.value.value == "raw"


def test_json_text():
    assert json_text({"b": 1, "1": [1.0, None, U], "a": U}) == '{"1":[1,null,null],"b":1}'
    assert json_text(U) is None
    assert json_text({"$js": "NaN"}) == "null"
    with pytest.raises(Thrown):
        json_text({"$js": "bigint", "value": "1"})


def test_number_to_string_agrees_with_node():
    """Number::toString against a real JavaScript engine, over many random doubles."""
    import json
    import random
    import shutil
    import struct
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    rng = random.Random(20261130)
    values = [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(3000)]
    values += [rng.uniform(-1e6, 1e6) for _ in range(500)] + [float(rng.randint(-10**25, 10**25)) for _ in range(500)]
    values = [v for v in values if v == v and abs(v) != float("inf")]
    out = subprocess.run([node, "-e", "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>"
                          "console.log(JSON.stringify(JSON.parse(s).map(String))))"],
                         input=json.dumps(values), capture_output=True, text=True, check=True)
    assert [number_to_string(v) for v in values] == json.loads(out.stdout)
