"""The oracle's reference traces of a run: the corpus read into (id, document, file) items,
each document's trace computed once a process and kept by the digest of its JSON text (the
latest ``MAX_REFERENCES``), and read back from the on-disk cache between runs
(``running.reference_cache``) where it holds them."""

from __future__ import annotations

import collections
import gc
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_conformance.oracle import Scenario, ScenarioFileError, ScenarioRunError, parse_scenario, run_scenario

from dsh_conformance.kit import jsontext
from dsh_conformance.kit.trace import Trace

from dsh_conformance.running import reference_cache
from dsh_conformance.spec.corpus import load_case


def corpus_items(directory: Path) -> list[tuple[str, dict[str, Any], str]]:
    """The corpus as (id, document, path relative to the corpus) for the runner."""
    items = []
    for path in sorted(directory.glob("*.json")):
        case = load_case(path)  # validates the id, the rules and the scenario, within the input limits
        items.append((case.id, case.document, path.name))
    return items


def expected_traces(items: list[tuple[str, dict[str, Any], str]],
                    directory: Path) -> dict[str, Trace | KeptReference]:
    """The oracle's trace of every case, before any work: a case that cannot run to an end
    is a bad input file (ScenarioFileError), not a verdict on the implementation. A trace
    the reference cache holds is not read here but when its case is prepared
    (``KeptReference``): the file shows that the oracle ran the case to an end with this
    code, and reading it while the implementation works on the case before keeps it off the
    run's serial start (issue 25: some 0.5 ms a case against rc.8, the implementation idle)."""
    out: dict[str, Trace | KeptReference] = {}
    # The references live for the whole run: made (or read back) with the cyclic collector
    # paused, then frozen (gc.freeze), so that it does not walk them again and again while
    # the cases are judged (issue 25: 3.0 against 3.5 ms of CPU a case against rc.8). Called
    # once a run (and by the bench): what is alive now is long-lived anyway. Not collected
    # first (that walk costs more than it saves): the cyclic garbage of the oracle's runs
    # while paused (some 4,000 objects when all 274 are computed) stays, once a run.
    was = gc.isenabled()
    gc.disable()
    try:
        for case_id, doc, path in items:
            where = str(directory / path)
            try:
                out[case_id] = _reference_or_kept(doc, where)
            except ScenarioRunError as e:
                raise ScenarioFileError(where, "$", str(e)) from None
    finally:
        if was:
            gc.enable()
    gc.freeze()
    return out


@dataclass(frozen=True)
class KeptReference:
    """A corpus case's reference that the reference cache holds, read when the case is
    prepared (``resolve``). ``where``: the case file, named if the oracle cannot run it
    after all (the file held something else, and it is computed anew)."""
    key: str
    doc: dict[str, Any]
    where: str
    text: str  # the document's JSON text (``document_text``), its key's source and the run message's body

    def resolve(self) -> Trace:
            # Read with the collector paused and then frozen, as expected_traces keeps what it
        # reads: otherwise the collector walks each reference several times as it ages
        # (0.3 ms of CPU a case, more than half of what reading it costs). Freezing keeps the
        # cyclic garbage of the cases before it too: some 200 objects a corpus run.
        was = gc.isenabled()
        gc.disable()
        try:
            return _reference_of(self.key, self.doc)[1]
        except ScenarioRunError as e:
            raise ScenarioFileError(self.where, "$", str(e)) from None
        finally:
            if was:
                gc.enable()
            gc.freeze()


def _reference_or_kept(doc: dict[str, Any], where: str) -> Trace | KeptReference:
    text = document_text(doc)
    key = key_of(text)
    kept = _REFERENCES.get(key)
    if kept is not None:
        _REFERENCES.move_to_end(key)
        return kept[1]
    if reference_cache.holds(key):
        return KeptReference(key, doc, where, text)
    return _reference_of(key, doc)[1]


_REFERENCES: collections.OrderedDict[str, tuple[Scenario, Trace]] = collections.OrderedDict()
MAX_REFERENCES = 512  # traces kept (the corpus has a few hundred cases, a trace some tens of KiB)


def reference(scenario: Scenario | None, doc: dict[str, Any]) -> Trace:
    """The oracle's trace of a scenario document (``scenario``: the document parsed, when it
    is at hand), computed once per document: kept by the digest of its JSON text, key order
    included (it decides what a JavaScript program sees), for the latest ``MAX_REFERENCES``
    documents. Judging the same cases again in one process (the bench's rounds, a test
    session, the pytest plugin's cases) does not run the oracle again; the oracle is
    deterministic, so nothing else changes. The traces are shared: read, never changed."""
    return parsed_reference(doc, scenario)[1]


def parsed_reference(doc: dict[str, Any], scenario: Scenario | None = None,
                     text: str | None = None) -> tuple[Scenario, Trace]:
    """``reference`` with the parsed document it was computed from (kept with it and shared
    the same way: a case's scenario is parsed once, for its trace and for its judging).
    ``text``: the document's JSON text (``document_text``), when it is at hand. Beyond this
    process, a reference is kept on disk for the next run, under the digest of the code that
    computed it (``conformance.reference_cache``)."""
    return _reference_of(key_of(text if text is not None else document_text(doc)), doc, scenario)


def _reference_of(key: str, doc: dict[str, Any], scenario: Scenario | None = None) -> tuple[Scenario, Trace]:
    """``parsed_reference`` of the document whose key is ``key``."""
    kept = _REFERENCES.get(key)
    if kept is None:
        kept = reference_cache.load(key)
        if kept is None:
            scenario = scenario or parse_scenario(doc)
            kept = (scenario, run_scenario(scenario))
            reference_cache.store(key, *kept)
        _REFERENCES[key] = kept
        if len(_REFERENCES) > MAX_REFERENCES:
            _REFERENCES.popitem(last=False)
    else:
        _REFERENCES.move_to_end(key)
    return kept


def document_text(doc: dict[str, Any]) -> str:
    return jsontext.dumps(doc, separators=(",", ":"))


def key_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def forget_references() -> None:
    """Drop every kept reference trace (the bench measures a first run's cost this way)."""
    _REFERENCES.clear()


def kept(key: str) -> tuple[Scenario, Trace] | None:
    """The parsed document and trace kept in memory under ``key`` (``key_of``), or None."""
    return _REFERENCES.get(key)
