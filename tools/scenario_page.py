"""``docs/scenario-language.md``: the scenario language for implementers, from its schema.

Every element of ``catalogs/scenario.schema.json`` (the pydantic models of
``kit.scenario``) with its meaning, its fields, their types and defaults, after the
semantics a port needs that no single element says. ``catalogs generate`` writes it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from dsh_conformance.kit.scenario import scenario_json_schema

PAGE = "scenario-language.md"

SEMANTICS = """\
## What a port must know beyond the fields

- **Scripts.** Every participant (a getter, a listener, the approval service, a guard, a tool
  body, a renderer, a finalizer, a program) is scripted: a list of steps run in order when it is invoked. A
  script that ends without `return` or `throw` returns `undefined`. Defaults: a waterfall
  listener with no script delegates (`next`, then `return-next`); a `tools/result` observer
  with no script does nothing; **a guard with no script abstains** (returns `undefined`); a
  tool body with no script returns `null`.
- **Which steps are observed.** An invocation is observed as `call`, then one observation for
  each step that makes one, then `return` or `throw`. `abort`, `mutate`, `observe`,
  `defer-context` (`defer`), `conclude-turn` (`conclude`), `register`, `unregister`,
  `inject`/`steer` (`inject`), `cancel`, `dispatch` (`fs-intent` `start`, then `end` or
  `throw`) and `append` (`tool-event` `append`) make one. `next`, `return-next`,
  `set-signal`, `sleep`, `keep`, `return-kept`, `await-signal` and `gate` make none. Each
  observation's value is in the observation catalog ([observations.md](observations.md)).
- **Asynchronous and synchronous participants.** Waterfall listeners (`tools/pre-execute`,
  `tools/execute`, `tools/post-execute`, `approval/request`, `fs/*-intent`,
  `tools/code-dispatch-log`, `agent/pre-step`), tool bodies and the custom approval service
  are **async functions**: a promise they return (`{"$js":"promise","resolves":v}` or
  `{"$js":"promise","rejects":e}`) is awaited before `return` is observed (a rejection is
  observed as `throw` of its reason). Guards, `finalizeContent`, `output.render`,
  `output.presentationMeta`, `tools/result` observers, `isConcurrencySafe` and getters are
  **synchronous**: what they return is the value, a promise included. Steps that wait
  (`next`, `return-next`, `await-signal`, `sleep`, `gate`, `dispatch`) are refused in a
  synchronous participant's script.
- **Abort reasons.** An `abort` step (and `cancel`, `Call.aborted`, `Call.abortAt`,
  `CancelAt`) without a `reason` aborts with what `AbortController.abort()` gives: a
  DOMException named `AbortError` with message "This operation was aborted"
  (`{"$js":"error","class":"DOMException","name":"AbortError","message":"This operation was
  aborted"}` in wire form).
