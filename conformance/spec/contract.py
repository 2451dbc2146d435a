"""The observation catalog: what an implementation under test reports in a trace (protocol v1).

One table, built on the oracle's own definition of what is portable
(``kit.trace.PROBE_POINTS`` and its builtin participants: the import fails when the two
part), read by the trace schema (a discriminated union of the entries below, so ``--validate`` rejects an
observation outside the contract), by the comparison (a value the contract rejects is a
contract error, not a pipeline rule's) and by the generated catalog
(``catalogs/observations.catalog.json``, ``docs/observations.md``).

An observation is one of:

- a **probe** observation (``who: null``): a stage boundary as a probe installed outermost
  on the stage's seam sees it, one entry per ``(stage, what)``;
- a **participant** observation (``who``: the participant's name): what a scripted
  participant did. Its ``stage`` says which kind of participant it is (``PARTICIPANTS``:
  how ``who`` is named, whether it runs synchronously) and its ``what`` which step
  (``STEPS``: the value's schema);
- an **oracle-only** observation (``ORACLE_ONLY``): the oracle's own reasoning (entry,
  routes, checkpoints, ...). An implementation never needs to send one; comparisons
  ignore it.

Rules: an entry names the rules its observation witnesses. A participant observation
witnesses its step's rules and those of the participant kind it runs as.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from dsh_conformance.kit import results, trace as oracle_trace
from dsh_conformance.kit.jsvalue import TOKEN_KINDS

# ------------------------------------------------------------------ value schemas

JS_VALUE = {"$ref": "#/$defs/JsValue"}
RESULT = {"description": (
    "the result as the stage hands it: a tool execution result (results.schema.json); a wrapper's failure whose "
    "`error` is not an object reaches post-execute as returned (P62, P90)"),
    "anyOf": [{"$ref": "#/$defs/ToolExecutionResult"},
              {"type": "object", "required": ["isError", "content"],
               "properties": {"isError": {"const": True}, "error": {"$ref": "#/$defs/JsValue"}}}]}
MESSAGE = {"$ref": "#/$defs/UserMessage"}
NOTHING = {"type": "null"}


def _object(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    props = {**required, **(optional or {})}
    return {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}


SIGNAL_VIEW = _object({"is": {"type": "string", "description": (
    "which signal the record holds: `caller` (the call's own), a name given by `set-signal`, or `fused` "
    "(one the implementation made, for example the timeout policy's)")},
    "aborted": {"type": "boolean"}}, {"reason": {**JS_VALUE, "description": "the abort reason, when aborted"}})

# What the adapter's instrumentation computes (a mutate's outcome, whether a value is frozen,
# which signal a record holds) is typed strictly: a word outside these is a contract error.
# What the implementation handed the participant (ids, names, reasons, arguments) is any JS
# value: when it is wrong, the pipeline rule that fixes it is to blame, not the contract.
_HANDED = {**JS_VALUE, "description": "as the implementation handed it"}
RECORD_VIEW = _object({
    "callId": _HANDED, "rootCallId": _HANDED, "name": _HANDED,
    "hasAgent": {"type": "boolean"}, "hasParent": {"type": "boolean"}, "arguments": JS_VALUE,
    "signal": SIGNAL_VIEW, "frozen": {"type": "boolean", "description": "the record is frozen (P99)"}},
    {"agent": {**JS_VALUE, "description": "the agent's id, present when the record has an agent"}})
RESULT_VIEW = _object({"result": JS_VALUE, "frozen": {"type": "boolean", "description": (
    "the value handed is deeply frozen (P11)")}})
ARGS_VIEW = _object({"args": JS_VALUE, "isRecordArguments": {"type": "boolean", "description": (
    "the value handed is the very object `record.arguments` holds")}},
    {"frozen": {"type": "boolean", "description": "deeply frozen; absent when nothing was handed"}})
# The request is a plain object made for the ask (P39): what a service observes of it holds its
# own writes too (keys set, deleted or replaced), so beyond its signal nothing is required.
REQUEST_VIEW = {**_object({"signal": _object({"aborted": {"type": "boolean"}})},
                          {"agent": _HANDED, "toolName": _HANDED, "callId": _HANDED, "reason": _HANDED}),
                "additionalProperties": {**_HANDED, "description": "a key the participant wrote into the request"}}
# A signal a `keep` step kept (P60), as it is when observed; no signal when nothing was kept
# under the name by then.
KEPT_VIEW = _object({"kept": {"type": "string", "description": "the name it was kept under"}},
                    {"signal": {**SIGNAL_VIEW, "description": "the kept signal: its name when kept, and now"}})
STEP_VIEW = _object({"agent": _HANDED, "turn": _HANDED, "step": _HANDED, "messages": _HANDED,
                     "signal": {"type": "object"}})
APPROVAL_REQUEST = _object({"agent": _HANDED, "toolName": _HANDED, "callId": _HANDED},
                           {"reason": {**JS_VALUE, "description": "present when the ask gave a string (P39)"}})

def js_value_defs() -> dict[str, Any]:
    """The schema of a JavaScript value in wire form (spec section 3.11): JSON, in which an
    object with a ``$js`` key is a token of one of the known kinds. Only a token's kind is
    checked; what it carries beside it is the kind's own."""
    kinds = sorted(TOKEN_KINDS | {"any"})
    return {
        "JsValue": {"description": (
            "a JavaScript value in wire form: JSON, where an object carrying a string `$js` key is a token "
            "(`undefined`, `NaN`, `bigint`, `error`, ...; section 3.11). `{\"$js\": \"any\"}` appears only in the "
            "oracle's traces, where the spec leaves a value open; an implementation never sends it."),
            "anyOf": [{"type": ["null", "boolean", "number", "string"]},
                      {"type": "array", "items": {"$ref": "#/$defs/JsValue"}},
                      {"$ref": "#/$defs/JsToken"},
                      {"type": "object", "not": {"required": ["$js"]},
                       "additionalProperties": {"$ref": "#/$defs/JsValue"}}]},
        "JsToken": {"type": "object", "required": ["$js"], "properties": {"$js": {"enum": kinds}},
                    "description": "a token for what JSON cannot say (section 3.11)"},
    }


