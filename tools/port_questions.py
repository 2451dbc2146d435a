"""The last section of ``docs/writing-an-adapter.md``: the questions a port author asks, each
answered from the code that decides it (issue 44), so that the page cannot drift from it:
the identity fields (``kit.record.IDENTITY``), the engine's texts of refused writes
(``kit.engine_texts``) and the prefixes the comparison accepts for them
(``oracle.texts.WRITE_REFUSALS``), the pipeline's own signal names
(``kit.scenario_checks``)."""

from __future__ import annotations

from dsh_conformance.kit import engine_texts
from dsh_conformance.kit.record import IDENTITY
from dsh_conformance.oracle import texts

KEY = "K"  # the property a refused write names, in the table


def refusal_rows() -> list[tuple[str, str]]:
    """(the write, the TypeError's message) for each text the kit's interpreter throws."""
    return [
        ("assign an existing read-only property (an identity field, a frozen record's)", engine_texts.frozen_set(KEY)),
        ("add a property to a non-extensible object (a frozen record)", engine_texts.frozen_add(KEY)),
        ("delete a non-configurable property", engine_texts.frozen_delete(KEY)),
        ("redefine a non-configurable property", engine_texts.frozen_define(KEY)),
        ("assign a property of `undefined` (`null` alike) or of another non-object",
         engine_texts.nullish_set("undefined", KEY)),
        ("read through `undefined` (`null` alike) on the way to the property", engine_texts.nullish_read("undefined", KEY)),
        ("delete a property of `undefined` or `null`", engine_texts.NULLISH_DELETE),
        ("define a property on a primitive, `undefined` or `null`", engine_texts.DEFINE_ON_NON_OBJECT),
        ("assign a property of a primitive (here a string `s`)", engine_texts.primitive_create(KEY, "string", "s")),
        ("assign an input field that is a getter", engine_texts.getter_only(KEY)),
    ]


def render() -> str:
    identity = ", ".join(f"`{k}`" for k in IDENTITY)
    rows = "\n".join(f"| {what} | `{text}` |" for what, text in refusal_rows())
    prefixes = ", ".join(f"`{p.strip()}`" for p in texts.WRITE_REFUSALS)
    null_block = engine_texts.nullish_read("null", "type")
    return f"""
## 5. A port author's questions

**May participants add properties to the execution record?** Yes, any property that is not
an identity field, until the record is frozen at the end of the call (P99): a participant may
add, replace or delete it, and `signal` may be replaced (P60). The identity fields are
{identity} (P24). Assigning, deleting or redefining one of them fails with a TypeError, and
so does **adding `agent` or `parent`** to a record created without them, while adding any
other property succeeds. So the record can be neither a plain object (rc.8's, listed as its
P24 departure) nor a non-extensible one: a Proxy whose `set`, `defineProperty` and
`deleteProperty` traps throw for the identity keys does it. Deleting a key the record does
not have succeeds, as in strict-mode JavaScript. Each write is observed as `mutate` with its
outcome, `applied` or `failed`.

**The texts of refused writes.** A write the kit's interpreter refuses throws a TypeError
with V8's wording (`kit/engine_texts.py`; `{KEY}` stands for the property):

| write | message |
|---|---|
{rows}

The wording is the engine's (spec section 1): under `core` failure texts are not compared,
and under `reference` any message that begins with one of {prefixes} stands for any other
(`oracle/texts.py`, `WRITE_REFUSALS`). A trap that only returns `false` makes the engine
throw `'set' on proxy: trap returned falsish ...`, which is none of them: throw one of the
messages above yourself.

**A null feedback block throws.** A `block` decision's failure message is built from its
`feedback` (P84), reading each block's `type`: a `null` or `undefined` entry (or a hole)
throws `TypeError: {null_block}` (`undefined` alike), and the post-execute stage fails with
it as it does for feedback that is not an array.

**Duplicate registration** is out of scope (spec section 1.3, revision 3): registration-time
validation, the refusal of a name already registered in the same layer included, is not
tested; scenarios register a name at most once per layer and compare nothing a duplicate
registration does. A registration your implementation refuses anyway is answered as a skip
(the kits' `registerDeclared`), and two participants of one scenario with the same id are
`skipped` (`kit/world.mjs`).

**The deadline signal's name.** The shipped timeout policy (P70) puts a deadline signal on
the record for a tool that declares `timeoutMs`; traces name it `deadline:<call>:<n>`, `<call>`
the call id and `<n>` the virtual time in ms when the policy armed it (`oracle/pipeline.py`).
A JavaScript binding names such a signal of its own with
`` w.signalNames.set(signal, `deadline:${{callId}}:${{w.clock.now}}`) ``. The names `caller`, `step`, `caller:*`, `deadline:*`,
`fused:*` and `turn-N` are the pipeline's: a scenario's own signals never take them.

**The shipped approval service watches the request's signal before its answerers run**
(P43). It appends `approval/asked`; when the request's signal is already aborted the outcome
is `cancelled` and no answerer runs; otherwise it subscribes to the signal's abort first and
then starts the `approval/request` waterfall, so an answerer that aborts the signal in its
first step makes the outcome `cancelled`, and a later answer is discarded
(`oracle/approval.py`). An implementation that starts the answerers first misses that abort.

**A binding records the results of the calls it runs itself.** The JavaScript kit records
the final result of each direct call it starts (`kit/run.mjs`). The calls a binding starts
(a loop batch's calls, a `run_code` program's sub-calls) are recorded only when the binding
calls `w.recordResult(callId, result)`: without it their results are missing from the trace.
For such a call, also `w.inputs.set(subCallId, input)` (the caller's input object, which
`input` mutations write and the `caller` signal is read from; the kit sets it for direct calls
only), and set `w.classifying = subCallId` while the sub-call's concurrency classifier runs
(restoring the previous value after), so that the scripted `isConcurrencySafe` records its
observation for that sub-call. The DSH binding does all three in `lib/loop.mjs`.

**Session events in a direct run.** There is no loop session: each agent's session records
what the pipeline appends (the shipped approval service's `approval/asked` and
`approval/decided`, a body's `append` steps), and the binding pushes each onto
`w.trace.events` as `{{agent, seq, type, data, sourceEventSeqs, at}}`: `agent` the scenario's
agent id, `seq` counting that agent's events from 1, `data` in the oracle's shapes
(`eventData(w, type, data)` of `kit/events.mjs`: approval ids renumbered `approval-1`, ...),
`sourceEventSeqs` or `null`, and `at` the number of observations recorded before the event
(`w.trace.observations.length`). A loop run reports its step's window instead
(`loopEvents(w, agentId, events)`).
"""


__all__ = ["render", "refusal_rows"]
