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
  with a `$js` key is a token (`undefined`, `NaN`, `bigint`, `error`, `getter`, ...).
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
