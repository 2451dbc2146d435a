"""The scenario language: one declarative JSON document that fully determines a run.

A scenario declares the registry (tools, listeners, guards, the approval service), the
agents and their scopes, and the calls: direct ``execute()`` calls or one agent-loop
step. Every participant's behavior is a *script*, a list of steps the participant
performs when it is invoked (call ``next()``, return a value, throw, attempt a mutation,
defer a context, abort a signal, ...). Scripts are declarative because guards,
``finalizeContent`` and ``render`` are synchronous in DSH: an adapter must be able to run
them in-process without calling back to Python. Values are JS values in wire form
(section 3.11 tokens), see ``kit.jsvalue``.

The pydantic models below are the single source of the scenario's JSON Schema
(``catalogs/scenario.schema.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from .jsonio import InputLimitError, as_doubles, check_limits, load_file
from .scenario_checks import CODE_DISPATCH_LOG, FS_INTENTS, ScenarioError, check_references
from .schema_doc import schema_document
from .session_events import TodoWriteData

SCENARIO_FORMAT = "dsh-conformance/scenario/v1"

JsValue = Any


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


# ----------------------------------------------------------------------------- steps

class Next(_Model):
    """Call the waterfall's ``next()`` and keep its result (P5). With ``catch`` a throw
    from ``next()`` is caught and kept as the step's outcome instead of propagating."""
    do: Literal["next"]
    catch: bool = Field(default=False, description="catch a throw of next() and keep `undefined` as its value")


class Return(_Model):
    """Return ``value`` (a JS value; tokens allowed) and stop."""
    do: Literal["return"]
    value: JsValue = Field(default=None, description="the value returned (a JS value; tokens allowed)")


class ReturnNext(_Model):
    """Return what the latest ``next()`` returned (a delegating listener)."""
    do: Literal["return-next"]


class Throw(_Model):
    """Throw ``value``: an ``{"$js":"error",...}`` token or any other value."""
    do: Literal["throw"]
    value: JsValue = Field(default=None, description="the value thrown (an error token or any JS value)")




class Mutate(_Model):
    """Attempt a write. ``target`` is a dotted path from a root: ``record`` (the execution
    record), ``args`` (the body's arguments parameter), ``result`` (the result handed to
    this participant), ``request`` (an approval request), ``input`` (the caller's input
    object). A failed write raises a TypeError; with ``catch`` (default) the participant
    catches it and goes on, otherwise it becomes the participant's throw. Replace the
    record's signal with ``set-signal``: writing ``record.signal`` is meant for a frozen
    record (P99); before that, storing a non-signal there leaves the caller contract."""
    do: Literal["mutate"]
    target: str = Field(description="a dotted path from a root: record, args, result, request or input")
    op: Literal["set", "delete", "define"] = Field(default="set", description="the write: set, delete, or Object.defineProperty")
    value: JsValue = Field(default=None, description="the value written (set, define)")
    catch: bool = Field(default=True, description="catch the TypeError a refused write throws (false: it is the participant's throw)")


class SetSignal(_Model):
    """Assign ``record.signal``: a fresh signal named ``signal`` (created on first use),
    or ``"restore"`` for the signal this participant replaced (P60). The pipeline's own
    names (``caller``, ``step``, ``caller:*``, ``deadline:*``, ``fused:*``, ``turn-N``) are
    refused. Makes no observation of its own (an ``observe record`` shows the signal's name
    as ``signal.is``); on a frozen record the assignment throws a TypeError."""
    do: Literal["set-signal"]
    signal: str = Field(description="the signal's name, or `restore`")


class Abort(_Model):
    """Abort a signal: ``"caller"`` (the call's own caller signal; in a loop scenario the
    step's signal; for a ``run_code`` sub-call, the run's signal, P119), ``"step"`` (loop
    scenarios: the step's signal, whichever call the participant runs for) or a named
    signal made by ``set-signal``. ``reason`` is the abort reason; without it (or null) the
    reason is what ``AbortController.abort()`` gives: a DOMException named ``AbortError``
    with message "This operation was aborted". The step makes an observation of its own
    (``abort``, value: the signal's name) before the signal aborts; the abort runs the
    signal's listeners synchronously. Aborting a signal that is already aborted changes
    nothing."""
    do: Literal["abort"]
    signal: str = Field(default="caller", description="the signal to abort")
    reason: JsValue = Field(default=None, description="the abort reason (a JS value); null: a DOMException AbortError, \"This operation was aborted\"")