# ------------------------------------------------------------------ the entries

@dataclass(frozen=True)
class Part:
    """A part of an observed value that only some rules fix (spec section 2, verdicts per
    profile): compared only when the profile set checked holds one of its rules' profiles.
    ``conformance.masks`` says how each part is masked; the catalog lists them by entry."""

    name: str
    rules: tuple[str, ...]
    meaning: str
    blamed: bool = True  # a difference in this part alone is put down to its rules


# Inside a result (a failure's or a success's keys; section 3.5), in the order blame tries them:
# the first part that alone explains a difference is blamed on its rules.
RESULT_PARTS: tuple[Part, ...] = (
    Part("error.message (non-string)", ("P9", "P47"),
         "a failure message that is not a string: the thrown Error's own value (P9) or a guard's (P47); "
         "another implementation may render it as a string (section 3.5)"),
    Part("error.message", ("P9", "P10", "P33", "P35", "P38", "P41", "P47"),
         "a failure's message text (the exact texts of the reference rules; which one is to blame is the "
         "routing's: the rule that gave the message)", blamed=False),
    Part("content[].text (failure)", ("P10", "P33"),
         "the text of a failure's content block that the registry wrote, `Error: ` prefix included (E(m))"),
    Part("error.info", ("P9", "P10"), "a failure's `info`: whether it is there and what it holds (and the `error` of "
         "its `tool/result` event, which carries it, P104)"),
    Part("additionalContexts (key presence)", ("P92",), "an empty `additionalContexts` list against no key"),
    Part("meta (key presence)", ("P92",), "`meta: undefined` against no key"),
    Part("concludesTurn (key presence)", ("P92",), "`concludesTurn` other than `true` on a success against no key"),
)
# An approval request (P39: what it holds; nothing in the core profile says what it is, or that
# it is frozen).
REQUEST_PARTS: tuple[Part, ...] = (
    Part("approval request", ("P39",), "what the approval request holds (agent, toolName, callId, reason, signal)"),
    Part("approval request writes", ("P39",),
         "whether a `mutate` step's write into the request applies (no core rule makes the request frozen)"),
)
# In the view of an execution record an `observe` step records (RECORD_VIEW).
RECORD_PARTS: tuple[Part, ...] = (
    Part("record rootCallId", ("P23",), "the record's `rootCallId`: the input's, else the `callId` (P23)"),
    Part("record signal", ("P52", "P60"), "which signal the record holds, and whether (and why) it aborted"),
)
# Texts the implementation (or its engine) wrote into a JavaScript Error it made, wherever an
# observation carries one: an Error token's `message` (section 3.11: a plain object's own `$js`
# key stays escaped, so the token is never user data), and the failure a run_code program caught
# or ended with. A `message` key of any other object is the value's own data.
ERROR_PARTS: tuple[Part, ...] = (
    Part("Error message", ("P9",),
         "the text of a JavaScript Error an observation carries (a token `{\"$js\": \"error\"}`): the registry's "
         "or the engine's wording, or a thrown message passed on (which rule gave it is the routing's)", blamed=False),
    Part("program failure message", ("P9", "P10"),
         "the message of a failure a run_code program caught (a `settle` step's `error`) or ended with (an `end` "
         "step's `error`): the registry's text of the sub-call's failure, or a thrown message", blamed=False),
)
PARTS: tuple[Part, ...] = RESULT_PARTS + REQUEST_PARTS + RECORD_PARTS + ERROR_PARTS


