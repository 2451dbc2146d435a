"""What a report keeps of a case that did not pass, so that a view can show why.

Only non-passing cases carry it, which keeps reports small. A corpus case is referred to
by its id and path in the corpus, with a digest of its document (a view that finds the
case in its corpus can tell whether it is still the same); a generated or replayed case
is embedded whole. The IUT's trace is kept as it came, up to ``MAX_KEPT_TRACE_BYTES``
(1 MiB of JSON): a bigger one is left out and its size recorded (``trace_omitted``), so
that a report grows with the number of cases, not with what an implementation sends (its
``trace_digest`` is kept whatever the size). Likewise each side of the first divergence is
kept up to ``MAX_KEPT_VALUE_BYTES`` (64 KiB of JSON); a bigger one becomes
``{"$omitted": BYTES, "sha256": DIGEST}``, which two reports still compare by. The oracle's trace is
not kept: a view recomputes it from the case, and the digest of the trace the run compared
against tells whether the view's oracle gives the same one.
"""

from __future__ import annotations

import hashlib
from typing import Any

from dsh_conformance.kit import jsontext
from dsh_conformance.kit.trace import Trace


def digest(text: str) -> str:
    # surrogatepass: a case may hold a lone surrogate (lossless, spec 3.11), and its digest
    # must not crash the run that found the case failing (WTF-8, as kit.jsontext writes)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def document_digest(doc: dict[str, Any]) -> str:
    """A case document's digest, independent of its file's layout (a lone surrogate is
    digested as its escape: it has no UTF-8 form)."""
    return digest(jsontext.dumps(doc, sort_keys=True, separators=(",", ":")))


def trace_digest(trace: Trace) -> str:
    return digest(trace.dumps())


MAX_KEPT_TRACE_BYTES = 1 << 20
MAX_KEPT_VALUE_BYTES = 64 << 10
MAX_KEPT_MESSAGE_CHARS = 16 << 10


def kept_message(text: str) -> str:
    """An implementation's own text (an ``errored`` message, a skip reason) as a record keeps
    it: the first ``MAX_KEPT_MESSAGE_CHARS`` characters, then how much was left out and the
    whole text's digest, so that a report grows with the number of cases, not with what an
    implementation sends (a protocol line may hold 64 MiB)."""
    if len(text) <= MAX_KEPT_MESSAGE_CHARS:
        return text
    return (f"{text[:MAX_KEPT_MESSAGE_CHARS]}... ({len(text) - MAX_KEPT_MESSAGE_CHARS} more characters, "
            f"{digest(text)})")


def kept_divergence(divergence: dict[str, Any]) -> dict[str, Any]:
    """A first divergence as a record keeps it: each side within ``MAX_KEPT_VALUE_BYTES``."""
    out = dict(divergence)
    for side in ("expected", "actual"):
        text = jsontext.dumps(divergence.get(side), sort_keys=True, separators=(",", ":"))
        if len(text) > MAX_KEPT_VALUE_BYTES // 4:  # characters: the bytes are counted only when it may be over
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > MAX_KEPT_VALUE_BYTES:
                out[side] = {"$omitted": size, "sha256": digest(text)}
    return out


def evidence(doc: dict[str, Any], source: str, profiles: set[str] | None = None,
             expected: Trace | None = None, actual: Trace | None = None) -> dict[str, Any]:
    """The optional fields of a non-passing case record (``conformance.report.CaseRecord``)."""
    out: dict[str, Any] = {}
    if source == "corpus":
        out["scenario_sha256"] = document_digest(doc)
    else:
        out["scenario"] = doc
    if actual is not None:
        out["profiles"] = sorted(profiles or ())
        trace = actual.to_json()
        size = len(jsontext.dumps(trace, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        if size <= MAX_KEPT_TRACE_BYTES:
            out["trace"] = trace
        else:
            out["trace_omitted"] = size
    if expected is not None:
        out["expected_sha256"] = trace_digest(expected)
    return out