class DeferContext(_Model):
    """``record.deferContext(message)`` (P67). ``message`` is a user message (section 3.7)."""
    do: Literal["defer-context"]
    message: JsValue = Field(description="the user message to defer (section 3.7)")


class ConcludeTurn(_Model):
    """``record.concludeTurn()`` (P67)."""
    do: Literal["conclude-turn"]


class AwaitSignal(_Model):
    """Wait until the participant's signal aborts (the record's signal as it is now; for
    an approval answerer, the request's signal). Asynchronous participants only."""
    do: Literal["await-signal"]


class Sleep(_Model):
    """Wait ``ms`` milliseconds of virtual time. Asynchronous participants only. Virtual
    time starts at 0 when the run starts and advances only when nothing else can run: every
    task is waiting, then the clock jumps to the earliest pending timer (ties in the order
    the timers were set) and that timer fires. A sleep of 0 still yields to every task ready
    before it. Makes no observation of its own."""
    do: Literal["sleep"]
    ms: int = Field(description="milliseconds of virtual time", ge=0)


class Gate(_Model):
    """Loop scenarios: wait until ``run.release`` lets this call's body go on, so that
    overlapping bodies finish in a scripted order. Asynchronous participants only."""
    do: Literal["gate"]


class Register(_Model):
    """(Re-)register the declared tool, listener or guard with id ``ref``."""
    do: Literal["register"]
    ref: str = Field(description="the id (tool `id`/`name`, listener or guard id) of the declared participant")


class Unregister(_Model):
    """Unregister the declared tool, listener or guard with id ``ref``."""
    do: Literal["unregister"]
    ref: str = Field(description="the id (tool `id`/`name`, listener or guard id) of the declared participant")


class Inject(_Model):
    """Loop scenarios: ``agent.inject(message)`` (joins the next-step FIFO, P111)."""
    do: Literal["inject", "steer"]
    message: JsValue = Field(description="the user message for the agent's inbox")


class Observe(_Model):
    """Record what the participant sees (an ``observe`` observation; its value's shapes are
    the observation catalog's, docs/observations.md): ``record`` (identity, arguments,
    signal state), ``result`` (the result it was handed, and whether it is deeply frozen),
    ``args`` (the arguments it was handed, whether they are the record's very
    ``arguments`` object, whether deeply frozen) or ``request`` (an approval request, or a
    step boundary's payload), or ``kept`` (the signal a ``keep`` step of the same call kept
    under ``name``: which it is, whether and why it aborted, as it is now; P60). "Frozen" is ``Object.isFrozen`` applied all the way down: a
    value that is not an object (a string, a number, ``undefined``, ``null``, a symbol, a
    BigInt) is frozen, as ``Object.isFrozen`` says of every primitive; nothing handed reads
    as ``undefined``."""
    do: Literal["observe"]
    what: Literal["record", "result", "request", "args", "kept"] = Field(default="record", description="what to record (the observation catalog gives each value's shape)")
    name: str | None = Field(default=None, description="`kept`: the name a `keep` step kept the signal under")

    @model_validator(mode="after")
    def _kept_is_named(self) -> "Observe":
        if (self.what == "kept") != (self.name is not None):
            raise ValueError("`name` goes with `what: kept`, and only with it")
        return self




class Dispatch(_Model):
    """Tool bodies: dispatch a filesystem intent waterfall as the filesystem tools' bodies do,
    ``ctx.waterfall(event, target, record, () => undefined)`` (P71). The listeners on
    ``event`` run in order (P5, P6); what the waterfall resolves to is observed. A throw from
    it propagates into the body, where it is the body's throw (P55), unless ``catch``."""
    do: Literal["dispatch"]
    event: Literal["fs/write-intent", "fs/edit-intent"] = Field(description="the intent waterfall to dispatch")
    target: JsValue = Field(description="the intent's target (handed to the listeners as `args`)", default_factory=lambda: {"path": "notes.txt"})
    catch: bool = Field(default=False, description="catch a throw of the waterfall instead of letting it be the body's")


class Append(_Model):
    """Tool bodies: append a tool-owned session event to the calling agent's session,
    ``record.agent.session.append(type, data)``, as the todo tool's body writes ``todo/write``
    (P71). A call without an agent has no session: the step throws an Error."""
    do: Literal["append"]
    type: Literal["todo/write"] = Field(default="todo/write", description="the session event's type")
    data: TodoWriteData = Field(description="the event's payload")