def _fields(parts: tuple[Part, ...]) -> dict[str, tuple[str, ...]]:
    return {p.name: p.rules for p in parts}


RESULT_FIELDS = _fields(RESULT_PARTS)


@dataclass(frozen=True)
class Probe:
    """A stage boundary as the outermost probe on its seam sees it (``who: null``)."""
    stage: str
    what: str
    value: dict[str, Any]
    rules: tuple[str, ...]
    meaning: str
    fields: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Participant:
    """A kind of scripted participant: the ``stage`` its observations carry."""
    stage: str
    who: str  # how ``who`` is named
    runs: str  # "async" (a returned promise is awaited) or "sync"
    rules: tuple[str, ...]
    meaning: str
    called_by: tuple[str, ...] = ()  # the rules that say it is called when its stage runs


@dataclass(frozen=True)
class Step:
    """A participant observation by ``what``: its value, the stages it may carry."""
    what: str
    value: dict[str, Any]
    rules: tuple[str, ...]
    meaning: str
    stages: tuple[str, ...] | None = None  # None: any participant stage but the reserved ones
    fields: dict[str, tuple[str, ...]] = field(default_factory=dict)


PROBES: tuple[Probe, ...] = (
    Probe("pre-execute", "start", NOTHING, ("P30", "P57"),
          "the `tools/pre-execute` waterfall is dispatched (also for a name that does not resolve, P57)"),
    Probe("pre-execute", "end", {**JS_VALUE, "description": "the waterfall's value as returned (the decision)"},
          ("P30",), "the waterfall settled with a value"),
    Probe("pre-execute", "throw", {**JS_VALUE, "description": "the value thrown"}, ("P34",),
          "the waterfall threw"),
    Probe("approval", "request", APPROVAL_REQUEST, ("P36", "P39"),
          "the approval service is asked: the request it is handed", _fields(REQUEST_PARTS[:1])),
    Probe("approval", "outcome", {**JS_VALUE, "description": "what the service returned, before any check"},
          ("P40", "P43"), "the approval service answered (the shipped one as P43 says)"),
    Probe("approval", "throw", {**JS_VALUE, "description": "the value thrown"}, ("P40",),
          "the approval service threw"),
    Probe("execute", "start", NOTHING, ("P54",), "the `tools/execute` waterfall is dispatched"),
    Probe("execute", "end", {**JS_VALUE, "description": "the waterfall's value as returned, before normalization"},
          ("P62", "P70"), "the waterfall settled with a value (the shipped timeout policy's, when it acts, P70)"),
    Probe("execute", "throw", {**JS_VALUE, "description": "the value thrown"}, ("P65",), "the waterfall threw"),
    Probe("post-execute", "start", RESULT, ("P76",),
          "the `tools/post-execute` waterfall is dispatched with this result (frozen)", RESULT_FIELDS),
    Probe("post-execute", "end", {**JS_VALUE, "description": "the waterfall's value as returned (the decision)"},
          ("P77", "P78"), "the waterfall settled with a value"),
    Probe("post-execute", "throw", {**JS_VALUE, "description": "the value thrown"}, ("P86",),
          "the waterfall threw"),
    Probe("result", "start", RESULT, ("P98", "P99"),
          "the final result is handed to the `tools/result` observers", RESULT_FIELDS),
)

