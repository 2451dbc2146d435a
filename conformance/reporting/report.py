"""Reports: a JSON-lines record of a run, and the views made from it.

A report file has one JSON object per line: a ``header`` (suite, spec revision, protocol,
IUT identity, profiles, seed, machine), one ``case`` record per case as soon as it is
decided (so a killed run leaves a valid partial report), and a ``footer`` with the counts
and the exit code. ``report_schemas()`` gives their JSON Schemas (``catalogs/``). Cases and
files are named portably (``conformance.portable``), and a case that did not pass keeps
what a view needs to show why (``conformance.evidence``).

The views made from reports are the modules above: the compliance matrix in Markdown and
JSON and a run's JUnit XML (``conformance.report_formats``), the HTML page
(``conformance.report_html``), and the counts and scores every view shows
(``conformance.scores``).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from dsh_conformance import __version__
from dsh_conformance.iut.protocol import PROTOCOL_VERSION
from dsh_conformance.kit import jsontext
from dsh_conformance.kit.jsonio import (
    MAX_MESSAGE_DEPTH,
    MAX_REPORT_BYTES,
    InputLimitError,
    decode_utf8,
    loads,
    read_limited,
)
from dsh_conformance.kit.schema_doc import schema_document
from dsh_conformance.spec.rules import INDEX
from dsh_conformance.textio.outputs import Ledger, OutputWriteError, Written, write_atomic
from dsh_conformance.textio.portable import BUILTIN_CORPUS

REPORT_FORMAT = "dsh-conformance/report/v1"


class Outcome(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    XFAIL = "expected-fail"  # a failure the expectations file lists
    SKIP = "skip"  # the IUT said it cannot express the scenario
    ERROR = "error"  # the IUT answered an error, crashed, or broke the protocol
    TIMEOUT = "timeout"
    INVALID = "invalid"  # the IUT sent data that breaks the protocol schemas (--validate)
    NOT_SCORED = "not-scored"  # the case needs a profile the IUT does not support
    XERROR = "expected-error"  # an error the expectations file lists
    NOT_RUN = "not-run"  # the run stopped before this case: the IUT was declared broken


BROKEN = frozenset({Outcome.ERROR, Outcome.TIMEOUT, Outcome.INVALID})
# How a rule's cases combine into the rule's outcome: the first that any case has wins. A rule
# with a case that never ran is not called passing.
RULE_PRECEDENCE = (Outcome.FAIL, Outcome.ERROR, Outcome.TIMEOUT, Outcome.INVALID, Outcome.XFAIL, Outcome.XERROR,
                   Outcome.NOT_RUN, Outcome.PASS, Outcome.SKIP, Outcome.NOT_SCORED)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Header(_Model):
    kind: Literal["header"] = "header"
    format: Literal["dsh-conformance/report/v1"] = REPORT_FORMAT
    suite: dict[str, str]
    spec: dict[str, str]
    protocol: int
    implementation: dict[str, Any]
    profiles: list[str]
    seed: int | None = None
    examples: int = 0
    machine: dict[str, str]
    started: str
    # Portable (``conformance.portable``): "built-in" or the corpus directory's path.
    corpus: str | None = None
    # The options a replay of a case repeats (impl, expectations, profiles), portable.
    options: dict[str, str] = Field(default_factory=dict)
    # ``run --shard K/M``: this report is shard K of M (``dsh-conformance merge`` joins them).
    shard: str | None = Field(None, pattern=r"^[1-9][0-9]*/[1-9][0-9]*$")


RuleId = Annotated[str, Field(pattern=r"^P[1-9][0-9]{0,3}$")]  # a crafted report's ids are refused as it is read


class CaseRecord(_Model):
    kind: Literal["case"] = "case"
    id: str
    source: Literal["corpus", "property", "replay"]
    rules: list[RuleId]
    outcome: Outcome
    failing_rules: list[RuleId] = Field(default_factory=list)
    divergence: dict[str, Any] | None = None
    violations: list[dict[str, str]] = Field(default_factory=list)
    message: str | None = None
    expected_reason: str | None = None
    # Portable: a corpus case's path relative to its corpus, a saved case's relative to the run.
    case_file: str | None = None
    duration_ms: int = 0
    draws: int | None = Field(None, description=(
        "for a case of generated scenarios: how many draws it stands for (the run's draws are folded into one case)"))
    skipped_draws: dict[str, int] | None = Field(None, description=(
        "for a case of generated scenarios: its draws the implementation answered skipped, per profile of their "
        "cited rules, and `all`"))
    draw_outcomes: dict[str, int] | None = Field(None, description=(
        "for the case the run's draws are folded into: how many came to each outcome (merge adds shards' up)"))
    # What the IUT did wrong when it broke its promises (the outcome is then error, timeout or
    # invalid): start, timeout, crash, protocol, invalid. Absent for an answered error.
    iut_failure: str | None = None
    # What a view needs to show why a case did not pass (``conformance.evidence``); only
    # non-passing cases carry it.
    scenario: dict[str, Any] | None = Field(None, description="the case itself, for a generated or replayed case")
    scenario_sha256: str | None = Field(None, description="digest of the corpus case's document")
    profiles: list[str] | None = Field(None, description="the profiles the traces were compared under")
    trace: dict[str, Any] | None = Field(None, description="the implementation's trace (trace.schema.json)")
    trace_omitted: int | None = Field(None, ge=0, description=(
        "the size in bytes of the implementation's trace, when it was over the 1 MiB a record keeps and was left out "
        "(conformance.evidence)"))
    expected_sha256: str | None = Field(None, description="digest of the oracle's trace the run compared against")
    trace_digest: str | None = Field(default=None, description=(
        "sha256 of the implementation's normalized trace (judge.lanes.normalized), when it sent one: "
        "two reports of one suite version tell from it whether anything at all changed in the case"))

    # A report is input (it may be crafted): the views index these dicts, so their shape is
    # checked as they are read, a bad one being a one-line refusal, not a KeyError later.
    @field_validator("divergence")
    @classmethod
    def _divergence_shape(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return v
        if not isinstance(v.get("where"), str):
            raise ValueError("a divergence names its place: 'where', a string")
        if not isinstance(v.get("rules", []), list) or not all(isinstance(r, str) for r in v.get("rules", [])):
            raise ValueError("a divergence's 'rules' is a list of rule ids")
        return v

    @field_validator("violations")
    @classmethod
    def _violations_shape(cls, v: list[dict[str, str]]) -> list[dict[str, str]]:
        for item in v:
            if "rule" not in item or "message" not in item:
                raise ValueError("a violation has a 'rule' and a 'message'")
        return v


class Footer(_Model):
    kind: Literal["footer"] = "footer"
    counts: dict[str, int]
    rules: dict[str, str]
    stale: list[str] = Field(default_factory=list)
    unscored: list[str] = Field(default_factory=list, description=(
        "profiles the run was asked to score (--profiles) of which no rule was scored: the run failed"))
    skipped: dict[str, int] = Field(default_factory=dict, description=(
        "scenarios the implementation answered skipped, per profile of the rules they cite, `all` of them, and "
        "`asked`: the scenarios it was asked (a generated draw counts as one)"))
    too_many_skipped: str | None = Field(None, description="why the run failed for its skips (--max-skipped)")
    exit: int
    finished: str
    stopped: str | None = None  # why the run ended early (the IUT declared broken, an interrupt)
    listed: dict[str, list[str]] | None = Field(None, description=(
        "a shard's: the rules, cases and errors its expectations list, in order, for merge to tell which are stale"))


Record = Header | CaseRecord | Footer
_RECORD: TypeAdapter[Record] = TypeAdapter(Record)


def report_schemas() -> dict[str, dict[str, Any]]:
    return {"report-record.schema.json": schema_document(
        _RECORD, "report-record.schema.json", description="One line of a dsh-conformance JSON-lines report.")}


def spec_revision() -> dict[str, str]:
    digest = hashlib.sha256(INDEX.read_bytes()).hexdigest()[:12]
    return {"rules": f"sha256:{digest}", "upstream": "b150a551b8"}


def machine() -> dict[str, str]:
    return {"python": platform.python_version(), "platform": platform.platform(), "processor": platform.machine()}


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _enum_value(v: Any) -> Any:
    if isinstance(v, Enum):
        return v.value
    raise TypeError(f"not JSON: {v!r}")


class ReportWriter:
    """Writes the report at ``path`` as records come, in time linear in its size: the header
    goes to a new file that replaces the path (``outputs.write_atomic``: a symbolic link
    there is replaced, never written through), and each later record is appended to that
    file as one complete line, with one ``write`` (flushed to the disk at most every
    ``interval`` seconds and at the footer). A reader, or a run killed at any moment, finds
    a valid report of the cases decided until then: a killed run's has no footer, and a
    last line without its newline (a record being written when it was read or killed) is
    no record (``read_report`` skips it). A write that fails (a full disk) is kept in
    ``failed`` and ends the writing: the records before it stay whole. What it wrote is
    kept as ``outputs.Written`` (in the run's ``ledger``): before the footer, a file at the
    path that is no longer the one it wrote, holding what it wrote (an implementation
    replaced it with a forged one) gets no footer, and the run's ledger says so at its end."""

    def __init__(self, path: str | Path | None, interval: float = 0.2, ledger: Ledger | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.interval = interval
        self.fd: int | None = None
        self.synced = time.monotonic()
        self.failed: str | None = None  # why the report could not be completed
        self.ledger = ledger
        self.written: Written | None = None

    def write(self, record: BaseModel) -> None:
        if self.path is None or self.failed is not None:
            return
        # Python mode and kit.jsontext: a lone surrogate in a message or a divergence is
        # written as its JSON escape (pydantic's JSON mode refuses it).
        doc = record.model_dump(mode="python", exclude_none=True)
        line = (jsontext.dumps(doc, separators=(",", ":"), default=_enum_value) + "\n").encode("utf-8")
        if self.written is not None and (self.written.spoiled or (isinstance(record, Footer)
                                                                  and self.written.check())):
            return  # a footer would vouch for a file the run did not write: the ledger says it (cli, exit 4)
        try:
            if self.fd is None:
                self._create(line)
            else:
                _write_all(self.fd, line)
                assert self.written is not None
                self.written.append(line)
        except (OSError, OutputWriteError) as e:
            # Not raised: the run goes on (its summary and exit code still come), and the
            # command says at the end that the report is incomplete (cli: exit 4).
            why = str(e) if isinstance(e, OutputWriteError) else f"{self.path}: cannot write: {e.strerror or e}"
            self.failed = f"{why}; the report holds only the records before it"
            if self.written is not None and self.ledger is not None:
                # what a failed write left of its line is unknown: the file is said incomplete
                # already (exit 4), the ledger does not also call it forged
                self.ledger.forget(self.written.path)
            return
        # To the disk with the footer and at most every ``interval`` seconds (a killed process
        # loses nothing written: this is for a machine that goes down). Not after the header:
        # the run has not entered the part that completes the report on an interrupt yet.
        if isinstance(record, Footer) or (isinstance(record, CaseRecord)
                                          and time.monotonic() - self.synced >= self.interval):
            self.flush()

    def _create(self, first: bytes) -> None:
        assert self.path is not None
        made = write_atomic(self.path, first)
        # Append through the file just put in place (O_NOFOLLOW: never through a link put
        # there since); one that another process put there instead is not ours to extend.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (made.st_dev, made.st_ino) or st.st_size != len(first):
            os.close(fd)
            raise OSError(0, "the file was replaced by another process while the run wrote it")
        self.fd = fd
        self.written = Written(self.path, st, first)
        if self.ledger is not None:
            self.ledger.add(self.written)

    def flush(self) -> None:
        if self.fd is not None:
            try:
                os.fsync(self.fd)
            except OSError:
                pass  # a file system without fsync (a pipe, some FUSE mounts): the writes are done
            self.synced = time.monotonic()

    def close(self) -> None:
        if self.fd is not None:
            self.flush()
            os.close(self.fd)
            self.fd = None

    def __del__(self) -> None:
        fd, self.fd = getattr(self, "fd", None), None
        if fd is not None:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@dataclass
class Report:
    path: str
    header: Header
    cases: list[CaseRecord] = field(default_factory=list)
    footer: Footer | None = None

    @property
    def name(self) -> str:
        impl = self.header.implementation
        return f"{impl.get('name', '?')} {impl.get('version', '')}".strip()


class ReportError(ValueError):
    pass


class PartialReport(ReportError):
    """A verdict asked of a partial report (see ``partial``): refused unless allowed."""


def partial(report: Report) -> str | None:
    """Why ``report`` is not the report of a whole run (it has no footer: the run was killed
    or is still going; or it stopped early), or None. A verdict drawn from one (a diff, an
    expectations file, a badge) would count the cases it lacks as gone."""
    if report.footer is None:
        return "it has no footer: the run was killed or is still going"
    if report.footer.stopped:
        return f"the run stopped early ({report.footer.stopped})"
    return None


def refuse_partial(report: Report, verdict: str) -> None:
    """PartialReport (one line, exit 2) if ``report`` is partial; ``verdict`` says what
    would be wrong to draw from it."""
    why = partial(report)
    if why is not None:
        raise PartialReport(f"{report.path}: a partial report ({why}; {len(report.cases)} cases): {verdict} "
                            "(--allow-partial: anyway)")


def read_report(path: str | Path) -> Report:
    """Read a report; a partial one (no footer) is fine. Errors name the file and line, and
    say what is wrong in one line."""
    header: Header | None = None
    cases: list[CaseRecord] = []
    footer: Footer | None = None
    try:
        data = read_limited(path, MAX_REPORT_BYTES)
        # Records end with "\n" only: splitlines() would also cut at a U+2028 or a \x1c that a
        # message or a trace holds, unescaped, inside a JSON string.
        lines = decode_utf8(data).split("\n")
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror or e}") from None
    except InputLimitError as e:
        raise ReportError(f"{path}: {e.message}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = loads(line, _RECORD_DEPTH)
        except InputLimitError as e:
            if n == len(lines) and e.message.startswith("not JSON"):
                break  # a run killed mid-write by an older writer leaves a torn last line
            raise ReportError(f"{path}:{n}: not a report record: {e.message}") from None
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if not isinstance(kind, str) or kind not in _KINDS:
            raise ReportError(f"{path}:{n}: not a report record (an object whose kind is header, case or footer)")
        if header is None and kind != "header":
            raise ReportError(f"{path}:{n}: not a report record here: a report starts with its header, not a {kind} record")
        if kind == "header" and doc.get("format") != REPORT_FORMAT:
            raise ReportError(f"{path}:{n}: a report of format {_short(repr(doc.get('format')))}; this suite reads "
                              f"{REPORT_FORMAT} (written by dsh-conformance {__version__})")
        try:
            rec = _KINDS[kind].validate_python(doc)
        except ValidationError as e:
            err = e.errors(include_url=False)[0]
            where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
            raise ReportError(f"{path}:{n}: not a report record: {kind} record {where}: {err['msg']}") from None
        if isinstance(rec, Header):
            header = rec
        elif isinstance(rec, CaseRecord):
            cases.append(rec)
        else:
            footer = rec
    if header is None:
        raise ReportError(f"{path}: no header record")
    problem = _build_problem(header.implementation.get("build"))
    if problem:
        raise ReportError(f"{path}:1: not a report record: header record $.implementation.build{problem}")
    return Report(str(path), header, cases, footer)


class _BuiltPackage(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    version: str | None = None
    digest: str | None = None
    path: str | None = None


class _Build(BaseModel):
    """What ``diff`` reads of a tree run's provenance (``conformance.tree.provenance``): it
    comes from the implementation's handshake, so a report's is checked as it is read."""

    model_config = ConfigDict(extra="allow", strict=True)
    path: str | None = None
    commit: str | None = None
    dirty: bool | None = None
    changed: list[str] = Field(default_factory=list)
    packages: dict[str, _BuiltPackage] = Field(default_factory=dict)


def _build_problem(build: Any) -> str | None:
    if build is None:
        return None
    try:
        _Build.model_validate(build)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]) + f": {err['msg']}"
    return None


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


_KINDS: dict[str, TypeAdapter[Any]] = {"header": TypeAdapter(Header), "case": TypeAdapter(CaseRecord),
                                       "footer": TypeAdapter(Footer)}
_RECORD_DEPTH = MAX_MESSAGE_DEPTH + 8  # a case record holds the trace items of its divergence


def replay_line(header: Header, rec: CaseRecord) -> str:
    """The command that replays one case of a run: the console's FAIL blocks and the HTML
    report's details show it. A built-in corpus case by its id, another corpus's by its
    path, a generated or replayed case by its saved file."""
    options = header.options
    if rec.source == "corpus" and header.corpus == BUILTIN_CORPUS:
        ref = rec.id
    elif rec.source == "corpus" and header.corpus and rec.case_file:
        ref = f"{header.corpus}/{rec.case_file}"
    else:
        ref = rec.case_file or f"{rec.id}.json"
    words = ["dsh-conformance", "replay", ref, "--impl", options.get("impl", "IMPL")]
    if "expectations" in options:
        words += ["--expectations", options["expectations"]]
    for p in options.get("profiles", "").split():
        words += ["--profile", p]
    return shlex.join(words)


INCONCLUSIVE = "inconclusive"  # a rule whose every case failed first on another rule


def rule_outcomes(cases: list[CaseRecord]) -> dict[str, str]:
    """Each rule's outcome. A case that failed counts for the rules its failure is put down
    to (its first divergence's and broken invariants'), not for the other rules it cites:
    those were not reached. A rule only such cases cite is ``inconclusive``."""
    seen: dict[str, set[Outcome]] = {}
    cited: set[str] = set()
    for c in cases:
        cited.update(c.rules)
        failed = c.outcome in (Outcome.FAIL, Outcome.XFAIL) and c.failing_rules
        for r in (c.failing_rules if failed else c.rules):
            seen.setdefault(r, set()).add(c.outcome)
    out = {r: next(o for o in RULE_PRECEDENCE if o in outs).value for r, outs in seen.items()}
    for r in cited - set(out):
        out[r] = INCONCLUSIVE
    return out


def new_header(implementation: dict[str, Any], profiles: list[str], seed: int | None, examples: int) -> Header:
    return Header(suite={"name": "dsh-conformance", "version": __version__}, spec=spec_revision(),
                  protocol=PROTOCOL_VERSION, implementation=implementation, profiles=profiles, seed=seed,
                  examples=examples, machine=machine(), started=now())


__all__ = ["Outcome", "Header", "CaseRecord", "Footer", "ReportWriter", "read_report", "report_schemas"]


# The header fields two shards of one run share (``merge`` refuses others).
SAME_RUN = ("suite", "spec", "protocol", "profiles", "seed", "examples", "corpus", "options")


def differs(r: Report, first: Report, fields: tuple[str, ...] = SAME_RUN) -> str | None:
    """Why ``r`` is another run than ``first`` (the first of its header's ``fields`` that
    differs, in one line), or None. ``site`` asks it of the suite, spec and corpus alone."""
    for name in fields:
        if getattr(r.header, name) != getattr(first.header, name):
            return (f"{r.path}: another run than {first.path}: its {name} differs "
                    f"({shown(getattr(r.header, name))} against {shown(getattr(first.header, name))})")
    return None


def shown(value: Any) -> str:
    """A header value in a one-line reason: its repr, cut at 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