class Keep(_Model):
    """Keep an object under ``name`` for a later ``return-kept`` (by any participant of any
    call): the result this participant was handed (``result``; a wrapper's is its latest
    ``next()`` value), or the latest ``next()`` value (``next``). What is kept is that very
    object, so another call's wrapper can return a result the registry built for this
    execution (P63: it counts as authored there). ``signal`` keeps the record's signal as it
    is now (a body's: the fused signal, P60), with its name as ``observe record`` gives it,
    for a later ``observe`` ``kept`` by a participant of the same call (kept signals are per
    call, so parallel calls never see each other's): whether a signal the body was handed
    still follows its sources after the body. Makes no observation of its own."""
    do: Literal["keep"]
    what: Literal["result", "next", "signal"] = Field(default="result", description="what to keep: the result handed (`result`), the latest next() value (`next`), or the record's signal as it is now (`signal`, for `observe` `kept`)")
    name: str = Field(description="the name to keep it under")


class ReturnKept(_Model):
    """Return the object kept under ``name`` itself (``undefined`` when nothing was kept)."""
    do: Literal["return-kept"]
    name: str = Field(description="the name the object was kept under")


class Cancel(_Model):
    """Loop scenarios: the agent's ``cancel(reason, {keepInbox})``. Without ``keepInbox``
    the next-step and next-turn queues are cleared first (P112), then the step's signal
    aborts; with it only the signal aborts (what ``abort`` of the caller does in a loop)."""
    do: Literal["cancel"]
    keepInbox: bool = Field(default=False, description="keep the queued contexts (only the step's signal aborts)")
    reason: JsValue = Field(default=None, description="the cancel reason; null: a DOMException AbortError")


Step = Annotated[
    Union[Next, Return, ReturnNext, Throw, Mutate, SetSignal, Abort, DeferContext, ConcludeTurn,
          AwaitSignal, Sleep, Gate, Register, Unregister, Inject, Observe, Dispatch, Append,
          Keep, ReturnKept, Cancel],
    Field(discriminator="do"),
]


# ----------------------------------------------------------------------------- programs
#
# Code Mode (section 5.15): a ``run_code`` call's ``code`` names one of the scenario's
# programs. A program is never real code: the scenario's code runtime (``codeRuntime``)
# interprets its steps against the bindings the bridge hands it (P117), the same way in
# the oracle and in every adapter, and records what the program sees.


class ProgramCall(_Model):
    """Call the binding ``tool`` with ``arguments`` (a JS value in wire form; tokens allowed;
    ``{"$js":"undefined"}`` calls it without an argument). Without ``as`` the program awaits
    the call at once; with ``as`` it keeps the pending call under that handle and goes on
    (``await`` it later, or never). A rejection the program awaits fails the program unless
    ``catch``."""
    do: Literal["call"]
    tool: str = Field(description="the binding (tool name) to call")
    arguments: JsValue = Field(description="the call's argument (a JS value)", default_factory=dict)
    as_: str | None = Field(description="keep the pending call under this handle and go on; none: await it at once", default=None, alias="as")
    catch: bool = Field(default=False, description="catch a rejection instead of failing the program")


class ProgramAwait(_Model):
    """Await the call kept under ``handle``. A rejection fails the program unless ``catch``."""
    do: Literal["await"]
    handle: str = Field(description="the handle a `call` step kept")
    catch: bool = Field(default=False, description="catch a rejection instead of failing the program")


class ProgramLog(_Model):
    """Print one line: it joins the run's logs (P128)."""
    do: Literal["log"]
    text: str = Field(description="the line printed")


class ProgramReturn(_Model):
    """End the program with ``value`` as its completion value (``undefined`` by default). A
    value that is not lossless JSON fails the run (kind ``invalid-output``)."""
    do: Literal["return"]
    value: JsValue = Field(description="the completion value", default_factory=lambda: {"$js": "undefined"})


class ProgramThrow(_Model):
    """The program throws an Error with ``message`` (a run failure of kind ``exception``)."""
    do: Literal["throw"]
    message: str = Field(default="boom", description="the thrown Error's message")


class ProgramFail(_Model):
    """The runtime reports a failure of ``kind`` with ``message`` (a budget expiry, the
    substrate dying, ...): the run ends there (P128)."""
    do: Literal["fail"]
    kind: Literal["exception", "timeout", "abort", "worker-exit", "invalid-output", "output-limit"] = Field(description="the run failure's kind (P128)")
    message: str = Field(default="the run failed", description="the failure's message")


