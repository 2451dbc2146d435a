"""The kit's interface for a Python port: the pipeline is the port's, the scenario is the kit's.

A port implements ``Pipeline`` (register and unregister participants, ``execute`` one
call) and ``Implementation`` (its identity, its profiles, a fresh pipeline per scenario).
The kit builds every participant of the scenario as a callable (``Tool.body``,
``Listener.waterfall``, ``Guard.__call__``, ...) that runs the participant's script with
the kit's interpreter and records its observations; it registers the scenario's
participants in declaration order, hands scripted ``register``/``unregister`` steps to the
pipeline, drives the direct calls on virtual time, and builds the trace and the protocol
answer. What the port still reports itself are its stage boundaries (``PortRun.boundary``:
the probe points of ``kit.trace.PROBE_POINTS``), since only the pipeline knows where they lie.

``implementation_module(impl)`` gives the two functions ``--impl py:MODULE`` needs
(``started``, ``answer``); ``serve_stdio(impl)`` speaks the protocol on stdin and stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from . import protocol, scenario as lang
from .driver import run_direct, run_to_end
from .jsvalue import JsValue
from .protocol import Unsupported
from .record import Input, Record
from .scenario import DELEGATE, Behavior, Scenario
from .scheduler import Signal
from .script import NOTHING, FsIntent, Invocation, perform, perform_sync
from .session import RunState
from .trace import EVENT_STAGES, Trace

Next = Callable[[], Awaitable[JsValue]]


# ============================================================================ participants

@dataclass(frozen=True)
class Tool:
    """A tool definition of the scenario (``decl``: name, scope, schemas, ...) with its
    scripted parts as callables."""
    run: PortRun
    decl: lang.Tool

    @property
    def name(self) -> str:
        return self.decl.name

    async def body(self, record: Record, args: JsValue, fs_intent: FsIntent | None = None) -> JsValue:
        """``tool.execute(args, ctx)``: the body's value, or raises ``Thrown``."""
        inv = Invocation(who=self.decl.ref, stage="body", record=record, rules=("P55", "P58"), args=args,
                         fs_intent=fs_intent)
        return await perform(self.run, inv, self.decl.body)

    def render(self, record: Record, value: JsValue) -> JsValue:
        """``output.render(value)`` (synchronous); the tool must declare one (``decl.output.render``)."""
        return self._sync("render", record, self.decl.output.render, value)

    def presentation_meta(self, record: Record, value: JsValue) -> JsValue:
        return self._sync("presentationMeta", record, self.decl.output.presentationMeta, value)

    def finalize(self, record: Record, result: JsValue) -> JsValue:
        """``finalizeContent(result)`` (synchronous): the content, or ``undefined`` to keep it."""
        assert self.decl.finalizeContent is not None
        inv = Invocation(who=f"{self.decl.ref}.finalizeContent", stage="finalize", record=record,
                         rules=("P93", "P94"), result=result)
        return perform_sync(self.run, inv, self.decl.finalizeContent)

    def is_concurrency_safe(self, args: JsValue, call_id: str | None = None) -> JsValue:
        """``isConcurrencySafe(args)`` (synchronous); the tool must declare one
        (``decl.concurrencySafe``). ``call_id``: the ``run_code`` sub-call it classifies (the
        classifier runs for that sub-call); a loop batch's call: none (it is handed no record)."""
        assert self.decl.concurrencySafe is not None, f"{self.decl.ref} declares no isConcurrencySafe"
        inv = Invocation(who=f"{self.decl.ref}.isConcurrencySafe", stage="classify", record=None, rules=("P19",),
                         args=args, call_id=call_id)
        return perform_sync(self.run, inv, self.decl.concurrencySafe)

    def _sync(self, which: str, record: Record, behavior: Behavior | None, value: JsValue) -> JsValue:
        assert behavior is not None, f"{self.decl.ref} declares no {which}"
        inv = Invocation(who=f"{self.decl.ref}.{which}", stage=which, record=record, rules=("P73",))
        return perform_sync(self.run, inv, behavior)


_DELEGATE = Behavior.model_validate(DELEGATE)


@dataclass(frozen=True)
class Listener:
    """A listener of the scenario (``decl``: id, event, scope, global, prepend)."""
    run: PortRun
    decl: lang.Listener

    async def waterfall(self, record: Record, next_: Next, *, result: Any = NOTHING, args: Any = NOTHING,
                        request: dict[str, Any] | None = None, request_signal: Signal | None = None,
                        call_id: str | None = None) -> JsValue:
        """A waterfall listener ``(ctx, next)``: what it returns, or raises ``Thrown``.
        ``result``: for ``tools/post-execute``, the result handed to it (for
        ``tools/code-dispatch-log``, the settled sub-call); ``args``: an intent's target;
        ``request``/``request_signal``: an ``approval/request`` answerer's request;
        ``call_id``: the call it runs for where ``record`` is another's (a dispatch-log
        listener is handed run_code's record for a sub-call)."""
        inv = Invocation(who=self.decl.id, stage=EVENT_STAGES[self.decl.event], record=record, rules=("P5",),
                         next=next_, result=result, args=args, request=request, request_signal=request_signal,
                         call_id=call_id)
        return await perform(self.run, inv, self.decl.script or _DELEGATE)

    def notify(self, record: Record, result: JsValue) -> JsValue:
        """A ``tools/result`` observer (synchronous): what it returned (a rejected promise
        token is its asynchronous failure), or raises ``Thrown``."""
        inv = Invocation(who=self.decl.id, stage="result", record=record, rules=("P100",), result=result)
        return perform_sync(self.run, inv, self.decl.script or Behavior())


