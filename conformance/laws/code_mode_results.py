"""Code Mode laws on what a run comes to (P114-P128): its bindings settle with the outcome, the
run's lifetime, the sub-calls' additional contexts riding on the parent, the turn's
conclusion from its sub-calls, and run_code's value and content (P128's rendering of the
value, ``p128_content``). The run's structure and its sub-calls' numbering, logging,
identity and lanes are ``laws.code_mode``'s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dsh_conformance.kit.jsvalue import Thrown, json_text, same_value, to_string, token
from dsh_conformance.laws.code_mode import RUN_OVER, dispatch_events, first, positions, runs, subs_of
from dsh_conformance.laws.framework import ABSENT, View, Violation, law
from dsh_conformance.oracle.texts import (
    CODE_MODE_PLUGIN,
    DISCARDED,
    RESULT_NOT_LOSSLESS,
    RUN_CODE_NO_OUTPUT,
    code_run_failed,
)


@law
def bindings_settle_with_the_outcome(v: View) -> Iterator[Violation]:
    """P124, P125: a binding resolves with its sub-call's value or rejects with its
    ``error.message`` (as an Error's message), unless the run was over by then (result
    discarded); an accepted call that never started was abandoned."""
    for parent, r in runs(v).items():
        subs = subs_of(v, parent)
        for key, k in r.numbers.items():
            settle = r.settles.get(key)
            cid = subs.get(k)
            if settle is None or cid is None:
                continue
            res = v.result(cid)
            if res is ABSENT or not isinstance(res, dict):
                continue
            error = settle.get("error")
            if error is not None and str(error.get("message", "")).startswith(RUN_OVER):
                if not str(error["message"]).endswith(DISCARDED):
                    yield Violation("P125", f"sub-call {cid} committed, yet its binding says {error['message']!r}")
                continue
            if res.get("isError"):
                want = _error_text(res)
                if error is None or (want is not None and error.get("message") != want):
                    yield Violation("P124", f"sub-call {cid} failed, yet its binding settled otherwise")
            elif error is not None or not same_value(settle.get("value"), res.get("value")):
                yield Violation("P124", f"sub-call {cid} succeeded, yet its binding did not resolve with its value")


def _error_text(res: dict[str, Any]) -> str | None:
    message = (res.get("error") or {}).get("message")
    try:
        return to_string(message)  # new Error(message)
    except Thrown:
        return None


@law
def run_lifetime(v: View) -> Iterator[Violation]:
    """P125, P117: the program runs inside run_code's body; the body returns only after every
    started sub-call committed and every dispatch log was appended."""
    for parent, r in runs(v).items():
        start = first(v, parent, "execute", "start")
        end = next((i for i, o in positions(v, parent) if o.who is None and o.stage == "execute"
                    and o.what in ("end", "throw")), None)
        if r.program_start is not None and (start is None or r.program_start < start):
            yield Violation("P117", f"run_code {parent}: the program started outside run_code's tools/execute")
        if end is None:
            continue
        for k, cid in subs_of(v, parent).items():
            committed = first(v, cid, "result", "start")
            if committed is not None and committed > end:
                yield Violation("P125", f"run_code {parent} returned before sub-call {cid} committed")
                break
        for e in dispatch_events(v, parent):
            if e.type == "tool/code-dispatch" and e.at is not None and e.at > end:
                yield Violation("P125", f"run_code {parent} returned before {e.data.get('subCallId')}'s dispatch log")
                break


@law
def contexts_ride_on_the_parent(v: View) -> Iterator[Violation]:
    """P126: a sub-call's contexts (and an image-bearing success's content, as a context)
    are deferred on the run_code record: they lead run_code's result into post-execute, in
    commit order; in a loop they are queued only after run_code's tool/result."""
    for parent in runs(v):
        subs = subs_of(v, parent)
        carried: list[Any] = []
        for k in sorted(subs):
            res = v.result(subs[k])
            if res is ABSENT or not isinstance(res, dict):
                continue
            if not res.get("isError") and any(isinstance(b, dict) and b.get("type") == "image" for b in res.get("content", [])):
                carried.append({"content": res["content"], "source": {"kind": "plugin", "plugin": CODE_MODE_PLUGIN},
                                "role": "user"})
            carried += [c for c in res.get("additionalContexts", []) if isinstance(c, dict)]
        if not carried:
            continue
        post = next((o for _, o in positions(v, parent) if o.who is None and o.stage == "post-execute" and o.what == "start"), None)
        if post is not None and isinstance(post.value, dict) and _dispatched(v, parent):
            got = post.value.get("additionalContexts", [])
            got = got if isinstance(got, list) else []
            # P67: the record's deferred list is in call order, so what run_code's own
            # participants deferred on its record before the program ran (a guard, a
            # pre-execute listener, a wrapper before next()) comes first; the sub-calls'
            # contexts follow as one run, before any later deferral and the result's own.
            own = sum(1 for _, o in positions(v, parent) if o.who is not None and o.what == "defer")
            if not any(len(got) >= k + len(carried) and all(_same_message(a, b) for a, b in zip(carried, got[k:]))
                       for k in range(own + 1)):
                yield Violation("P126", f"run_code {parent}: the sub-calls' contexts do not lead its result, in commit order "
                                "(after what its own participants deferred)")
                continue
        if v.loop is not None:
            yield from _queued_after(v, parent, carried)