class ProgramReject(_Model):
    """The code runtime's ``run()`` itself rejects with ``thrown`` (a crashed runtime, not a
    failure it reports): the program stops there, its calls already made go on, and the
    ``run_code`` body waits for every started sub-call before the rejection reaches the
    caller as the body's throw (P125, P9)."""
    do: Literal["reject"]
    thrown: JsValue = Field(description="what run() rejects with (a JS value; an Error token by default)",
                            default_factory=lambda: {"$js": "error", "class": "Error", "message": "the code runtime crashed"})


class ProgramSleep(_Model):
    """Wait ``ms`` milliseconds of virtual time."""
    do: Literal["sleep"]
    ms: int = Field(description="milliseconds of virtual time", ge=0)


ProgramStep = Annotated[
    Union[ProgramCall, ProgramAwait, ProgramLog, ProgramReturn, ProgramThrow, ProgramFail, ProgramReject,
          ProgramSleep],
    Field(discriminator="do"),
]


class Program(_Model):
    """A declarative program for ``run_code`` (P117-P128). ``steps`` run when the code
    runtime starts the program; ending without ``return`` completes with ``undefined``.
    ``afterSettle`` steps run once the run is over (its signal aborted: the program settled,
    or the run was aborted), as a continuation the program left behind would: a binding
    called then is not dispatched (P118), and an awaited handle shows how its call ended
    (abandoned, discarded, P125)."""
    id: str = Field(description="the program's name: a run_code call's `code` argument names it")
    steps: list[ProgramStep] = Field(description="what the program does when started", default_factory=list)
    afterSettle: list[ProgramStep] = Field(description="what a continuation it left behind does once the run is over", default_factory=list)




class Behavior(_Model):
    """What a participant does when invoked. ``steps`` by default; ``byCall`` picks a
    script by call id; ``perInvocation`` by how many times this participant was invoked
    before (0-based; the last entry repeats). ``byCall`` wins over ``perInvocation``.

    Each invocation is observed as ``call`` (before the first step), then one observation
    per step that makes one (``abort``, ``mutate``, ``observe``, ``defer-context``,
    ``conclude-turn``, ``register``, ``unregister``, ``inject``/``steer``, ``cancel``,
    ``dispatch``, ``append``), then ``return`` or ``throw``. ``next``, ``return-next``,
    ``set-signal``, ``sleep``, ``keep``, ``return-kept``, ``await-signal`` and ``gate`` make
    none of their own. Steps run in order; a script that ends without ``return`` or
    ``throw`` returns ``undefined``. Asynchronous participants (waterfall listeners, tool
    bodies, the approval service) are async functions: a promise token they return is
    awaited (``resolves`` is the value, ``rejects`` a throw) before ``return`` is observed,
    and a ``hostile`` value they return makes the caller's await throw (resolving a promise
    with it reads its ``then``). Synchronous participants (guards, ``finalizeContent``,
    ``render``, ``presentationMeta``, ``tools/result`` observers, ``isConcurrencySafe``,
    getters) return what they return: a promise is the value itself."""
    steps: list[Step] = Field(description="the script run by default", default_factory=list)
    byCall: dict[str, list[Step]] = Field(description="scripts by call id (wins over the others)", default_factory=dict)
    perInvocation: list[list[Step]] = Field(description="scripts by how many times the participant was invoked before (0-based; the last repeats)", default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, data: Any) -> Any:
        # A bare list of steps is the common case: accept it as ``{"steps": [...]}``.
        if isinstance(data, list):
            return {"steps": data}
        return data

    def script_for(self, call_id: str | None, invocation: int) -> list[Any]:
        if call_id is not None and call_id in self.byCall:
            return list(self.byCall[call_id])
        if self.perInvocation:
            return list(self.perInvocation[min(invocation, len(self.perInvocation) - 1)])
        return list(self.steps)

    def all_steps(self) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = [(f"steps[{i}]", s) for i, s in enumerate(self.steps)]
        for cid, steps in self.byCall.items():
            out += [(f"byCall.{cid}[{i}]", s) for i, s in enumerate(steps)]
        for n, steps in enumerate(self.perInvocation):
            out += [(f"perInvocation[{n}][{i}]", s) for i, s in enumerate(steps)]
        return out


