"""Strategies for the value shapes that refer beyond themselves or carry more than a message
(``kit.realm``, ``kit.value_refs``, spec 3.11): getters that count their reads, give
another value on each, turn hostile or change the registry (P13, P23, P26); shared
references, one object reached twice (P13); Errors with a cause and with a message, name or
code that throws when read or is not a string (P9).

A getter token names one of a few fixed ids; ``getter_declarations`` declares, for a drawn
document, every getter it names with a drawn script. Getters stand only where the spec
fixes how often a value is read: inside values a snapshot takes (arguments, a body's value,
a replacement value, P13) and as input fields (P23), never as a decision's or a thrown
value's own fields, whose number of reads no rule fixes.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from dsh_conformance.kit.jsvalue import token
from dsh_conformance.kit.value_refs import has_refs, walk

from dsh_conformance.strategies.basics import S

NAME_GETTER, ARGS_GETTER, ROOT_GETTER = "g-name", "g-args", "g-root"  # input fields (P23)


def getter(gid: str) -> dict[str, str]:
    return {"$js": "getter", "id": gid}


def _ret(v: Any) -> list[dict[str, Any]]:
    return [{"do": "return", "value": v}]


def _two_reads(a: Any, b: Any) -> dict[str, Any]:
    """A getter that gives ``a`` on its first read and ``b`` on every later one."""
    return {"perInvocation": [_ret(a), _ret(b)]}


_SMALL = st.sampled_from([1, "read", None, True, "\udc00"])

value_getter_scripts: S = st.one_of(
    st.builds(_ret, _SMALL),
    st.builds(_two_reads, _SMALL, _SMALL),
    st.just(_ret({"$js": "hostile"})),  # the snapshot inspects what the read gave, and that throws
    st.just([{"do": "throw", "value": {"$js": "error", "class": "Error", "message": "getter failed"}}]),
    st.builds(lambda n, v: [{"do": "unregister", "ref": f"#r{n}"}, {"do": "return", "value": v}], st.integers(0, 5), _SMALL),
    st.builds(lambda n, v: [{"do": "register", "ref": f"#r{n}"}, {"do": "return", "value": v}], st.integers(0, 5), _SMALL),
)
"""What a getter inside a value does when read (P13: once per reach; P26: a registry change
made by an arguments getter changes no captured finalizer)."""


def input_getter_scripts(field: str) -> S:
    """A getter that stands for an input field: a later read would give something else
    (P23: entry reads it once)."""
    if field == "name":
        return st.builds(_two_reads, st.sampled_from(["t1", "t2", "ghost"]), st.sampled_from(["t2", "ghost"]))
    if field == "rootCallId":
        return st.builds(_two_reads, st.sampled_from(["root-1", {"$js": "undefined"}]), st.just("root-late"))
    return st.builds(_two_reads, st.sampled_from([{"x": 1}, {}, {"x": {"$js": "NaN"}}]), st.just({"x": 2}))


def shared(sid: str, value: Any) -> dict[str, Any]:
    return {"$js": "shared", "id": sid, "value": value}


def again(sid: str) -> dict[str, str]:
    return {"$js": "shared", "id": sid}


def shared_values(inner: S) -> S:
    """One object reached twice or three times (a DAG, not a cycle), sometimes holding a
    getter, which is then read once per reach."""
    container = st.one_of(st.builds(lambda v: {"k": v}, inner), st.builds(lambda v: [v, 1], inner),
                          st.just({"k": getter("g1")}))
    return st.one_of(
        st.builds(lambda c: {"a": shared("s1", c), "b": again("s1")}, container),
        st.builds(lambda c: [shared("s1", c), {"nested": again("s1")}, again("s1")], container),
    )


def getter_values(inner: S) -> S:
    """Values whose properties (or slots) are getters."""
    return st.one_of(
        st.builds(lambda v: {"a": v, "g": getter("g1")}, inner),
        st.just([getter("g1"), getter("g2")]),
        st.just({"g": getter("g2"), "again": getter("g2")}),
    )


ERROR_SHAPES: list[Any] = [
    {"$js": "error", "class": "Error", "message": "outer", "cause": {"$js": "error", "class": "Error", "message": "inner"}},
    {"$js": "error", "class": "QuotaError", "message": "with a cause", "code": "QUOTA", "harness": True, "cause": {"why": 1}},
    {"$js": "error", "class": "Error", "message": 5},
    {"$js": "error", "class": "Error", "message": {"a": 1}},
    {"$js": "error", "class": "Error", "message": {"$js": "getter-throws", "message": "message getter"}},
    {"$js": "error", "class": "PolicyError", "message": "policy", "code": "POLICY", "harness": True,
     "name": {"$js": "getter-throws", "message": "name getter"}},
    {"$js": "error", "class": "PolicyError", "message": "policy", "harness": True,
     "code": {"$js": "getter-throws", "message": "code getter"}},
    {"$js": "error", "class": "PolicyError", "message": "policy", "code": 7, "harness": True, "name": ["n"]},
    ["a", {"$js": "error", "class": "Error", "message": "m", "name": {"$js": "getter-throws", "message": "no name"}}],
]
"""Thrown Errors with more shape (P9): a cause; a message that is a number, an object
or a throwing getter; a HarnessError whose name or code getter throws or is not a string.
Left out: a symbol message (``"Error: " + m`` throws, and the spec does not say what the
failure is then) and an ``undefined`` one (thrown by a finalizer, its canonical failure
cannot be materialized, which P95 and P96 do not cover; the corpus has it thrown by a body)."""


def getter_ids(doc: Any) -> list[str]:
    """The getter ids ``doc`` names, in first-seen order (values and input fields)."""
    seen: list[str] = []

    def visit(v: Any, _path: str, _open: tuple[str, ...]) -> None:
        if token(v) == "getter" and v.get("id") not in seen:
            seen.append(str(v.get("id")))
    if has_refs(doc):  # most documents have no getter or shared token: no walk then
        walk(doc, "$", visit)
    for call in doc.get("run", {}).get("calls", []):
        for gid in call.get("getters", {}).values():
            if gid not in seen:
                seen.append(gid)
    return seen


@st.composite
def getter_declarations(draw: Any, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A declaration, with a drawn script, for every getter ``doc`` names."""
    fields = {gid: field for call in doc.get("run", {}).get("calls", []) for field, gid in call.get("getters", {}).items()}
    out = []
    for gid in getter_ids(doc):
        script = draw(input_getter_scripts(fields[gid]) if gid in fields else value_getter_scripts)
        out.append({"id": gid, "script": script})
    return out


def unique_shared_ids(doc: dict[str, Any]) -> None:
    """Give every shared definition in ``doc`` an id of its own (``s1``, ``s2``, ...), its
    references following it, in place: a shared id names one object for the whole scenario
    (``kit.scenario`` refuses two different definitions of one id)."""
    renamed: dict[str, str] = {}
    count = 0
    if not has_refs(doc):
        return

    def visit(v: Any, _path: str, _open: tuple[str, ...]) -> None:
        nonlocal count
        if token(v) != "shared":
            return
        old = str(v.get("id"))
        if "value" in v:
            count += 1
            renamed[old] = v["id"] = f"s{count}"
        elif old in renamed:
            v["id"] = renamed[old]
    walk(doc, "$", visit)