PARTICIPANTS: tuple[Participant, ...] = (
    Participant("pre-execute", "the listener's `id`", "async", ("P5", "P30"), "a `tools/pre-execute` listener",
                ("P5", "P30")),
    Participant("approval", "`approval` (a custom service), or an `approval/request` listener's `id`", "async",
                ("P40", "P43"), "the custom approval service, or a listener the shipped service asks", ("P36", "P43")),
    Participant("guards", "the guard's `id`", "sync", ("P45", "P46", "P50"), "a guard", ("P44", "P45")),
    Participant("execute", "the listener's `id`", "async", ("P5", "P62"), "a `tools/execute` wrapper", ("P5",)),
    Participant("body", "the tool's `ref`", "async", ("P55", "P58"), "a tool body (`tool.execute`)", ("P54", "P58")),
    Participant("post-execute", "the listener's `id`", "async", ("P5", "P76"), "a `tools/post-execute` listener", ("P5",)),
    Participant("finalize", "`<ref>.finalizeContent` (the finalizer's tool)", "sync", ("P93", "P94"),
                "a tool's `finalizeContent`", ("P93", "P97")),
    Participant("result", "the observer's `id`", "sync", ("P100",), "a `tools/result` observer", ("P100",)),
    Participant("classify", "`<ref>.isConcurrencySafe`", "sync", ("P19",), "a tool's concurrency classifier", ("P19",)),
    Participant("render", "`<ref>.render`", "sync", ("P73",), "a tool's `output.render`", ("P73",)),
    Participant("presentationMeta", "`<ref>.presentationMeta`", "sync", ("P73",),
                "a tool's `output.presentationMeta`", ("P73", "P74")),
    Participant("presentCall", "`<ref>.presentCall`", "sync", ("P14",), "a tool's `presentCall` (the UI projection)", ("P14",)),
    Participant("presentResult", "`<ref>.presentResult`", "sync", ("P14",),
                "a tool's `presentResult` (the UI projection)", ("P14",)),
    Participant("getter", "the getter's `id` (`Call.getters`)", "sync", ("P9", "P13", "P23"),
                "an accessor on the call's input, read when the input is (or in a thrown value, read by "
                "message(x) and info(x), P9)", ("P13", "P23")),
    Participant("fs-intent", "the listener's `id`; `start`/`end`/`throw`: the tool's `ref` whose body dispatched",
                "async", ("P5", "P6", "P55", "P71"), "an `fs/write-intent` or `fs/edit-intent` listener", ("P5", "P71")),
    Participant("tool-event", "the tool's `ref`", "async", ("P71",), "a tool body appending its own session event", ("P71",)),
    Participant("code-dispatch-log", "the listener's `id`", "async", ("P5", "P122"),
                "a `tools/code-dispatch-log` listener", ("P5", "P122")),
    Participant("pre-step", "the listener's `id`", "async", ("P5", "P110"), "a loop's step-boundary listener", ("P5", "P110")),
    Participant("program", "the program's name (`run_code`'s `code`)", "async",
                ("P114", "P117", "P118", "P124", "P125", "P128"), "a `run_code` program", ("P114", "P117")),
)

# Stages whose observations are their own kind: no generic step is made there.
_RESERVED = ("program", "tool-event")
_TABLE_RULES = ("P5", "P26", "P45", "P56")