def _as_behavior(v: Any) -> "Behavior":
    return Behavior(steps=v) if isinstance(v, list) else v


Script = Annotated[Union[list[Step], Behavior], AfterValidator(_as_behavior)]
"""A participant's behavior: a list of steps, or a ``Behavior`` object."""

DELEGATE: list[dict[str, str]] = [{"do": "next"}, {"do": "return-next"}]

# ----------------------------------------------------------------------------- participants


class Output(_Model):
    """The definition's ``output``: schema, ``render`` and optional ``presentationMeta``.
    Without ``render`` the content is one text block holding ``JSON.stringify(value)``.
    ``render`` and ``presentationMeta`` are synchronous scripts."""
    schema_: dict[str, Any] = Field(description="the output's JSON Schema (P72, P73)", default_factory=dict, alias="schema")
    render: Script | None = Field(default=None, description="content from the value (synchronous); none: JSON.stringify(value) as one text block")
    presentationMeta: Script | None = Field(default=None, description="the result's `meta` from the value (synchronous); none: no meta")


class Tool(_Model):
    """A tool definition. ``define`` makes it a ``defineTool`` tool whose body validates
    the arguments against ``parameters`` first (P75); otherwise it is a raw definition.
    The body is asynchronous (its script runs as an async function; by default it returns
    ``null``); ``finalizeContent`` and ``concurrencySafe`` are synchronous scripts, absent
    by default (no finalizer; the tool is not concurrency-safe). ``timeoutMs`` applies
    only when the scenario installs the timeout policy (``timeoutPolicy``). ``scope``
    registers it in an agent's scope instead of the global one; ``registered: false``
    declares it unregistered until a ``register`` step."""
    id: str | None = Field(default=None, description="the tool's id when two definitions share a name (who of its observations: `id`, else `name`)")
    name: str = Field(description="the tool name calls use")
    define: bool = Field(default=False, description="a defineTool tool (validates arguments against `parameters`, P75)")
    description: str = Field(default="a scripted tool", description="the description offered to the model")
    parameters: dict[str, Any] = Field(description="the arguments' JSON Schema", default_factory=lambda: {"type": "object"})
    output: Output = Field(description="the output contract (schema, render, presentationMeta)", default_factory=Output)
    body: Script = Field(description="the body's script (asynchronous); by default it returns null", default_factory=lambda: Behavior(steps=[Return(do="return", value=None)]))
    finalizeContent: Script | None = Field(default=None, description="the finalizer's script (synchronous); none: no finalizer")
    concurrencySafe: Script | None = Field(default=None, description="isConcurrencySafe's script (synchronous); none: not concurrency-safe")
    timeoutMs: int | None = Field(description="the timeout the timeout policy applies (P70)", default=None, gt=0)
    presentCall: Script | None = Field(default=None, description="UI projection: never called by the pipeline (P14)")
    presentResult: Script | None = Field(default=None, description="UI projection: never called by the pipeline (P14)")
    scope: str | None = Field(default=None, description="the agent scope it is registered in; null: global")
    registered: bool = Field(default=True, description="registered at the start (false: only after a `register` step)")

    @property
    def ref(self) -> str:
        return self.id or self.name


EVENTS = ("tools/pre-execute", "tools/execute", "tools/post-execute", "tools/result",
          "approval/request", *FS_INTENTS, CODE_DISPATCH_LOG, "agent/pre-step")


class Listener(_Model):
    """A listener on a live event. Waterfall listeners are asynchronous and default to
    delegating (``next()`` then return its result); ``tools/result`` observers are
    synchronous and default to doing nothing (returning ``undefined``).
    A filesystem intent listener (``fs/write-intent``, ``fs/edit-intent``) is handed the
    target as ``args`` and the body's record; it cannot be scoped: a body dispatches the
    intent without naming an agent, and which scoped listeners that selects is outside
    the spec. A ``tools/code-dispatch-log`` listener (P122, P123) is handed the ``run_code``
    record and, as ``result``, the settled sub-call ``{subCallId, name, isError, content}``;
    what it returns is the content ``tool/code-dispatch`` logs (by default, delegating, the
    unchanged content). An ``agent/pre-step`` listener (loop runs) is handed the step boundary's
    payload as ``request`` (``{messages, turn, step}``; ``observe request`` shows it) and
    decides ``{kind:"enter", messages}`` or ``{kind:"reject"}`` (P110); it runs at the
    boundaries after the tool step (the first step's boundary is the harness's, before the
    scenario's window) and cannot be scoped either."""
    id: str = Field(description="the listener's id (who of its observations)")
    event: Literal["tools/pre-execute", "tools/execute", "tools/post-execute", "tools/result",
                   "approval/request", "fs/write-intent", "fs/edit-intent", "tools/code-dispatch-log",
                   "agent/pre-step"] = Field(description="the live event it listens to")
    scope: str | None = Field(default=None, description="the agent scope it is registered in; null: unscoped")
    global_: bool = Field(description="register it in the global layer (P7, P45)", default=False, alias="global")
    prepend: bool = Field(default=False, description="register it in front of the listeners registered before it (P5)")
    registered: bool = Field(default=True, description="registered at the start (false: only after a `register` step)")
    script: Script | None = Field(default=None, description="what it does; none: a waterfall listener delegates, an observer does nothing")