def _dispatched(v: View, parent: str) -> bool:
    return first(v, parent, "execute", "start") is not None


def _same_message(expected: dict[str, Any], actual: Any) -> bool:
    if not isinstance(actual, dict):
        return False
    keys = [k for k in expected if k != "id"]
    return all(same_value(expected[k], actual.get(k)) for k in keys)


def _queued_after(v: View, parent: str, carried: list[Any]) -> Iterator[Violation]:
    """No carried context is queued while run_code runs: between its tool/call and its
    tool/result (earlier calls may have queued equal messages before)."""
    events = [e for e in v.trace.events if v.loop is not None and e.agent == v.loop.agent]
    call_at = next((n for n, e in enumerate(events) if e.type == "tool/call" and isinstance(e.data, dict)
                    and e.data.get("callId") == parent), None)
    result_at = next((n for n, e in enumerate(events) if e.type == "tool/result"
                      and isinstance(e.data, dict) and isinstance(e.data.get("message"), dict)
                      and e.data["message"].get("source", {}).get("callId") == parent), None)
    if call_at is None:
        return
    for n, e in enumerate(events):
        if n < call_at or e.type not in ("agent/inbox/spliced", "user/message"):
            continue
        inserted = e.data.get("inserted", []) if e.type == "agent/inbox/spliced" and isinstance(e.data, dict) else [e.data]
        for m in inserted:
            if any(_same_message(c, m) for c in carried) and (result_at is None or n < result_at):
                if any(_same_message(i, m) for i in _injected(v)):
                    continue  # a participant's inject or steer of an equal message: not a carried context
                yield Violation("P126", f"run_code {parent}: a sub-call's context was queued before run_code's tool/result")
                return


def _injected(v: View) -> list[dict[str, Any]]:
    """The messages the scenario's participants inject or steer (P109's other way in)."""
    found: list[dict[str, Any]] = []

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            if x.get("do") in ("inject", "steer") and isinstance(x.get("message"), dict):
                found.append(x["message"])
            for y in x.values():
                walk(y)
        elif isinstance(x, list):
            for y in x:
                walk(y)
    walk(v.scenario.model_dump(mode="python", by_alias=True))
    return found


@law
def turn_conclusion_from_sub_calls(v: View) -> Iterator[Violation]:
    """P127: a successful sub-call that concludes the turn marks run_code: run_code's
    success carries ``concludesTurn: true``; a failed sub-call cannot mark it."""
    for parent in runs(v):
        res = v.result(parent)
        if res is ABSENT or not isinstance(res, dict) or res.get("isError"):
            continue
        concluding = [cid for cid in subs_of(v, parent).values()
                      if isinstance(r := v.result(cid), dict) and not r.get("isError") and r.get("concludesTurn") is True]
        if concluding and res.get("concludesTurn") is not True:
            yield Violation("P127", f"run_code {parent}: sub-call {concluding[0]} concluded the turn, yet run_code's success does not")