STEPS: tuple[Step, ...] = (
    Step("call", NOTHING, (), "the participant is invoked (before any of its steps)"),
    Step("return", {**JS_VALUE, "description": (
        "what the participant returned; for an async participant, what its returned promise resolved to")},
         (), "the participant returned"),
    Step("throw", {**JS_VALUE, "description": "what the participant threw (a rejected promise: its reason)"},
         ("P55",), "the participant threw"),
    Step("abort", {"type": "string", "description": (
        "the signal aborted: `caller`, `step`, or a name given by `set-signal`")},
         ("P52",), "an `abort` step aborted a signal (with its reason, by default a DOMException `AbortError`)"),
    Step("mutate", _object({"target": {"type": "string", "description": "the step's target path, as written"},
                            "op": {"enum": ["set", "delete", "define"]},
                            "outcome": {"enum": ["applied", "failed"], "description": (
                                "`failed`: the write threw a TypeError (frozen, a primitive, through a nullish value)")}}),
         ("P11", "P23", "P24", "P25", "P39", "P60", "P99"), "a `mutate` step attempted a write",
         fields=_fields(REQUEST_PARTS[1:])),
    Step("observe", {"anyOf": [RECORD_VIEW, RESULT_VIEW, ARGS_VIEW, REQUEST_VIEW, STEP_VIEW, KEPT_VIEW],
                     "description": "by the step's `what`: record, result, args, request, kept; at a step boundary, the step"},
         ("P11", "P17", "P22", "P24", "P25", "P39", "P60", "P110"), "an `observe` step recorded what it was handed",
         fields={**RESULT_FIELDS, **_fields(REQUEST_PARTS[:1]), **_fields(RECORD_PARTS)}),
    Step("defer", {**MESSAGE, "description": "the message given to `record.deferContext`"}, ("P67",),
         "a `defer-context` step"),
    Step("conclude", NOTHING, ("P67",), "a `conclude-turn` step (`record.concludeTurn()`)"),
    Step("register", {"type": "string", "description": "the tool's `ref`"}, _TABLE_RULES,
         "a `register` step registered a tool (before the registration)"),
    Step("unregister", {"type": "string", "description": "the tool's `ref`"}, _TABLE_RULES,
         "an `unregister` step removed a tool (before the removal)"),
    Step("inject", {**MESSAGE, "description": "the message put in the agent's inbox"}, ("P111", "P112"),
         "an `inject` or `steer` step (loop runs)"),
    Step("cancel", _object({"keepInbox": {"type": "boolean"}}), ("P112",), "a `cancel` step (loop runs)"),
    Step("start", _object({"event": {"enum": ["fs/write-intent", "fs/edit-intent"]}, "target": JS_VALUE}),
         ("P71",), "a body's `dispatch` step dispatches a filesystem intent waterfall", ("fs-intent",)),
    Step("end", {**JS_VALUE, "description": "the intent waterfall's value"}, ("P71",),
         "the intent waterfall settled with a value", ("fs-intent",)),
    Step("append", _object({"type": {"type": "string", "description": "the session event's type"}}), ("P71",),
         "an `append` step appended a tool-owned session event", ("tool-event",)),
)
# A run_code program's observations (code-mode): its own kind of participant.
PROGRAM_STEPS: tuple[Step, ...] = (
    Step("start", _object({"bindings": {"type": "array", "items": {"type": "string"}, "description": (
        "the tool names the program can call, sorted by UTF-16 code units")}}), ("P117",),
         "the program starts", ("program",)),
    Step("bind", _object({"n": {"type": "integer", "minimum": 1}, "tool": {"type": "string"},
                          "arguments": JS_VALUE}), ("P117", "P118"),
         "the program calls binding `tool` (its `n`th call)", ("program",)),
    Step("settle", _object({"n": {"type": "integer", "minimum": 1}, "tool": {"type": "string"}},
                           {"value": JS_VALUE, "error": JS_VALUE}), ("P118", "P124", "P125"),
         "the program's call `n` settled: `value` (resolved) or `error` (rejected)", ("program",),
         _fields(ERROR_PARTS[1:])),
    Step("log", {"type": "string"}, ("P128",), "the program logged a line", ("program",)),
    Step("late", NOTHING, ("P125",), "a call the program made after its run ended", ("program",)),
    Step("end", _object({"logs": {"type": "array", "items": {"type": "string"}}},
                        {"value": JS_VALUE, "error": {"type": "object"}}), ("P128",),
         "the program's run ended", ("program",), _fields(ERROR_PARTS[1:])),
    Step("throw", {**JS_VALUE, "description": "what the code runtime's run() rejected with (a `reject` step)"},
         ("P125",), "the code runtime's run() rejected instead of resolving", ("program",)),
)