class Guard(_Model):
    """A monotonic guard: synchronous; returns ``undefined`` to abstain (P46). A guard
    with no script abstains (it returns ``undefined``)."""
    id: str = Field(description="the guard's id (who of its observations)")
    scope: str | None = Field(default=None, description="the agent scope it is registered in; null: global")
    registered: bool = Field(default=True, description="registered at the start (false: only after a `register` step)")
    script: Script = Field(description="what the guard does (synchronous); by default it abstains", default_factory=lambda: Behavior(steps=[Return(do="return", value={"$js": "undefined"})]))


class Getter(_Model):
    """A getter: ``{"$js":"getter","id":<id>}`` in a value (where a property value stands)
    makes that property an own enumerable accessor whose every read runs this synchronous
    script (stage ``getter``) and yields what it returns. ``perInvocation`` gives another
    value on each read; each read shows in the trace, so reads are counted (P13, P23); the
    script may also register or unregister participants (P26) or return a hostile value.
    It is handed no record."""
    id: str = Field(description="the getter's id (who of its observations)")
    script: Script = Field(description="what a read returns (synchronous; by default `undefined`)", default_factory=lambda: Behavior(steps=[Return(do="return", value={"$js": "undefined"})]))


class ShippedApproval(_Model):
    """The shipped approval service (P43): answers through ``approval/request`` listeners."""
    service: Literal["shipped"] = Field(description="the shipped approval service")
    policy: Literal["ask", "never"] = Field(default="ask", description="`ask`: ask the `approval/request` listeners; `never`: reject every ask")


class CustomApproval(_Model):
    """A scripted approval service: its script returns the outcome (or throws)."""
    service: Literal["custom"] = Field(description="a scripted approval service")
    script: Script = Field(description="its script: returns the outcome, or throws")


Approval = Annotated[Union[ShippedApproval, CustomApproval], Field(discriminator="service")]


class Restriction(_Model):
    allow: list[str] | None = Field(default=None, description="only these tool names are visible in the scope; null: no allow list")
    deny: list[str] | None = Field(default=None, description="these tool names are hidden in the scope; null: none")


class Agent(_Model):
    """An agent and its scope. ``parent`` forms the scope chain (P7, P45, P56). ``mode``
    declares the presentation mode of this scope (P28: the nearest declaration wins)."""
    id: str = Field(description="the agent's id")
    parent: str | None = Field(default=None, description="the parent agent's id: this agent's scope is a child of the parent's")
    mode: Literal["native", "code", "both"] | None = Field(default=None, description="the presentation mode declared for this scope (null: inherit)")
    openTurn: bool = Field(default=True, description="whether the agent has an open turn (the shipped approval service needs one, P43)")
    restrict: Restriction | None = Field(default=None, description="tool restrictions of this scope (P56): `allow` and `deny` lists of tool names")


# ----------------------------------------------------------------------------- runs

