"""The registry's world: scopes, tool views, listener tables and guard layers.

Everything the pipeline resolves at a given moment lives here: which definition a name
resolves to for an agent (P26, P56), which listeners a waterfall selects (P5, P7), which
guards a pass reaches (P45). Registrations change only through scripted ``register`` /
``unregister`` steps, so tables are read live exactly where the spec says they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import texts
from .jsvalue import JsValue, Thrown, clone, js_error, token

# Tokens that stand for primitives (spec 3.11): never objects, so always frozen.
PRIMITIVE_TOKENS = frozenset({"undefined", "NaN", "Infinity", "-Infinity", "-0", "bigint", "symbol"})
from .scenario import Agent, Guard, Listener, Program, Scenario, Tool
from .scenario_checks import RUN_CODE, effective_mode
from .scheduler import Deferred, Scheduler, Signal
from .tool_definitions import RUN_CODE_TOOL
from .trace import Trace, event, observation, portable


INVOCATION_BUDGET = 10_000


class Runaway(Exception):
    """The scenario makes participants call each other without end."""


@dataclass
class ListenerEntry:
    listener: Listener
    serial: int  # registration serial: entries are never reused, so a re-registration is new


@dataclass
class GuardEntry:
    guard: Guard
    active: bool = True


@dataclass
class AgentState:
    spec: Agent
    seq: int = 0

    @property
    def id(self) -> str:
        return self.spec.id


class World:
    """The state of one scenario run (registry, agents, signals, trace)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.sched = Scheduler()
        self.trace = Trace(scenario=scenario.id)
        self.portable = 0  # the portable observations recorded so far: where an event falls (Event.at)
        self.agents: dict[str, AgentState] = {a.id: AgentState(a) for a in scenario.agents}
        self.decl: dict[str, Tool | Listener | Guard] = {}
        for item in (*scenario.tools, *scenario.listeners, *scenario.guards):
            self.decl[item.ref if isinstance(item, Tool) else item.id] = item
        # Tools: scope (None = global layer) -> name -> definition.
        self.tools: dict[str | None, dict[str, Tool]] = {}
        self.listeners: dict[str, list[ListenerEntry]] = {}
        self.guard_layers: dict[str | None, list[GuardEntry]] = {}
        self.signals: dict[str, Signal] = {}
        self.invocations: dict[str, int] = {}
        self.tokens = 0
        self.approvals = 0
        self.serial = 0
        self.frozen: dict[int, Any] = {}  # id -> object: everything the registry deep-froze
        self.gates: dict[str, Deferred] = {}
        self.inbox: list[JsValue] = []  # the loop agent's next-step queue
        self.inbox_next_turn: list[JsValue] = []  # waking input after an abort starts a new turn
        self.loop_agent: str | None = None
        self.programs: dict[str, Program] = {p.id: p for p in scenario.programs}
        self.generated_messages = 0  # user messages the registry made itself (P126's image contexts)
        self.sub_inputs: dict[str, dict[str, Any]] = {}  # a run_code sub-call's input object, as writes see it
        self.kept: dict[str, Any] = {}  # objects kept by `keep` steps, by name (P63)
        self.wake_requested = False  # a steer after the abort asked for another turn (P112)
        if scenario.timeoutPolicy:
            # P70: the shipped timeout policy is a plugin's tools/execute listener, installed
            # before the scenario's own listeners.
            self.serial += 1
            self.listeners["tools/execute"] = [ListenerEntry(
                Listener(id="timeout-policy", event="tools/execute"), self.serial)]
        for item in (*scenario.tools, *scenario.listeners, *scenario.guards):
            if item.registered:
                self.register(item.ref if isinstance(item, Tool) else item.id)

    # ------------------------------------------------------------------ trace

    def obs(self, call: str | None, stage: str, what: str, who: str | None = None,
            value: JsValue = None, rules: tuple[str, ...] | list[str] = ()) -> None:
        self.trace.observations.append(observation(call, stage, what, who, clone(value, self.frozen), list(rules)))
        if portable(stage, what, who):
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
        if isinstance(v, (dict, list)) and id(v) not in self.frozen:
            self.frozen[id(v)] = v
            for item in (v.values() if isinstance(v, dict) else v):
                self.freeze(item)
        return v

    def is_frozen(self, v: JsValue) -> bool:
        return not isinstance(v, (dict, list)) or token(v) in PRIMITIVE_TOKENS or id(v) in self.frozen

    def is_deeply_frozen(self, v: JsValue) -> bool:
        # Only ``freeze`` marks an object frozen, and it marks everything below it too, so a
        # frozen object is frozen all the way down: nothing to walk (a result each call).
        return self.is_frozen(v)

    # ------------------------------------------------------------------ registration

    def register(self, ref: str) -> None:
        item = self.decl[ref]
        if isinstance(item, Tool):
            if item.name == RUN_CODE:  # P114: reserved, in every scope
                raise Thrown(js_error(texts.RUN_CODE_RESERVED))
            layer = self.tools.setdefault(item.scope, {})
            if item.name in layer:
                where = "in this scope" if item.scope else "(for a per-agent variant, register through that agent's `agent.ctx` instead)"
                raise Thrown(js_error(f'tool "{item.name}" is already registered {where}'))
            layer[item.name] = item
        elif isinstance(item, Listener):
            self.serial += 1
            table = self.listeners.setdefault(item.event, [])
            entry = ListenerEntry(item, self.serial)
            # P5: a prepended listener goes in front of all earlier ones.
            table.insert(0, entry) if item.prepend else table.append(entry)
        else:
            self.guard_layers.setdefault(item.scope, []).append(GuardEntry(item))

    def unregister(self, ref: str) -> None:
        item = self.decl[ref]
        if isinstance(item, Tool):
            layer = self.tools.get(item.scope, {})
            if layer.get(item.name) is item:
                del layer[item.name]
        elif isinstance(item, Listener):
            table = self.listeners.get(item.event, [])
            table[:] = [e for e in table if e.listener is not item]
        else:
            # Inactive entries stay in place, so that a pass in progress keeps its position
            # and still reaches guards appended after it (P45).
            for entry in self.guard_layers.get(item.scope, []):
                if entry.guard is item:
                    entry.active = False

    # ------------------------------------------------------------------ scopes

    def chain(self, agent: str | None) -> list[str]:
        """The agent's scope chain, nearest first."""
        out: list[str] = []
        while agent is not None:
            out.append(agent)
            agent = self.agents[agent].spec.parent
        return out

    def mode(self, agent: str | None) -> str:
        """Effective presentation mode: the nearest scope's declaration, else the deployment's."""
        return effective_mode(self.scenario, agent)

    def collapses(self, agent: str | None, name: str, nested: bool) -> bool:
        """P28: a model-direct call (not nested in ``run_code``) of an agent presenting in
        ``code`` mode, to any tool but ``run_code`` itself, collapses: it never runs."""
        return not nested and self.mode(agent) == "code" and name != RUN_CODE

    def view(self, agent: str | None, name: str) -> Tool | None:
        """P56: the definition ``name`` resolves to for ``agent`` now."""
        if name == RUN_CODE:
            # P114: the reserved transport, only for agents presenting in code or both; it is
            # outside the registration layers, so restrictions and scopes never touch it.
            return RUN_CODE_TOOL if self.mode(agent) != "native" else None
        chain = self.chain(agent)
        for a in chain:
            tool = self.tools.get(a, {}).get(name)
            if tool is not None:
                return tool
        tool = self.tools.get(None, {}).get(name)
        if tool is None:
            return None
        for a in chain:
            r = self.agents[a].spec.restrict
            if r is not None and ((r.allow is not None and name not in r.allow)
                                  or (r.deny is not None and name in r.deny)):
                return None  # a restriction anywhere on the chain hides inherited global tools
        return tool

    def spared(self, agent: str | None, name: str) -> bool:
        """P56: ``name`` resolves for ``agent`` to a definition an ancestor's scope registered
        while a restriction on the chain names it: visible only because restrictions hide
        inherited *global* tools, not scoped ones (the decision is recorded as a reason)."""
        if name == RUN_CODE:
            return False
        chain = self.chain(agent)
        owner = next((a for a in chain if name in self.tools.get(a, {})), None)
        if owner is None or owner == agent:
            return False
        for a in chain:
            r = self.agents[a].spec.restrict
            if r is not None and ((r.allow is not None and name not in r.allow)
                                  or (r.deny is not None and name in r.deny)):
                return True
        return False

    def visible_names(self, agent: str | None) -> list[str]:
        """The names in ``agent``'s schema list except ``run_code`` (P117's bindings), sorted."""
        names = set(self.tools.get(None, {}))
        for a in self.chain(agent):
            names |= set(self.tools.get(a, {}))
        return sorted(n for n in names if self.view(agent, n) is not None)

    def selected(self, event: str, agent: str | None) -> list[Listener]:
        """P5, P7: the listeners a waterfall or emit selects for ``agent``, fixed now."""
        chain = set(self.chain(agent))
        out = []
        for entry in self.listeners.get(event, []):
            l = entry.listener
            if l.scope is None or l.global_ or l.scope in chain:
                out.append(l)
        return out

    def guard_layers_for(self, agent: str | None) -> list[list[GuardEntry]]:
        """P45: the global layer, then each scoped layer from the farthest ancestor."""
        layers = [self.guard_layers.setdefault(None, [])]
        for a in reversed(self.chain(agent)):
            layers.append(self.guard_layers.setdefault(a, []))
        return layers

    # ------------------------------------------------------------------ misc

    def signal(self, name: str) -> Signal:
        if name not in self.signals:
            self.signals[name] = Signal(name)
        return self.signals[name]

    def gate(self, call_id: str) -> Deferred:
        """Settles when the call's body is done, or when the call will never run one."""
        return self.gates.setdefault(call_id, Deferred())

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

    def mint_token(self) -> str:
        self.tokens += 1
        return f"token-{self.tokens}"
