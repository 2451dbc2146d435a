"""Laws of outcomes (P4, P8..P10, P90..P101): every call ends in one well-formed final
result, notified once, and ``finalizeContent`` changes only its content."""

from __future__ import annotations

from collections.abc import Iterator

from dsh_conformance.kit.jsvalue import NotLossless, Thrown, is_lossless, same_value, snapshot
from dsh_conformance.kit.scenario import DirectRun

from dsh_conformance.laws.framework import ABSENT, UNDEFINED, View, Violation, is_failure, law


@law
def final_results(v: View) -> Iterator[Violation]:
    """P4, P12, P98, P99, P92: every final result is lossless JSON, deeply frozen, the very
    object the tools/result observers received, and well shaped: a boolean ``isError`` and
    a ``content`` array; a success carries ``value`` and no ``error``; a failure carries
    ``error`` with a ``message`` and neither ``value`` nor ``concludesTurn``;
    ``concludesTurn``, when present, is ``true``."""
    for cid, rs in v.results.items():
        if len(rs) > 1:
            yield Violation("P98", f"call {cid}: {len(rs)} final results")
        r = rs[0]
        res = r.result
        if not r.frozen:
            yield Violation("P99", f"call {cid}: the final result is not deeply frozen")
        if not r.observed:
            yield Violation("P98", f"call {cid}: the final result is not the object the observers received")
        if not is_lossless(res):
            yield Violation("P12", f"call {cid}: the final result is not lossless JSON")
        if not isinstance(res, dict) or not isinstance(res.get("isError"), bool):
            yield Violation("P4", f"call {cid}: the final result has no boolean isError")
            continue
        if not isinstance(res.get("content"), list):
            yield Violation("P4", f"call {cid}: the final result has no content array")
        if res["isError"]:
            error = res.get("error")
            if not isinstance(error, dict) or "message" not in error:
                yield Violation("P4", f"call {cid}: a failure without error.message")
            for key in ("value", "concludesTurn"):
                if key in res:
                    yield Violation("P4", f"call {cid}: a failure carries {key}")
        else:
            if "value" not in res:
                yield Violation("P4", f"call {cid}: a success without value")
            if "error" in res:
                yield Violation("P4", f"call {cid}: a success carries error")
        if "concludesTurn" in res and res["concludesTurn"] is not True:
            yield Violation("P92", f"call {cid}: concludesTurn is {res['concludesTurn']!r}, not true")


@law
def one_notification(v: View) -> Iterator[Violation]:
    """P98, P8: every call that returns a result had exactly one tools/result notification,
    which carried that result; every direct ``execute()`` call returns one."""
    for cid in v.order if isinstance(v.scenario.run, DirectRun) else ():
        if cid not in v.results:
            yield Violation("P8", f"call {cid}: execute() returned no result")
    for cid, ct in v.calls.items():
        starts = ct.probes("result", "start")
        res = v.result(cid)
        if res is ABSENT:
            if starts:
                yield Violation("P98", f"call {cid}: a tools/result notification without a final result")
            continue
        if len(starts) != 1:
            yield Violation("P98", f"call {cid}: {len(starts)} tools/result notifications")
        elif not same_value(starts[0][1].value, res):
            yield Violation("P98", f"call {cid}: tools/result carried another outcome than the final result")


@law
def finalize_content_only(v: View) -> Iterator[Violation]:
    """P94, P95: finalizeContent changes only ``content``. Where a finalizer shows what it
    was handed (an ``observe result`` step): returning undefined keeps the outcome, a
    lossless return replaces exactly ``content``, and a throw or a non-lossless return
    makes the outcome a failure without ``meta``, ``additionalContexts`` or ``value``."""
    for cid, ct in v.calls.items():
        res = v.result(cid)
        if res is ABSENT:
            continue
        for _, call in ct.calls("finalize"):
            who = call.who
            assert who is not None
            handed = [o.value for _, o in ct.by(who, "observe") if isinstance(o.value, dict) and "result" in o.value]
            returned = ct.by(who, "return")
            if not handed or handed[0]["result"] == UNDEFINED:
                continue
            m = handed[0]["result"]
            if returned:
                c = returned[0][1].value
                if c == UNDEFINED:
                    expected = m
                else:
                    try:
                        expected = {**m, "content": snapshot(c)}
                    except (NotLossless, Thrown):
                        expected = None
                if expected is not None:
                    if not same_value(expected, res):
                        yield Violation("P94", f"call {cid}: finalizeContent changed more than the content")
                    continue
            # An empty context list or an undefined meta, against no key, is key presence (P92,
            # reference): a core verdict does not read it (section 2), a reference one blames P92.
            presence = {k for k in ("meta", "additionalContexts") if k in res
                        and (res[k] == [] if k == "additionalContexts" else res[k] == UNDEFINED)}
            if not is_failure(res) or ({"meta", "additionalContexts", "value"} & set(res)) - presence:
                yield Violation("P95", f"call {cid}: a failing finalizer left a result that is not a bare failure "
                                f"(P95: a failure without meta, additionalContexts or value; it has "
                                f"{', '.join(sorted(k for k in ('meta', 'additionalContexts', 'value') if k in res)) or 'isError false'})")
            elif presence:
                yield Violation("P92", f"call {cid}: a failing finalizer left {' and '.join(sorted(presence))} as a key "
                                f"with nothing in it (P92: such keys are absent)")
