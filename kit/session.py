"""The state of one scenario run that every implementation shares: the trace being
recorded, virtual time, named signals, what the registry deep-froze, kept objects, gates
and the invocation budget.

``RunState`` is what the script interpreter (``kit.script``) works on. An implementation
subclasses it (the oracle's ``World``; a port's run) and supplies what only a pipeline
knows: how a scripted ``register``/``unregister`` step changes its registry, and, for the
loop, how an ``inject``/``cancel`` step reaches its agent. The kit itself never decides a
pipeline question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .jsvalue import ATOMS, JsValue, UNDEFINED, clone, token
from .scenario import Agent, Scenario, ScenarioError
from .scheduler import Deferred, Scheduler, Signal
from .trace import BUILTIN_PARTICIPANTS, MODEL_MAKING, OBSERVATION_FIELDS, PROBE_POINTS, Observation, Trace, event

# Tokens that stand for primitives (spec 3.11): never objects, so always frozen.
PRIMITIVE_TOKENS = frozenset({"undefined", "NaN", "Infinity", "-Infinity", "-0", "bigint", "symbol"})

INVOCATION_BUDGET = 10_000

_new, _set_dict, _set_fields, _set_extra, _set_private = MODEL_MAKING


class Runaway(Exception):
    """The scenario makes participants call each other without end."""


@dataclass
class AgentState:
    spec: Agent
    seq: int = 0

    @property
    def id(self) -> str:
        return self.spec.id


class RunState:
    """One scenario run's shared state (trace, clock, signals, freezing, kept objects)."""

    loop_agent: str | None = None  # a loop run's agent: inject, steer and cancel steps need one

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.sched = Scheduler()
        self.trace = Trace(scenario=scenario.id)
        self.portable = 0  # the portable observations recorded so far: where an event falls (Event.at)
        self.agents: dict[str, AgentState] = {a.id: AgentState(a) for a in scenario.agents}
        self.signals: dict[str, Signal] = {}
        self.invocations: dict[str, int] = {}
        # id -> object: everything the registry deep-froze, and ``undefined``'s token (a
        # primitive, spec 3.11: recorded as it is, not copied, in every observation that
        # shows it)
        self.frozen: dict[int, Any] = {id(UNDEFINED): UNDEFINED}
        self.gates: dict[str, Deferred] = {}
        self.kept: dict[str, Any] = {}  # objects kept by `keep` steps, by name (P63)
        self.inputs: dict[str | None, Any] = {}  # the callers' input objects as written (P23)
        # `keep signal`: (call, name) -> (signal, its name then) (P60)
        self.kept_signals: dict[tuple[str | None, str], tuple[Signal, str]] = {}

    # ------------------------------------------------------------------ the pipeline's part

    def register(self, ref: str) -> None:
        """A scripted ``register`` step: (re-)register the declared participant ``ref``."""
        raise NotImplementedError("an implementation's run state registers participants")

    def unregister(self, ref: str) -> None:
        """A scripted ``unregister`` step."""
        raise NotImplementedError("an implementation's run state unregisters participants")

    def identity_writable(self) -> bool:
        """Whether a write of a record's identity field is carried out (P24: never; an
        implementation that departs from P24 overrides this and ``write_identity``)."""
        return False

    def write_identity(self, rec: Any, key: str, op: str, value: JsValue) -> None:
        """Carry out an allowed write (``set``, ``delete``, ``define``) of ``rec``'s identity
        field ``key`` (only where ``identity_writable``)."""
        raise NotImplementedError("identity fields are never written (P24)")

    def inject(self, message: JsValue, steer: bool) -> None:
        """Loop runs: an ``inject`` (``steer``: a ``steer``) step's message for the agent."""
        raise ScenarioError("$.run", "inject and steer need a loop run")

    def cancel(self, keep_inbox: bool, reason: JsValue) -> None:
        """Loop runs: a ``cancel`` step (``agent.cancel(reason, {keepInbox})``)."""
        raise ScenarioError("$.run", "cancel needs a loop run")

    def caller_input(self, call: str | None) -> JsValue:
        """The caller's input object (section 3.2) as far as a write into it can tell: a
        direct call's. A loop's port overrides this with the input it made from a block."""
        spec = next((c for c in getattr(self.scenario.run, "calls", []) if c.callId == call), None)
        if spec is None:
            return UNDEFINED
        out: dict[str, Any] = {"callId": spec.callId, "name": spec.name, "arguments": clone(spec.arguments),
                               "signal": {"$js": "instance", "class": "AbortSignal"}}
        if spec.agent is not None:
            out["agent"] = {}
        if spec.rootCallId is not None:
            out["rootCallId"] = spec.rootCallId
        if spec.parent:
            out["parent"] = {"$js": "symbol", "description": "foreign execution token"}
        for field, getter in spec.getters.items():  # P23: accessors of the input object itself
            out[field] = {"$js": "getter", "id": getter}
        return out

    def input_object(self, call: str | None) -> JsValue:
        """The caller's input object of ``call``, kept for the run: writes into it apply."""
        if call not in self.inputs:
            self.inputs[call] = self.caller_input(call)
        return self.inputs[call]

    # ------------------------------------------------------------------ trace

    def obs(self, call: str | None, stage: str, what: str, who: str | None = None,
            value: JsValue = None, rules: tuple[str, ...] | list[str] = (), fresh: bool = False) -> None:
        """Record an observation. ``fresh``: ``value`` was made for this observation alone,
        and what else it holds is primitive or frozen: nothing can change it, so it is
        recorded as it is; else it is copied, as ``append_event`` does."""
        # Tens a call: what ``clone`` would give back as it is (a primitive, a frozen
        # object) is not handed to it.
        if not fresh and not isinstance(value, ATOMS) and id(value) not in self.frozen:
            value = clone(value, self.frozen)
        # The rules as the call site wrote them: a tuple of constants, shared by every
        # observation made there, which the cyclic collector stops tracking after its first
        # pass; an observation whose value is primitive or absent is then not tracked
        # either (a list per observation was a quarter of what it walked in a run's trace).
        if type(rules) is not tuple:
            rules = tuple(rules)
        o = _new(Observation)  # not validated: see trace.unvalidated
        _set_dict(o, {"call": call, "stage": stage, "what": what, "who": who, "value": value, "rules": rules})
        _set_fields(o, OBSERVATION_FIELDS)
        _set_extra(o, None)
        _set_private(o, None)
        self.trace.observations.append(o)
        if (who not in BUILTIN_PARTICIPANTS) if who is not None else ((stage, what) in PROBE_POINTS):  # portable()
            self.portable += 1

    def append_event(self, agent: str, type_: str, data: JsValue, source: list[int] | None = None,
                     fresh: bool = False) -> int:
        """Append a session event. ``fresh``: ``data`` was made for this event alone, and what
        else it holds is frozen (a tool-result message around a finished result): nothing
        can change it, so it is recorded as it is; else it is copied (``_plain``)."""
        state = self.agents[agent]
        state.seq += 1
        self.trace.events.append(event(agent, state.seq, type_, data if fresh else self._plain(data), source,
                                       self.portable))
        return state.seq

    def _plain(self, v: Any) -> Any:
        """A detached copy for the trace (of an observation's value, an event's data), so that
        later steps cannot change what was recorded. What the registry deep-froze cannot
        change any more: recorded as it is, not copied (a tool result's content, say, in
        every observation and event that shows it)."""
        return clone(v, self.frozen)

    # ------------------------------------------------------------------ freezing

    def freeze(self, v: JsValue) -> JsValue:
        """Deep-freeze ``v`` in place (the registry's ``deepFreeze``). A frozen object is
        frozen all the way down already (and nothing changes it): not walked again."""
        frozen = self.frozen
        if isinstance(v, (dict, list)) and id(v) not in frozen:
            frozen[id(v)] = v
            pending = [v]  # a walk of its own, not a call per item (tens of objects a call)
            while pending:
                for item in (x.values() if isinstance(x := pending.pop(), dict) else x):
                    if isinstance(item, (dict, list)) and id(item) not in frozen:
                        frozen[id(item)] = item
                        pending.append(item)
        return v

    def is_frozen(self, v: JsValue) -> bool:
        return not isinstance(v, (dict, list)) or token(v) in PRIMITIVE_TOKENS or id(v) in self.frozen

    def is_deeply_frozen(self, v: JsValue) -> bool:
        # Only ``freeze`` marks an object frozen, and it marks everything below it too, so a
        # frozen object is frozen all the way down: nothing to walk (a result each call).
        return self.is_frozen(v)

    # ------------------------------------------------------------------ misc

    def signal(self, name: str) -> Signal:
        if name not in self.signals:
            self.signals[name] = Signal(name)
        return self.signals[name]

    def gate(self, call_id: str) -> Deferred:
        """Settles when the call's body is done, or when the call will never run one."""
        gate = self.gates.get(call_id)  # not setdefault: a Deferred made for nothing, twice a call
        if gate is None:
            gate = self.gates[call_id] = Deferred()
        return gate

    def open_gate(self, call_id: str) -> None:
        self.gate(call_id).resolve(None)

    def next_invocation(self, who: str) -> int:
        n = self.invocations.get(who, 0)
        self.invocations[who] = n + 1
        if sum(self.invocations.values()) > INVOCATION_BUDGET:
            # e.g. a guard that registers a guard is reached again in the same pass (P45),
            # forever: JavaScript would not end either, so the scenario is at fault.
            raise Runaway(f"more than {INVOCATION_BUDGET} participant invocations: the scenario runs away")
        return n