class Call(_Model):
    """One direct ``execute()`` call. ``parent`` gives the input a foreign execution token
    (a nested call). ``aborted`` aborts the caller signal before the call enters;
    ``abortAt`` aborts it that many milliseconds of virtual time after the call started,
    if it is still running. ``getters`` makes input fields accessors run by declared
    getters (P23: entry reads each field once); ``name``/``rootCallId``/``arguments`` then
    stand for what the call is known by in the trace only."""
    callId: str = Field(description="the call's id")
    name: str = Field(description="the tool name called")
    arguments: JsValue = Field(description="the call's arguments (a JS value)", default_factory=dict)
    agent: str | None = Field(default=None, description="the calling agent's id; null: a call without an agent")
    rootCallId: str | None = Field(default=None, description="the input's rootCallId; null: absent")
    parent: bool = Field(default=False, description="give the input a foreign execution token (a nested call)")
    aborted: bool = Field(default=False, description="abort the caller signal before the call enters")
    abortAt: int | None = Field(description="abort the caller signal this many ms of virtual time after the call started, if it still runs", default=None, ge=0)
    getters: dict[Literal["name", "rootCallId", "arguments"], str] = Field(description="input fields made accessors, by the id of the getter that runs on each read (P23)", default_factory=dict)


class DirectRun(_Model):
    """Direct calls, one after another, each with its own caller signal: a call starts
    when the previous one has returned its result."""
    kind: Literal["direct"] = Field(description="direct calls")
    calls: list[Call] = Field(description="the calls, in order", min_length=1)


class Block(_Model):
    """A tool-call block of the assistant message; ``arguments`` is the raw string."""
    id: str = Field(description="the tool-call block's id (the call's callId)")
    name: str = Field(description="the tool name the model asked for")
    arguments: str = Field(default="", description="the raw JSON text of the arguments, as the model wrote it (P16 parses it)")


class CancelAt(_Model):
    """The caller cancels the agent (``cancel(reason, {keepInbox})``) ``ms`` milliseconds of
    virtual time after the run started, if the tool step's turn is still running."""
    ms: int = Field(description="when, in ms of virtual time after the run started", ge=0)
    keepInbox: bool = Field(default=True, description="keep the queued contexts")
    reason: JsValue = Field(default=None, description="the cancel reason; null: a DOMException AbortError")


class LoopRun(_Model):
    """One agent-loop tool step: the assistant message's tool-call blocks, run as a batch,
    then the next step's start where accepted contexts become ``user/message`` events."""
    kind: Literal["loop"] = Field(description="one agent-loop tool step")
    agent: str = Field(description="the agent whose step it is")
    blocks: list[Block] = Field(description="the assistant message's tool-call blocks, in order", default_factory=list)
    finish: Literal["tool-calls", "max-tokens"] = Field(default="tool-calls", description="how the model's message ended: `tool-calls`, or `max-tokens` (P15: the blocks are not run)")
    maxParallelToolCalls: int = Field(description="the parallel pool's cap (P19, P21)", default=10, ge=1)
    aborted: bool = Field(default=False, description="abort the step's signal before the batch starts")
    release: list[str] = Field(description="call ids in the order gates let their bodies finish (`gate` steps)", default_factory=list)
    present: bool = Field(default=False, description=(
        "after the step, a viewer projects the step's tool/call and tool/result events through "
        "the definitions the agent sees then (presentCall, presentResult), as a client does: "
        "outside the pipeline (P14)"))
    cancelAt: CancelAt | None = Field(default=None, description="the caller cancels the agent at a time of virtual time")
    nextTurn: JsValue = Field(default=None, description=(
        "a user message the caller sends with followup() once the tool step's turn is over "
        "(completed, concluded or aborted): a new turn whose first step claims what stayed "
        "queued (P112). The trace then runs up to that step's model request"))


Run = Annotated[Union[DirectRun, LoopRun], Field(discriminator="kind")]


