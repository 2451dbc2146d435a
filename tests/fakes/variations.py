"""Allowed variations: for each part of an observation the catalog names (``contract.PARTS``),
a change that only that part's rules fix, made to a trace in wire form as a port that did it
would answer (issue 39 C). What a scripted participant itself returned or threw is the
scenario's, and stays as it is.

``VARIATIONS[part](trace)`` changes the trace in place and says whether anything changed.
A test holds the table against the catalog: every part has its variation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsh_conformance.oracle import texts
from profile_fake import _js_string

Visit = Callable[[dict[str, Any]], bool]
SYNTHETIC_TEXT = "Error: " + texts.ABORTED_BEFORE_DISPATCH  # the loop's synthetic result (P107): loop's


def _walk(v: Any, visit: Visit, want: Callable[[dict[str, Any]], bool]) -> bool:
    changed = False
    if isinstance(v, list):
        for x in v:
            changed = _walk(x, visit, want) or changed
    elif isinstance(v, dict):
        if want(v):
            changed = visit(v) or changed
        for x in list(v.values()):
            changed = _walk(x, visit, want) or changed
    return changed


def _authored(o: dict[str, Any]) -> bool:
    return o.get("who") is not None and o.get("what") in ("return", "throw")


def _is_result(v: dict[str, Any]) -> bool:
    return type(v.get("isError")) is bool and isinstance(v.get("content"), list)


def _on_results(trace: dict[str, Any], visit: Visit) -> bool:
    """``visit`` each result an observation, a final result or an event carries; not a Code
    Mode sub-call's, whose failure its binding's rejection repeats (P124, code-mode)."""
    changed = False
    for o in trace["observations"]:
        if not _authored(o) and ":code:" not in str(o.get("call")):
            changed = _walk(o.get("value"), visit, _is_result) or changed
    for r in trace.get("results") or []:
        if ":code:" not in str(r.get("callId")):
            changed = _walk(r, visit, _is_result) or changed
    return _walk(trace.get("events"), visit, _is_result) or changed


def _code_mode_text(t: Any) -> bool:
    """Code Mode's own texts (and the failures that carry them) are code-mode's (section 2)."""
    return isinstance(t, str) and t.removeprefix("Error: ").startswith(texts.CODE_MODE_PREFIXES)


def _failure_error(r: dict[str, Any]) -> dict[str, Any] | None:
    e = r.get("error")
    if r["isError"] is not True or not isinstance(e, dict) or _code_mode_text(e.get("message")):
        return None
    if isinstance(e.get("info"), dict) and e["info"].get("code") == "ABORTED_BEFORE_DISPATCH":
        return None  # the loop's synthetic result (P107): its text and info are loop's
    return e


def _message_text(r: dict[str, Any]) -> bool:
    e = _failure_error(r)
    if e is None or type(e.get("message")) is not str:
        return False
    e["message"] = e["message"] + " (said otherwise)"
    return True


def _message_rendered(r: dict[str, Any]) -> bool:
    e = _failure_error(r)
    if e is None or "message" not in e or type(e["message"]) is str:
        return False
    e["message"] = _js_string(e["message"])
    return True


def _content_text(r: dict[str, Any]) -> bool:
    changed = False
    if r["isError"] is True and ("error" not in r or _failure_error(r) is not None):  # an event's block has none
        for b in r["content"]:
            if isinstance(b, dict) and isinstance(b.get("text"), str) and b["text"].startswith("Error: ") \
                    and not _code_mode_text(b["text"]) and b["text"] != SYNTHETIC_TEXT:
                b["text"] = "Error - " + b["text"][len("Error: "):]
                changed = True
    return changed


def _info(r: dict[str, Any]) -> bool:
    e = _failure_error(r)
    if e is None:
        return False
    if "info" in e:
        del e["info"]
    else:
        e["info"] = {"name": "Error", "code": "OTHER"}
    return True


def _info_everywhere(trace: dict[str, Any]) -> bool:
    """Another ``info`` in each failure, and in the ``tool/result`` event that carries it (P104)."""
    changed = _on_results(trace, _info)
    final = {r["callId"]: r["result"] for r in trace.get("results") or []}
    for ev in trace.get("events") or []:
        data = ev.get("data")
        if ev.get("type") != "tool/result" or not isinstance(data, dict):
            continue
        blocks = ((data.get("message") or {}).get("content") or [{}])
        r = final.get(blocks[0].get("toolCallId")) if isinstance(blocks[0], dict) else None
        if not isinstance(r, dict) or r.get("isError") is not True or _failure_error(r) is None:
            continue
        info = r["error"].get("info")
        if info is None:
            data.pop("error", None)
        else:
            data["error"] = info
    return changed


def _contexts_presence(r: dict[str, Any]) -> bool:
    if "additionalContexts" in r:
        return False
    r["additionalContexts"] = []
    return True


def _meta_presence(r: dict[str, Any]) -> bool:
    if "meta" in r or r["isError"] is not False:
        return False
    r["meta"] = {"$js": "undefined"}
    return True


def _meta_before_materialization(trace: dict[str, Any]) -> bool:
    """``meta: undefined`` where a result is handed on before materialization makes it lossless
    JSON (a final result cannot hold undefined, P12)."""
    changed = False
    for o in trace["observations"]:
        if o["who"] is None and (o["stage"], o["what"]) in (("execute", "end"), ("post-execute", "start")):
            changed = _walk(o.get("value"), _meta_presence, _is_result) or changed
    return changed


def _concludes_presence(r: dict[str, Any]) -> bool:
    if "concludesTurn" in r or r["isError"] is not False:
        return False
    r["concludesTurn"] = False
    return True


def _request(trace: dict[str, Any]) -> bool:
    changed = False
    for o in trace["observations"]:
        v = o.get("value")
        if (o["stage"], o["what"], o["who"]) == ("approval", "request", None) and isinstance(v, dict):
            v["toolName"] = "renamed"
            changed = True
        elif o["what"] == "observe" and o["stage"] == "approval" and isinstance(v, dict) and "toolName" in v:
            v["toolName"] = "renamed"
            changed = True
    return changed


def _request_writes(trace: dict[str, Any]) -> bool:
    changed = False
    for o in trace["observations"]:
        v = o.get("value")
        if o["what"] == "mutate" and isinstance(v, dict) and str(v.get("target", "")).startswith("request."):
            v["outcome"] = "failed" if v.get("outcome") != "failed" else "applied"
            changed = True
    return changed


def _record(key: str, value: Any) -> Callable[[dict[str, Any]], bool]:
    def change(trace: dict[str, Any]) -> bool:
        changed = False
        for o in trace["observations"]:
            v = o.get("value")
            if o["what"] == "observe" and isinstance(v, dict) and key in v and "callId" in v and "hasAgent" in v \
                    and ":code:" not in str(o.get("call")):  # a sub-call's root id is P119's (code-mode)
                v[key] = value
                changed = True
        return changed
    return change


def _error_tokens(trace: dict[str, Any]) -> bool:
    def visit(e: dict[str, Any]) -> bool:
        if type(e.get("message")) is str and not _code_mode_text(e["message"]):
            e["message"] = e["message"] + " (worded otherwise)"
            return True
        return False
    changed = False
    for o in trace["observations"]:
        if not _authored(o):
            changed = _walk(o.get("value"), visit, lambda d: d.get("$js") == "error") or changed
    return changed


def _program_failures(trace: dict[str, Any]) -> bool:
    """Another wording of each failure a program's call settled with, and of the sub-call's
    failure it repeats (P124, code-mode: the binding rejects with the failure's message)."""
    said: set[str] = set()
    for o in trace["observations"]:
        v = o.get("value")
        if o["stage"] == "program" and o["what"] == "settle" and isinstance(v, dict) \
                and isinstance(v.get("error"), dict) and type(v["error"].get("message")) is str \
                and not _code_mode_text(v["error"]["message"]):
            said.add(v["error"]["message"])

    def visit(r: dict[str, Any]) -> bool:
        e = r.get("error")
        if r["isError"] is True and isinstance(e, dict) and e.get("message") in said:
            e["message"] += " (worded otherwise)"
            return True
        return False

    for o in trace["observations"]:
        if ":code:" in str(o.get("call")) and not _authored(o):
            _walk(o.get("value"), visit, _is_result)
    for r in trace.get("results") or []:
        if ":code:" in str(r.get("callId")):
            _walk(r, visit, _is_result)
    changed = False
    for o in trace["observations"]:
        v = o.get("value")
        # a settled call's failure (an end's is quoted by run_code's own failure text, P128)
        if o["stage"] == "program" and o["what"] == "settle" and isinstance(v, dict) \
                and isinstance(v.get("error"), dict) and type(v["error"].get("message")) is str \
                and not _code_mode_text(v["error"]["message"]):
            v["error"]["message"] += " (worded otherwise)"
            changed = True
    return changed


def _results(visit: Visit) -> Callable[[dict[str, Any]], bool]:
    return lambda trace: _on_results(trace, visit)


VARIATIONS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "error.message (non-string)": _results(_message_rendered),
    "error.message": _results(_message_text),
    "content[].text (failure)": _results(_content_text),
    "error.info": _info_everywhere,
    "additionalContexts (key presence)": _results(_contexts_presence),
    "meta (key presence)": _meta_before_materialization,
    "concludesTurn (key presence)": _results(_concludes_presence),
    "approval request": _request,
    "approval request writes": _request_writes,
    "record rootCallId": _record("rootCallId", "elsewhere"),
    "record signal": _record("signal", {"is": "fused", "aborted": False}),
    "Error message": _error_tokens,
    "program failure message": _program_failures,
}


def _success_value(r: dict[str, Any]) -> bool:
    if r["isError"] is not False or "value" not in r:
        return False
    r["value"] = {"changed": r["value"]}
    return True


def _failure_flag(r: dict[str, Any]) -> bool:
    if r["isError"] is not False:
        return False
    r["isError"] = True
    r["error"] = {"message": "made a failure"}
    r.pop("value", None)
    return True


# Changes of what core rules fix (the converse): each must fail core.
CORE_CHANGES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "a success's value": _results(_success_value),
    "a success made a failure": _results(_failure_flag),
}
