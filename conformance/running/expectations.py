"""Expectations: the failures an implementation is known to have, with their reasons.

An expectations file (YAML) lists expected failures by rule id and/or by case id::

    implementation: dsh-tools 0.1.0-rc.8
    rules:
      P24: identity fields stay writable until the record is frozen before tools/result
    cases:
      entry-args-cycle-not-lossless: the adapter cannot build this value
    errors:
      loop-steer-after-batch: the adapter answers errored, it has no inbox to steer

A failing case is expected when its id is listed, or when every rule it fails (the rules
of its first divergence and of its broken invariants) is listed. A case that also fails
rules that follow from a listed departure (an unfrozen result a listener writes, P11, goes on
to break P87) is expected when the oracle computes that departure and the reference computed
with it is the answer (``conformance.explained``, ``oracle.departures``): consequences are
derived, never listed by hand. An unexpected failure
fails the run; so does a listed entry that no longer fails (*stale*): a listed case that
passed, or a listed rule that some scored case exercised without any case failing it.

``errors`` lists, by case id, the cases the implementation is known to answer with an
error (``{"errored": true}``): such a case is ``expected-error`` instead of ``error``, and
a listed one that no longer errors is stale. A run that never settles because of a listed
departure needs no entry: it is expected when the reference computed with the departure
never settles either (``conformance.explained.explained_error``). Crashes, hangs and protocol breaches cannot be
expected: they always declare the implementation broken.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dsh_conformance.kit.jsonio import MAX_FILE_BYTES, InputLimitError, decode_utf8, read_limited

from dsh_conformance.argtypes import expectations_path
from dsh_conformance.reporting.report import CaseRecord, Outcome
from dsh_conformance.spec.rules import rules


class ExpectationsError(ValueError):
    pass


_GENERATED_ID = re.compile(r"^prop-[0-9a-f]{12}$")


@dataclass
class Expectations:
    implementation: str = ""
    rules: dict[str, str] = field(default_factory=dict)
    cases: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    source: str = ""  # the file it was read from, for messages

    def error_reason(self, case_id: str) -> str | None:
        """Why this case's error is expected, or None when it is not."""
        return self.errors.get(case_id)

    def unknown_cases(self, known: set[str]) -> list[str]:
        """One-line warnings for listed case ids that no case of a run has (generated ids,
        ``prop-...``, are only known once drawn, and are not warned about)."""
        out = []
        for key in ("cases", "errors"):
            for case_id in getattr(self, key):
                if case_id not in known and not _GENERATED_ID.match(case_id):
                    out.append(f"{self.source or 'expectations'}: $.{key}.{case_id}: no case of this run has this id; "
                               "the entry is not used")
        return out

    def reason(self, case_id: str, failing_rules: list[str]) -> str | None:
        """Why this failure is expected, or None when it is not."""
        if case_id in self.cases:
            return self.cases[case_id]
        if failing_rules and all(r in self.rules for r in failing_rules):
            return "; ".join(dict.fromkeys(self.rules[r] for r in failing_rules))
        return None

    def listed(self) -> dict[str, list[str]]:
        """The ids it lists, in order, without the reasons (a shard's footer keeps them)."""
        return {"rules": list(self.rules), "cases": list(self.cases), "errors": list(self.errors)}

    def stale(self, records: list[CaseRecord], rules: bool = True, left_out: frozenset[str] = frozenset()) -> list[str]:
        """Listed entries that no longer fail, as sentences (``rules``: the listed rules too,
        which only a whole run can call stale: a shard's cases may miss the failing one).
        A listed rule is judged only where the run covered it: not one cited by a corpus case
        the selection left out (``left_out``: ``--rule P11`` or ``-k guard`` runs none of the
        cases that fail a listed P24), nor by a case the run stopped before (not-run)."""
        out = []
        by_id = {c.id: c for c in records}
        for case_id in self.cases:
            c = by_id.get(case_id)
            if c is not None and c.outcome == Outcome.PASS:
                out.append(f"case {case_id} is listed as failing but passed")
        for case_id in self.errors:
            c = by_id.get(case_id)
            if c is not None and c.outcome in (Outcome.PASS, Outcome.FAIL, Outcome.XFAIL, Outcome.SKIP):
                out.append(f"case {case_id} is listed as erroring but ended in {c.outcome.value}")
        failed_rules = {r for c in records if c.outcome in (Outcome.FAIL, Outcome.XFAIL) for r in c.failing_rules}
        # A rule is shown to hold only by a case that passed while citing it: a case that
        # failed on other rules stopped at its first divergence and says nothing of it. A
        # passing run of generated scenarios is not such evidence: that its draws missed a
        # listed departure does not show the departure gone (a sweep without the corpus
        # would call every listed rule stale).
        scored_rules = {r for c in records if c.outcome == Outcome.PASS and c.source != "property" for r in c.rules}
        unjudged = left_out | {r for c in records if c.outcome == Outcome.NOT_RUN for r in c.rules}
        for rule in self.rules if rules else ():
            if rule in scored_rules and rule not in failed_rules and rule not in unjudged:
                out.append(f"rule {rule} is listed as failing but no case failed it")
        return out