@dataclass(frozen=True)
class Guard:
    """A monotonic guard of the scenario (``decl``: id, scope)."""
    run: PortRun
    decl: lang.Guard

    def __call__(self, record: Record) -> JsValue:
        """The guard's verdict (synchronous): ``undefined`` abstains; or raises ``Thrown``."""
        inv = Invocation(who=self.decl.id, stage="guards", record=record, rules=("P45", "P46", "P50"))
        return perform_sync(self.run, inv, self.decl.script)


@dataclass(frozen=True)
class ApprovalService:
    """A scripted approval service (``custom``): ``await service(record, request, signal)``
    is its outcome, or raises ``Thrown``."""
    run: PortRun
    decl: lang.CustomApproval

    async def __call__(self, record: Record, request: dict[str, Any], signal: Signal) -> JsValue:
        inv = Invocation(who="approval", stage="approval", record=record, rules=("P40",),
                         request=request, request_signal=signal)
        return await perform(self.run, inv, self.decl.script)


Participant = Tool | Listener | Guard


# ============================================================================ what a port supplies

class Pipeline(Protocol):
    """A port's pipeline for one scenario run."""

    def register(self, participant: Participant) -> None:
        """Register a tool (in ``decl.scope``), a listener or a guard; may raise ``Thrown``."""

    def unregister(self, participant: Participant) -> None:
        """Unregister it (a participant that is not registered: nothing happens)."""

    async def execute(self, inp: Input) -> JsValue:
        """``execute(input)``: the call's final result (the object ``tools/result`` observers got)."""


class Implementation(Protocol):
    """A port: its identity, the profiles it supports, a fresh pipeline per scenario."""

    name: str
    version: str
    profiles: Sequence[str]

    def pipeline(self, run: PortRun) -> Pipeline:
        """A pipeline for this run (``run.scenario``, ``run.approval``, ``run.obs`` ...).
        Raise ``Unsupported`` for a scenario it cannot express: answered ``skipped``."""


# ============================================================================ one run

class PortRun(RunState):
    """One scenario run of a port: the kit's run state with the scenario's participants
    built, and the port's pipeline behind the scripted ``register``/``unregister`` steps."""

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        self.participants: dict[str, Participant] = {}
        for t in scenario.tools:
            self.participants[t.ref] = Tool(self, t)
        for item in scenario.listeners:
            self.participants[item.id] = Listener(self, item)
        for g in scenario.guards:
            self.participants[g.id] = Guard(self, g)
        approval = scenario.approval
        self.approval: lang.ShippedApproval | ApprovalService | None = (
            ApprovalService(self, approval) if isinstance(approval, lang.CustomApproval) else approval)
        self.pipeline: Pipeline | None = None
        self.tokens = 0
        self.notified: dict[str, Any] = {}  # call id -> the result its tools/result observers were handed

    def mint_token(self) -> str:
        """A fresh execution token's name (the record's ``token``), numbered from 1."""
        self.tokens += 1
        return f"token-{self.tokens}"

    def boundary(self, call: str, stage: str, what: str, value: JsValue = None, rules: Sequence[str] = ()) -> None:
        """A stage boundary an outermost probe sees (``kit.trace.PROBE_POINTS``)."""
        self.obs(call, stage, what, None, value, tuple(rules))

    def notifying(self, call: str, result: JsValue) -> None:
        """The ``tools/result`` notification of ``call`` starts with ``result``: its probe
        point, and the object the returned result is checked against (P98)."""
        self.notified[call] = result
        self.boundary(call, "result", "start", result, ("P98", "P99"))

    def register(self, ref: str) -> None:
        assert self.pipeline is not None
        self.pipeline.register(self.participants[ref])

    def unregister(self, ref: str) -> None:
        assert self.pipeline is not None
        self.pipeline.unregister(self.participants[ref])


def run_port(impl: Implementation, scenario: Scenario) -> Trace:
    """Run ``scenario`` on ``impl``'s pipeline: the trace (raises ``ScenarioRunError``,
    ``Unsupported``)."""
    if not isinstance(scenario.run, lang.DirectRun):
        raise Unsupported("loop runs: this port drives direct calls only")
    calls = scenario.run.calls
    run = PortRun(scenario)
    pipeline = run.pipeline = impl.pipeline(run)

    def go() -> None:
        for participant in run.participants.values():  # in declaration order
            if participant.decl.registered:
                pipeline.register(participant)
        run_direct(run, calls, pipeline.execute, lambda call_id, result: result is run.notified.get(call_id, NOTHING))
    return run_to_end(run, go)


# ============================================================================ the protocol, for a port

def implementation_module(impl: Implementation) -> tuple[protocol.Started, protocol.Answer]:
    """``started`` and ``answer(seq, scenario)`` for ``--impl py:MODULE`` (bind them at
    module level: ``started, answer = implementation_module(MyPort())``)."""
    def started() -> dict[str, Any]:
        return protocol.handshake(impl.name, impl.version, "python", impl.profiles)

    def answer(seq: int, scenario: Any) -> dict[str, Any]:
        return protocol.answer(lambda s: run_port(impl, s), seq, scenario)
    return started, answer


def serve_stdio(impl: Implementation) -> int:
    """Speak the IUT protocol v1 on stdin and stdout (``--impl "python my_port.py"``)."""
    started, answer = implementation_module(impl)
    return protocol.serve(started, answer, sys.stdin.buffer, sys.stdout)