# The oracle's own reasoning: never compared, never required of an implementation. An
# implementation may send them (the oracle's own server does); any other who-less pair is
# outside the contract.
ORACLE_ONLY: dict[str, tuple[str, ...]] = {
    "entry": ("start", "hide", "snapshot", "collapse"),
    "route": ("to",),
    "checkpoint": ("abort",),
    "dispatch": ("abort", "resolve", "outcome", "hide"),
    "materialize": ("throw", "outcome"),  # outcome: why a value or a wrapper's result became a failure (P63, P72)
    "code-mode": ("submit", "start", "defer", "conclude", "abandon", "append", "hide"),
    "pre-execute": ("deny", "cursor"),
    "approval": ("start", "deny", "abandon", "cursor"),
    "guards": ("start", "end", "throw"),
    "execute": ("defer", "cursor"),
    "body": ("throw",),
    "post-execute": ("outcome", "cursor"),
    "finalize": ("start", "end", "throw", "resolve"),
    "result": ("end",),
    "classify": ("end",),
    "loop": ("synthetic", "end", "throw", "cancel", "commit"),
    "tool-event": ("append",),
    "fs-intent": ("cursor",),  # P6: a next() the shared cursor sent past its caller's neighbour
}
BUILTIN_PARTICIPANTS = oracle_trace.BUILTIN_PARTICIPANTS  # shipped code (the timeout policy): not instrumented

# Participant kinds a call's agent selects (P7: scope filtering of listeners).
SCOPED_STAGES = frozenset({"pre-execute", "execute", "post-execute", "result", "approval", "code-dispatch-log"})

PROBE_POINTS = frozenset((p.stage, p.what) for p in PROBES)
if PROBE_POINTS != oracle_trace.PROBE_POINTS:  # one truth: the oracle's
    raise RuntimeError(f"the observation catalog's probes part from kit.trace.PROBE_POINTS: "
                       f"{sorted(PROBE_POINTS ^ oracle_trace.PROBE_POINTS)}")


def steps_at(stage: str) -> tuple[Step, ...]:
    """The steps a participant observation at ``stage`` may be."""
    if stage == "program":
        return PROGRAM_STEPS
    return tuple(s for s in STEPS if (stage in s.stages if s.stages is not None else stage not in _RESERVED))


def probe(stage: str, what: str) -> Probe | None:
    return next((p for p in PROBES if (p.stage, p.what) == (stage, what)), None)


def step(stage: str, what: str) -> Step | None:
    return next((s for s in steps_at(stage) if s.what == what), None)


def participant(stage: str) -> Participant | None:
    return next((p for p in PARTICIPANTS if p.stage == stage), None)


def value_schema(stage: str, what: str, who: str | None) -> dict[str, Any] | None:
    """The schema the value of a portable observation must meet, None when the contract
    has no such observation."""
    if who is None:
        p = probe(stage, what)
        return p.value if p is not None else None
    s = step(stage, what)
    return s.value if s is not None else None


def witnessed(stage: str, what: str, who: str | None) -> tuple[str, ...]:
    """The rules an observation of this kind witnesses (the catalog's ``rules``)."""
    if who is None:
        p = probe(stage, what)
        return p.rules if p is not None else ()
    s, kind = step(stage, what), participant(stage)
    return tuple(dict.fromkeys([*(s.rules if s else ()), *(kind.rules if kind else ())]))