@law
def run_value_and_content(v: View) -> Iterator[Violation]:
    """P128: where nothing but the bridge shapes run_code's outcome (no tools/execute or
    post-execute listener), a completed program gives ``{logs, result?}`` rendered as one
    text block, and a failed one ``CodeRunFailedError`` with the kind, the message and the
    captured output."""
    if any(l.event in ("tools/execute", "tools/post-execute") for l in v.scenario.listeners) or v.scenario.timeoutPolicy:
        return
    for parent, r in runs(v).items():
        res = v.result(parent)
        end = r.program_end
        if res is ABSENT or not isinstance(res, dict) or end is None or not isinstance(end.value, dict):
            continue
        if _aborted_outcome(res):
            continue  # P116: a checkpoint replaced it
        if res.get("isError") and isinstance(res.get("error"), dict) and res["error"].get("message") == RESULT_NOT_LOSSLESS:
            continue  # P90: a context that rode on it (P67, P126) made the outcome fail to materialize
        outcome = end.value
        if "error" in outcome:
            error = outcome["error"]
            want = code_run_failed(str(error.get("kind")), str(error.get("message")), list(outcome.get("logs", [])))
            got = res.get("error") if isinstance(res.get("error"), dict) else {}
            if not res.get("isError") or got.get("message") != want or got.get("info") != {"name": "CodeRunFailedError", "code": "CODE_RUN_FAILED"}:
                yield Violation("P128", f"run_code {parent}: the failed program did not give CodeRunFailedError {want!r}")
            continue
        value: dict[str, Any] = {"logs": outcome.get("logs", [])}
        if "value" in outcome:
            value["result"] = outcome["value"]
        if res.get("isError") or not same_value(res.get("value"), value) or not same_value(res.get("content"), p128_content(value)):
            yield Violation("P128", f"run_code {parent}: its outcome is not the run's value {{logs, result?}} and its rendering")


def _aborted_outcome(res: dict[str, Any]) -> bool:
    info = (res.get("error") or {}).get("info") if isinstance(res.get("error"), dict) else None
    return isinstance(info, dict) and info.get("name") == "AbortError"




INDENT = 2  # JSON.stringify(value, null, 2)


MAX_INDENT = 10  # "a container whose children would be indented by more than 10 spaces"


def p128_content(value: dict[str, Any]) -> list[dict[str, Any]]:
    """P128's content for a run's value ``{logs, result?}``, written from the rule's text and
    not with the oracle's ``code_mode.render``, so that a wrong render is caught: one text
    block, the non-empty parts among the logs joined by "\n" and the rendered result,
    joined by "\n"; when both are empty, the fixed no-output text."""
    parts = ["\n".join(value["logs"])]
    if "result" in value:
        result = value["result"]
        parts.append(result if isinstance(result, str) else _stringify_2(result, 0))
    text = "\n".join(part for part in parts if part)
    return [{"type": "text", "text": text or RUN_CODE_NO_OUTPUT}]


def _stringify_2(v: Any, depth: int) -> str:
    """``JSON.stringify(v, null, 2)`` at nesting ``depth``, except that a container whose
    children would be indented by more than 10 spaces (depth >= 5) is written without
    white space, with everything inside it (``JSON.stringify(v)``, compact). Leaves are
    written by ``JSON.stringify`` (``kit.jsvalue.json_text``, cross-checked against node)."""
    entries = v.get("entries", {}) if token(v) == "object" else v  # an escaped "$js" key is data
    if not isinstance(v, list) and not (isinstance(entries, dict) and (token(v) is None or token(v) == "object")):
        return json_text(v) or ""
    if (depth + 1) * INDENT > MAX_INDENT:
        return json_text(v) or ""
    pad, inner = " " * (depth * INDENT), " " * ((depth + 1) * INDENT)
    if isinstance(v, list):
        if not v:
            return "[]"
        return "[\n" + ",\n".join(inner + _stringify_2(x, depth + 1) for x in v) + "\n" + pad + "]"
    if not entries:
        return "{}"
    items = [inner + (json_text(k) or "") + ": " + _stringify_2(x, depth + 1) for k, x in entries.items()]
    return "{\n" + ",\n".join(items) + "\n" + pad + "}"