class Scenario(_Model):
    """A whole situation, declaratively. ``rules`` lists the rule ids the scenario checks."""
    format: Literal["dsh-conformance/scenario/v1"] = Field(default=SCENARIO_FORMAT, alias="$format",
                                                           description="the scenario language's version")
    id: str | None = Field(default=None, description="the case's id (a corpus case: its file name); informative for an implementation")
    title: str | None = Field(default=None, description="one sentence: the situation and what the spec requires (informative)")
    rules: list[str] = Field(description="the rule ids the scenario checks; a case needs every profile of the rules it cites", default_factory=list)
    seed: int | None = Field(default=None, description="the seed of the property run that generated it (informative)")
    mode: Literal["native", "code", "both"] = Field(default="native", description=(
        "the deployment's tool presentation mode (P28, P114); an agent's own `mode` overrides it "
        "for its scope and descendants"))
    codeRuntime: bool = Field(default=True, description=(
        "whether a code runtime is loaded (ctx.codeRuntime): the scenario's scripted runtime, "
        "which runs `programs` (P115)"))
    maxParallelSubCalls: int = Field(default=10, ge=1, description="the run_code overlap cap (P121)")
    programs: list[Program] = Field(default_factory=list, description=(
        "the programs run_code calls name in their `code` argument (section 5.15)"))
    agents: list[Agent] = Field(description="the agents and their scopes; a call or loop names its agent by id", default_factory=list)
    tools: list[Tool] = Field(description="the tool definitions, registered in declaration order (unless `registered: false`)", default_factory=list)
    listeners: list[Listener] = Field(description="the listeners on live events, registered in declaration order (`prepend` puts one first)", default_factory=list)
    guards: list[Guard] = Field(description="the guards, registered in declaration order", default_factory=list)
    approval: Approval | None = Field(default=None, description="the approval service; none: an ask is denied (P37, P38)")
    timeoutPolicy: bool = Field(default=False, description="install the shipped timeout policy as a `tools/execute` wrapper (P70): a tool's `timeoutMs` then applies")
    getters: list[Getter] = Field(description="the accessors `{\"$js\":\"getter\",\"id\":...}` tokens in values refer to", default_factory=list)
    run: Run = Field(description="what is run: direct calls (`kind: direct`) or one agent-loop tool step (`kind: loop`)")
    expect: dict[str, Any] | None = Field(default=None, description=(
        "assertions the corpus tests check on the oracle's trace (conformance.expect); "
        "implementations ignore it"))

    @model_validator(mode="after")
    def _references(self) -> "Scenario":
        check_references(self)
        return self


_ADAPTER: TypeAdapter[Scenario] = TypeAdapter(Scenario)


def _json_path(loc: tuple[Any, ...]) -> str:
    path = "$"
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in ("function-after[_references(), Scenario]",):
            continue
        else:
            path += f".{part}"
    return path


def parse_scenario(data: Any) -> Scenario:
    """Validate a decoded scenario document. Raises ScenarioError naming the JSON path.
    The input limits (``kit.jsonio``: nesting depth, numbers) come first, so that a file,
    a protocol line and a document built in memory are refused alike."""
    try:
        check_limits(data)
    except InputLimitError as e:
        raise ScenarioError(e.where, e.message) from None
    try:
        return _ADAPTER.validate_python(as_doubles(data))
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        ctx_error = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_error, ScenarioError):
            raise ctx_error from None
        raise ScenarioError(_json_path(_clean_loc(err["loc"])), err["msg"]) from None


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    # pydantic puts union tags ("do" values, "list[...]" branches) into locations; a JSON
    # path names only keys and indices of the document.
    out = []
    for part in loc:
        if isinstance(part, str) and (part.startswith(("list[", "function-", "Behavior")) or part in _TAGS):
            continue
        out.append(part)
    return tuple(out)


_TAGS = frozenset({
    "call", "await", "log", "fail", "reject",
    "next", "return", "return-next", "throw", "mutate", "set-signal", "abort", "defer-context",
    "conclude-turn", "await-signal", "sleep", "gate", "register", "unregister", "inject", "steer",
    "observe", "dispatch", "append", "shipped", "custom", "direct", "loop",
    "keep", "return-kept", "cancel",
})


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; errors name the file and the JSON path."""
    return load_scenario_document(path)[0]


def load_scenario_document(path: str | Path) -> tuple[Scenario, Any]:
    """The scenario of a file and the decoded document it came from (which is what an IUT
    is sent), read within the input limits of ``kit.jsonio``."""
    p = Path(path)
    try:
        data = load_file(p)
    except OSError as e:
        raise ScenarioFileError(str(p), "$", f"cannot read: {e.strerror or e}") from None
    except InputLimitError as e:
        raise ScenarioFileError(str(p), e.where, e.message) from None
    try:
        return parse_scenario(data), data
    except ScenarioError as e:
        raise ScenarioFileError(str(p), e.path, e.message) from None


class ScenarioFileError(ValueError):
    """A scenario file error: ``file: $.json.path: message`` on one line."""

    def __init__(self, file: str, path: str, message: str) -> None:
        super().__init__(f"{file}: {path}: {message}")
        self.file, self.path, self.message = file, path, message


def scenario_to_json(s: Scenario) -> dict[str, Any]:
    return _ADAPTER.dump_python(s, mode="python", by_alias=True, exclude_defaults=True)  # keeps lone surrogates


def scenario_json_schema() -> dict[str, Any]:
    return schema_document(_ADAPTER, "scenario.schema.json")
