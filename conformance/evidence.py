"""What a report keeps of a case that did not pass, so that a view can show why.

Only non-passing cases carry it, which keeps reports small. A corpus case is referred to
by its id and path in the corpus, with a digest of its document (a view that finds the
case in its corpus can tell whether it is still the same); a generated or replayed case
is embedded whole. The IUT's trace is kept as it came; the oracle's trace is not: a view
recomputes it from the case, and the digest of the trace the run compared against tells
whether the view's oracle gives the same one.
"""

from __future__ import annotations

import hashlib
from typing import Any

from dsh_conformance.oracle import jsontext
from dsh_conformance.oracle.trace import Trace


def digest(text: str) -> str:
    # surrogatepass: a case may hold a lone surrogate (lossless, spec 3.11), and its digest
    # must not crash the run that found the case failing (WTF-8, as oracle.jsontext writes)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def document_digest(doc: dict[str, Any]) -> str:
    """A case document's digest, independent of its file's layout (a lone surrogate is
    digested as its escape: it has no UTF-8 form)."""
    return digest(jsontext.dumps(doc, sort_keys=True, separators=(",", ":")))


def trace_digest(trace: Trace) -> str:
    return digest(trace.dumps())


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
        out["trace"] = actual.to_json()
    if expected is not None:
        out["expected_sha256"] = trace_digest(expected)
    return out