- **Virtual time and timers.** Time is virtual: it starts at 0 and advances only when every
  task is waiting, then jumps to the earliest pending timer (timers due at the same time fire
  in the order they were set). Ready tasks run in FIFO order, so a scenario has one trace.
  `sleep` (and a program's `sleep`) sets a timer of `ms`; `Call.abortAt` and `CancelAt.ms`
  fire at that time after the call or run started, if it is still running; a tool's
  `timeoutMs` (with `timeoutPolicy`) is a deadline on the same clock. A run in which every
  task waits and no timer is pending never settles: such a scenario is invalid.
- **Hostile values.** `{"$js":"hostile"}` stands for a value whose every inspection throws
  (an `Error` with message "hostile value"; `typeof` aside). A snapshot that meets it
  propagates that throw (P13); an async participant that returns one makes the caller's
  `await` throw it (resolving a promise with a value reads its `then`); an async participant
  whose promise resolves to one throws it likewise.
- **Frozen.** "Frozen" in an observed value is `Object.isFrozen` all the way down. A value
  that is not an object (string, number, boolean, `null`, `undefined`, symbol, BigInt) is
  frozen, as `Object.isFrozen` says of every primitive; when nothing was handed, the value
  reads as `undefined` (frozen: false where the observation says so).
- **Values** are JavaScript values in wire form (spec section 3.11): JSON, where an object
  with a `$js` key is a token (`undefined`, `NaN`, `bigint`, `error`, `getter`, ...). A
  number is a double: an integer beyond 2^53 anywhere in a scenario is its nearest double,
  as `JSON.parse` reads it (a body's `9007199254740993` returns `9007199254740992`).
- **One meaning in both kits.** The Python kit (`kit/`) and the JS kit
  (`tools/dsh-adapter/kit/`) interpret every step and token as this page says; `dsh-conformance
  kit agree` runs the starter example written on each over the corpus and generated draws and
  compares their answers, observation for observation. What follows is what a port needs of
  the operations themselves, without reading either kit.

## Writes: what a `mutate` step does

A `mutate` step runs, in strict-mode JavaScript, `root.a.b = value` (`set`), `delete
root.a.b` (`delete`) or `Object.defineProperty(root.a, "b", {value, writable: true,
enumerable: true, configurable: true})` (`define`) on the very object the participant holds,
and observes `applied` or `failed`. Every part of the path but the last is a property read:
an accessor runs (a getter participant's read is observed), a `getter-throws` property
throws its value, a `hostile` value throws `Error("hostile value")`, and a read through
`null` or `undefined` throws a TypeError. The last part is then written, and a write fails
(a TypeError, whose wording is the engine's; the comparison takes any of V8's refusals for
any other) where JavaScript refuses it:

- `set` on a frozen object, on a read-only property (a function's `name` and `length`), on
  an accessor without a setter (every `getter` and `getter-throws` property), or on a
  primitive (a string, number, boolean, symbol or BigInt: "Cannot create property");
- `delete` of a property that is not configurable (an array's `length`, a function's
  `prototype`, a RegExp's `lastIndex`) or of a frozen object's own property; deleting a
  property that is not there succeeds, on a primitive too;
- `define` of a property that is not configurable, on a frozen object, or on a primitive;
- anything through `null` or `undefined`, and anything on a `hostile` value (which throws
  `Error("hostile value")`, not a TypeError).

The roots: `record` (the execution record: its identity fields `callId`, `rootCallId`, `name`,
`agent`, `parent`, `arguments` and `token` never change and cannot be added, P24; other
properties take writes until the record is frozen before `tools/result`, P99), `args` (the
body's or classifier's arguments: the record's frozen snapshot, P25), `result` (what the
participant was handed: frozen where the spec freezes it), `request` (an approval request: a
plain object made for that ask, P39) and `input` (the caller's own object, section 3.2:
`callId`, `name`, `arguments`, `signal`, and `agent`, `rootCallId`, `parent` where the call
has them; never frozen, P23). A write that applies changes the object: a later step of any
participant sees it. A field of `Call.getters` is an accessor of the input without a setter:
`set input.name` fails, `delete input.name` removes it (a later read gives `undefined` and
runs no getter), `define input.name` replaces it with a data property, and a write below it
(`input.name.x`) reads it first (the getter runs).

## What each value token is under each operation

What a token decodes to is the JavaScript value a JS participant would hold; each operation
on it does what it does on that value.

| token | `typeof` | a property read | set / define a property | delete a property | snapshot (P12, P13) |
|---|---|---|---|---|---|
| `undefined` | `"undefined"` | throws TypeError | throws TypeError | throws TypeError | not lossless |
| `NaN`, `Infinity`, `-Infinity`, `-0` | `"number"` | `undefined` | set: TypeError; define: TypeError | succeeds (nothing there) | not lossless |
| `bigint` | `"bigint"` | `undefined` | set: TypeError; define: TypeError | succeeds | not lossless |
| `symbol` | `"symbol"` | `undefined` (`description` aside) | set: TypeError; define: TypeError | succeeds | not lossless |
| `function` | `"function"` | its `name` (read-only), `length` 0 (read-only), `prototype` (not configurable); else `undefined` | applies, but not to `name`, `length` | `name`, `length`: applies; `prototype`: TypeError | not lossless |
| `date` | `"object"` | `undefined` (own) | applies | succeeds | not lossless |
| `instance` | `"object"` | `undefined` (own); a RegExp's `lastIndex` is 0 (not configurable) | applies | succeeds; a RegExp's `lastIndex`: TypeError | not lossless |
| `cycle` | `"object"` | the enclosing container it names (the same object) | as on that container | as on that container | not lossless |
| `hole` | (an array element) | the element reads `undefined` | applies to the array | succeeds | not lossless |
| `array` (with `extra`) | `"object"` | its items, its extra properties, `length` (not configurable) | applies | items, extras: applies; `length`: TypeError | not lossless |
| `object` (`symbolKeys`, `hidden`) | `"object"` | its entries and hidden (non-enumerable) properties | applies | applies | not lossless (with `symbolKeys` or `hidden`); the escape of a `$js` key is lossless |
| `null-proto` | `"object"` | its entries (no inherited ones) | applies | applies | its entries as a plain object |
| `getter`, `getter-throws` (as a property) | - | runs the getter (observed, stage `getter`) / throws its value | set: TypeError (no setter); define: applies | applies (the accessor is gone) | read once: its value, or its throw |
| `error` | `"object"` | `message` (own, a string unless the token says otherwise), `stack`; `name`, `code`, `cause` as the token gives them; else the class's `name` | applies | applies | not lossless |
| `hostile` | `"object"` | throws `Error("hostile value")` | throws `Error("hostile value")` | throws `Error("hostile value")` | throws `Error("hostile value")` |
| `promise` | `"object"` | `undefined` (own) | applies | succeeds | not lossless |
| `shared` | as its value | the one object it names, wherever it is reached | as on that object | as on that object | copied at each place it is reached |

Frozen objects refuse every set, define and delete of an own property and every addition.

## Programs: what each step does

A `run_code` call's `code` names one of `programs`; the kit's code runtime (`kit/program.py`,
and the JS kit's `kit/program.mjs`, step for step the same) runs it against the `tools`
namespace the bridge hands over, and records what the program sees under stage `program` of
the `run_code` call (`who`: the program's name):

- **start**: `start` observes the binding names, sorted as JavaScript sorts strings. No
  program of that name: the run resolves at once with `{logs: [], error: {kind: "exception",
  message: 'the scenario has no program "<code>"'}}`.
- **before each step**: when the run's signal is aborted the program stops there; the run
  resolves with `{logs, error: {kind: "abort", message: "the run was aborted"}}` (P125) at
  the abort itself, and the calls already made go on settling.
- `call`: `bind` observes `{n, tool, arguments}` (`n` counts the program's calls, rejected
  ones too) and calls `tools[tool](arguments)`; a name the namespace lacks rejects with
  `TypeError("tools.<tool> is not a function")`. How the call settles is observed as `settle`
  `{n, tool, value}` or `{n, tool, error}` (error: `{name: "ToolCallError", toolName,
  message}`, or `{name: "TypeError", message}` for a missing binding) by the runtime's own
  reaction, whether or not the program awaits it. Without `as` the program awaits it at once;
  with `as` it keeps the pending call and goes on.
- `await`: waits for the kept call. An abort of the run's signal while waiting stops the
  program (as above). A rejection ends the program with a failure of kind `exception` and the
  rejection's message, unless `catch` (then the program goes on).
- `log`: appends the line to the run's logs; `log` observes it.
- `sleep`: waits `ms` of virtual time; an abort of the run's signal meanwhile stops the program.
- `return`: the run resolves with `{logs}` (`value` undefined) or `{logs, value}`, its
  lossless-JSON snapshot; a value that is not lossless JSON gives `{logs, error: {kind:
  "invalid-output", message: "the program's completion value is not lossless JSON"}}`.
  Ending without a `return` is `return` of `undefined`.
- `throw`: the run resolves with `{logs, error: {kind: "exception", message}}`.
- `fail`: the run resolves with `{logs, error: {kind, message}}`.
- `reject`: `run()` rejects with `thrown` (`throw` observes it, and no `end`): a crashed runtime.
- **end**: `end` observes what `run()` resolves with (P128).
- `afterSettle`: once the run's signal aborts (the program settled, or the run was aborted),
  `late` is observed and these steps run as a continuation: a `call` is observed (`bind`,
  `settle`) and rejected, never dispatched (P118); an `await` waits until its call settled
  (of a call the program never reached: nothing), whatever the outcome; a `sleep` there is
  skipped (the continuation's calls are refused whenever they come).

## Programs: timing

Where a program's call settles among its other steps, and where the end of a run lands
against a sub-call still in its start, is JavaScript's microtask order, which the spec leaves
open. No verdict depends on it: the comparison takes a program's settlements by call number
(a lane of their own), a sub-call's `tool/code-dispatch` event has a lane of its own (P122),
and **generated programs are deterministic by construction: no generated program can end
while a call it started is still in its start**. Every call it starts is awaited before any
step that may end it (a `return`, `throw`, `fail` or `reject`, an await that does not
`catch`, the end of its steps), or a `sleep` lies between the call and that step, so that the
end lands in virtual time once every start is done (`strategies/code_mode.py`,
`strategies/code_side.py`; the tests: `tests/test_kit_classes.py`, over whole generated
scenarios). The programs of `strategies/code_mode.py` await every call and leave no
continuation; a side run's program that leaves a call in flight (`pv-abort`, `pv-crash`)
sleeps before its run ends by an abort or a crash. A corpus case whose program leaves a call
in flight or a continuation orders them with `sleep` steps in the same way, so that a port
may take any number of microtask turns between a settlement and the next stage.
"""


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " \\| ".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(dict.fromkeys(_type(s) for s in schema[key]))
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema and isinstance(schema["additionalProperties"], dict):
        return f"map of {_type(schema['additionalProperties'])}"
    return str(kind) if kind else "JS value"


def _text(s: str) -> str:
    """A schema description as Markdown: RST literals become code spans, lines join."""
    s = s.replace("``", "`")
    return re.sub(r"\s*\n\s*", " ", s).strip()


def _default(field: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" in field:
        return f"`{json.dumps(field['default'], ensure_ascii=False)}`"
    return "see description"


def _element(name: str, schema: dict[str, Any]) -> list[str]:
    out = [f"### `{name}`", ""]
    if schema.get("description"):
        out += [_text(schema["description"]), ""]
    props = schema.get("properties", {})
    if props:
        required = set(schema.get("required", []))
        out += ["| field | type | default | meaning |", "|---|---|---|---|"]
        for key, field in props.items():
            meaning = (_text(field.get("description", "")) or "-").replace("|", "\\|")
            out.append(f"| `{key}` | {_type(field)} | {_default(field, key in required)} | {meaning} |")
        out.append("")
    return out


def render_page() -> str:
    schema = scenario_json_schema()
    defs = schema.get("$defs", {})
    out = ["<!-- generated by `dsh-conformance catalogs generate` from kit/scenario.py; do not edit -->",
           "# The scenario language, for implementers", "",
           "A scenario is one JSON document (`catalogs/scenario.schema.json`) that fully determines a run: the "
           "registry (tools, listeners, guards, the approval service), the agents and their scopes, the "
           "participants' scripts and the calls. An implementation under test is sent scenarios and answers each "
           "with a trace (see [writing-an-adapter.md](writing-an-adapter.md) and "
           "[observations.md](observations.md)). This page lists every element, with what it means and its "
           "defaults; a field left out takes its default.", "", SEMANTICS, "## Elements", ""]
    out += _element("Scenario", schema)
    for name in sorted(defs):
        out += _element(name, defs[name])
    return "\n".join(out).rstrip("\n") + "\n"