def load_expectations(path: str | Path) -> Expectations:
    p = Path(path)
    try:
        doc = yaml.safe_load(decode_utf8(read_limited(p, MAX_FILE_BYTES))) or {}
    except OSError as e:
        raise ExpectationsError(f"{p}: cannot read: {e.strerror or e}") from None
    except InputLimitError as e:
        raise ExpectationsError(f"{p}: {e}") from None
    except yaml.YAMLError as e:
        raise ExpectationsError(f"{p}: not YAML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise ExpectationsError(f"{p}: $: nested too deeply to be an expectations file") from None
    if not isinstance(doc, dict):
        raise ExpectationsError(f"{p}: $: expected a mapping")
    if "consequences" in doc:
        raise ExpectationsError(f"{p}: $.consequences: no longer read: what follows from a listed departure is derived "
                                "(the reference computed with it, conformance/explained.py); list a case the oracle "
                                "cannot compute by its id under cases")
    unknown = set(doc) - {"implementation", "rules", "cases", "errors"}
    if unknown:
        raise ExpectationsError(f"{p}: $.{sorted(unknown)[0]}: unknown key (expected implementation, rules, cases, "
                                "errors)")
    exp = Expectations(str(doc.get("implementation", "")), source=str(p))
    for key in ("rules", "cases", "errors"):
        section = doc.get(key) or {}
        if not isinstance(section, dict):
            raise ExpectationsError(f"{p}: $.{key}: expected a mapping of id to reason")
        for k, v in section.items():
            if not isinstance(v, str) or not v.strip():
                raise ExpectationsError(f"{p}: $.{key}.{k}: the reason must be a non-empty string")
            if key == "rules" and k not in rules():
                raise ExpectationsError(f"{p}: $.rules.{k}: unknown rule id")
        getattr(exp, key).update({str(k): v for k, v in section.items()})
    return exp


def from_records(implementation: str, records: list[CaseRecord], previous: Expectations | None = None) -> str:
    """An expectations file listing the failures of a report, keeping earlier reasons."""
    previous = previous or Expectations()
    rule_reasons: dict[str, str] = {}
    case_reasons: dict[str, str] = {}
    error_reasons: dict[str, str] = {}
    for c in records:
        if c.outcome in (Outcome.ERROR, Outcome.XERROR) and c.iut_failure is None:
            error_reasons.setdefault(c.id, previous.errors.get(c.id, _describe_error(c)))
        if c.outcome not in (Outcome.FAIL, Outcome.XFAIL):
            continue
        if c.failing_rules:
            for r in c.failing_rules:
                if c.outcome == Outcome.XFAIL and r not in previous.rules:
                    continue  # expected already: it follows from a listed departure (conformance.explained)
                rule_reasons.setdefault(r, previous.rules.get(r, _describe(c)))
        else:
            case_reasons.setdefault(c.id, previous.cases.get(c.id, _describe(c)))
    doc: dict[str, Any] = {"implementation": implementation}
    if rule_reasons:
        doc["rules"] = dict(sorted(rule_reasons.items(), key=lambda kv: int(kv[0][1:])))
    if case_reasons:
        doc["cases"] = dict(sorted(case_reasons.items()))
    if error_reasons:
        doc["errors"] = dict(sorted(error_reasons.items()))
    header = ("# Expected failures of this implementation, by rule id and by case id, each with the\n"
              "# observed behavior. Written by `dsh-conformance expectations update`; edit the reasons.\n")
    return header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def _describe_error(c: CaseRecord) -> str:
    first = (c.message or "").splitlines()[0] if c.message else ""
    return f"TODO explain: the implementation answers errored: {first[:200]}"


def _describe(c: CaseRecord) -> str:
    if c.divergence:
        return f"TODO explain: first diverges at {c.divergence.get('where')} in case {c.id}"
    if c.violations:
        return f"TODO explain: {c.violations[0].get('message', '')}"
    return f"TODO explain: case {c.id}"


def load_named(name: str | None) -> Expectations:
    """The expectations of ``argtypes.expectations_path(name)``: a file, or the name of one
    the suite ships (empty without a name); raises ``ExpectationsError`` for a file that is
    missing or wrong."""
    return Expectations() if name is None else load_expectations(expectations_path(name))