# ------------------------------------------------------------------ the trace schema's union

_BASE = {
    "call": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "description": (
        "the call the observation belongs to (its `callId`; a run_code sub-call's `<parent>:code:<n>`); "
        "null for what belongs to no call (a loop's own steps)")},
    "stage": {"type": "string", "description": "where in the pipeline (probe) or which kind of participant"},
    "what": {"type": "string", "description": "what happened there"},
    "who": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "description": (
        "null for a probe observation; else the participant, named as its stage's kind says")},
    "value": {"description": "by (stage, what): see the observation catalog"},
    "rules": {"type": "array", "items": {"type": "string"}, "default": [], "description": (
        "the rules the oracle puts the observation down to (informative: an implementation may send [])")},
}


def _by_what(entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``what`` one of ``entries``' keys, and ``value`` the schema of the one it is."""
    out: dict[str, Any] = {"properties": {"what": {"enum": list(entries)}}}
    checks = [{"if": {"properties": {"what": {"const": w}}}, "then": {"properties": {"value": v}}}
              for w, v in entries.items() if v is not ANY_VALUE]
    if checks:
        out["allOf"] = checks
    return out


def _by_stage(stages: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    return {"properties": {"stage": {"enum": list(stages)}},
            "allOf": [{"if": {"properties": {"stage": {"const": s}}}, "then": _by_what(whats)}
                      for s, whats in stages.items()]}


ANY_VALUE: dict[str, Any] = {}


def observation_schema() -> dict[str, Any]:
    """The JSON Schema of one observation: a union discriminated by who reports it (a probe,
    a scripted participant, the oracle alone), then by ``stage`` and ``what``."""
    probes: dict[str, dict[str, dict[str, Any]]] = {}
    for p in PROBES:
        probes.setdefault(p.stage, {})[p.what] = p.value
    for stage, whats in ORACLE_ONLY.items():
        for w in whats:
            probes.setdefault(stage, {}).setdefault(w, ANY_VALUE)
    participants = {k.stage: {s.what: s.value for s in steps_at(k.stage)} for k in PARTICIPANTS}
    builtin = {"execute": {"call": ANY_VALUE, "return": ANY_VALUE}}
    named = {"type": "string", "not": {"enum": sorted(BUILTIN_PARTICIPANTS)}}
    return {
        "type": "object", "title": "Observation",
        "description": ("One observation. `who: null`: a probe's view of a stage boundary, or the oracle's own "
                        "reasoning (never required, never compared); `who` a participant's name: what a scripted "
                        "participant did. The pairs allowed and each value's schema are the observation catalog's "
                        "(catalogs/observations.catalog.json, docs/observations.md)."),
        "properties": _BASE, "required": ["stage", "what"], "additionalProperties": False,
        "allOf": [
            {"if": {"properties": {"who": {"type": "null"}}}, "then": _by_stage(probes)},
            {"if": {"properties": {"who": named}, "required": ["who"]}, "then": _by_stage(participants)},
            {"if": {"properties": {"who": {"enum": sorted(BUILTIN_PARTICIPANTS)}}, "required": ["who"]},
             "then": _by_stage(builtin)},
        ],
    }


def value_defs() -> dict[str, Any]:
    """The definitions the value schemas refer to: a JS value, a tool execution result
    (``catalogs/results.schema.json``), a user message."""

    defs = js_value_defs()
    for name, tp in (("ToolExecutionResult", results.ToolExecutionResult), ("UserMessage", results.UserMessage)):
        schema = TypeAdapter(tp).json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        defs[name] = schema
    return defs


def install(doc: dict[str, Any]) -> dict[str, Any]:
    """A generated schema document holding the trace language (``Observation`` among its
    ``$defs``) with the observation made the catalog's union."""
    defs = doc.setdefault("$defs", {})
    for name, sub in value_defs().items():
        if name in defs and defs[name] != sub:
            raise ValueError(f"two different definitions named {name!r}")
        defs[name] = sub
    defs["Observation"] = observation_schema()
    doc["$defs"] = dict(sorted(defs.items()))
    return doc
