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
from .arguments import parse_arguments
from .departures import NotComputable, write_identity
from .inbox import cancel, splice_append
from ..kit.jsvalue import JsValue, Thrown, js_error
from ..kit.scenario import Guard, Listener, Scenario, Tool
from ..kit.scenario_checks import RUN_CODE, effective_mode
from ..kit.session import RunState
from .tool_definitions import RUN_CODE_TOOL


@dataclass
class ListenerEntry:
    listener: Listener
    serial: int  # registration serial: entries are never reused, so a re-registration is new


@dataclass
class GuardEntry:
    guard: Guard
    active: bool = True


class World(RunState):
    """The state of one oracle run: the kit's run state (trace, clock, signals, freezing)
    and the registry (scopes, tool views, listener tables, guard layers), agents' inboxes."""

    def __init__(self, scenario: Scenario, departures: frozenset[str] = frozenset()) -> None:
        super().__init__(scenario)
        self.departures = departures  # the reference's departures to compute (oracle.departures)
        self.decl: dict[str, Tool | Listener | Guard] = {}
        for item in (*scenario.tools, *scenario.listeners, *scenario.guards):
            self.decl[item.ref if isinstance(item, Tool) else item.id] = item
        # Tools: scope (None = global layer) -> name -> definition.
        self.tools: dict[str | None, dict[str, Tool]] = {}
        self.listeners: dict[str, list[ListenerEntry]] = {}
        self.guard_layers: dict[str | None, list[GuardEntry]] = {}
        self.tokens = 0
        self.approvals = 0
        self.serial = 0
        self.inbox: list[JsValue] = []  # the loop agent's next-step queue
        self.inbox_next_turn: list[JsValue] = []  # waking input after an abort starts a new turn
        self.loop_agent: str | None = None
        self.generated_messages = 0  # user messages the registry made itself (P126's image contexts)
        self.sub_inputs: dict[str, dict[str, Any]] = {}  # a run_code sub-call's input object, as writes see it
        self.wake_requested = False  # a steer after the abort asked for another turn (P112)
        # The agents and their parents and modes are the scenario's: fixed for the run, so
        # each agent's chain and mode is worked out once (they are read several times a call).
        self.chains: dict[str | None, tuple[str, ...]] = {}
        self.modes: dict[str | None, str] = {}
        # What a name resolves to for an agent, and the inherited definition a restriction
        # hides from it (``view``, ``hidden``; several times a call), kept until a tool is
        # registered or unregistered: nothing else changes them (the scopes, the
        # restrictions and the modes are the scenario's).
        self.views: dict[tuple[str | None, str], tuple[Tool | None, Tool | None]] = {}
        if scenario.timeoutPolicy:
            # P70: the shipped timeout policy is a plugin's tools/execute listener, installed
            # before the scenario's own listeners.
            self.serial += 1
            self.listeners["tools/execute"] = [ListenerEntry(
                Listener(id="timeout-policy", event="tools/execute"), self.serial)]
        for item in (*scenario.tools, *scenario.listeners, *scenario.guards):
            if item.registered:
                self.register(item.ref if isinstance(item, Tool) else item.id)

    # ------------------------------------------------------------------ the script's hooks

    def inject(self, message: JsValue, steer: bool) -> None:
        # steer() wakes the agent: once the step is aborted, waking input cannot join
        # the aborted activity and goes to the next turn instead (P112).
        late = steer and self.signal("step").aborted
        splice_append(self, message, "next-turn" if late else "next-step")
        self.wake_requested = self.wake_requested or late  # the woken agent starts another turn

    def cancel(self, keep_inbox: bool, reason: JsValue) -> None:
        cancel(self, keep_inbox, reason)

    def append_event(self, agent: str, type_: str, data: JsValue, source: list[int] | None = None,
                     fresh: bool = False) -> int:
        if self.forged(agent):  # the reference's P24 departure: a forged agent has no session we compute
            raise NotComputable(f"agent {agent}", "a session event of a forged agent")
        return super().append_event(agent, type_, data, source, fresh)

    def identity_writable(self) -> bool:
        return "P24" in self.departures  # the reference's departure: a plain object until the freeze

    def write_identity(self, rec: Any, key: str, op: str, value: JsValue) -> None:
        write_identity(rec, key, op, value, frozenset(self.agents))

    def caller_input(self, call: str | None) -> JsValue:
        """The caller's input object (section 3.2) as far as a write into it can tell: a
        direct call's, a run_code sub-call's, or the one the loop made from a tool-call block."""
        if call in self.sub_inputs:  # a run_code sub-call: the input the bridge built (P119)
            return self.sub_inputs[call]
        block = next((b for b in getattr(self.scenario.run, "blocks", []) if b.id == call), None)
        if block is not None:
            return {"callId": block.id, "name": block.name, "arguments": parse_arguments(block.arguments),
                    "signal": {}, "agent": {}}
        return super().caller_input(call)

    # ------------------------------------------------------------------ registration

    def register(self, ref: str) -> None:
        item = self.decl[ref]
        if isinstance(item, Tool):
            self._tools_changed()
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
            self._tools_changed()
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

    def chain(self, agent: str | None) -> tuple[str, ...]:
        """The agent's scope chain, nearest first."""
        known = self.chains.get(agent)
        if known is not None:
            return known
        out: list[str] = []
        a = agent
        while a is not None:
            out.append(a)
            # A forged agent (the reference's P24 departure) is a key of no scope: no parent.
            a = self.agents[a].spec.parent if a in self.agents else None
        known = self.chains[agent] = tuple(out)
        return known

    def mode(self, agent: str | None) -> str:
        """Effective presentation mode: the nearest scope's declaration, else the deployment's."""
        known = self.modes.get(agent)
        if known is None:
            known = self.modes[agent] = effective_mode(self.scenario, agent if not self.forged(agent) else None)
        return known

    def forged(self, agent: str | None) -> bool:
        """A record's agent that a participant wrote (the reference's P24 departure): a value
        that is no agent of the scenario, so no scope's key (rc.8's scopeTarget and
        chainLayers: the global layer and untagged listeners alone)."""
        return agent is not None and agent not in self.agents

    def collapses(self, agent: str | None, name: str, nested: bool) -> bool:
        """P28: a model-direct call (not nested in ``run_code``) of an agent presenting in
        ``code`` mode, to any tool but ``run_code`` itself, collapses: it never runs."""
        return not nested and self.mode(agent) == "code" and name != RUN_CODE

    def _tools_changed(self) -> None:
        self.views.clear()

    def view(self, agent: str | None, name: str) -> Tool | None:
        """P56: the definition ``name`` resolves to for ``agent`` now."""
        return self._resolved(agent, name)[0]

    def hidden(self, agent: str | None, name: str) -> Tool | None:
        """P56: the inherited definition of ``name`` that a restriction on ``agent``'s chain
        hides from it now (``None`` when nothing is hidden). The oracle records it as the
        reason of a resolution, for blame: an implementation that still resolves the name
        took the hidden definition."""
        return self._resolved(agent, name)[1]

    def _resolved(self, agent: str | None, name: str) -> tuple[Tool | None, Tool | None]:
        key = (agent, name)
        known = self.views.get(key)
        if known is None:
            known = self.views[key] = self._resolve(agent, name)
        return known

    def _resolve(self, agent: str | None, name: str) -> tuple[Tool | None, Tool | None]:
        """(visible, hidden) for ``name`` as ``agent`` sees it (P56)."""
        if name == RUN_CODE:
            # P114: the reserved transport, only for agents presenting in code or both; it is
            # outside the registration layers, so restrictions and scopes never touch it.
            return (RUN_CODE_TOOL if self.mode(agent) != "native" else None), None
        chain = self.chain(agent)
        if agent is not None:
            own = self.tools.get(agent, {}).get(name)
            if own is not None:
                return own, None  # the agent's own registrations are never hidden
        # Nearer ancestors shadow farther ones, and every scope shadows the global layer.
        inherited = next((t for a in chain[1:] if (t := self.tools.get(a, {}).get(name)) is not None),
                         self.tools.get(None, {}).get(name))
        if inherited is None:
            return None, None
        for a in chain:
            r = self.agents[a].spec.restrict if a in self.agents else None
            if r is not None and ((r.allow is not None and name not in r.allow)
                                  or (r.deny is not None and name in r.deny)):
                # P56 (revision 3): a restriction anywhere on the chain hides every inherited
                # definition of a name it filters, the global layer's and every ancestor scope's.
                return None, inherited
        return inherited, None

    def visible_names(self, agent: str | None) -> list[str]:
        """The names in ``agent``'s schema list except ``run_code`` (P117's bindings), sorted."""
        return sorted(n for n in self._known_names(agent) if self.view(agent, n) is not None)

    def hidden_names(self, agent: str | None) -> list[str]:
        """The inherited names a restriction on ``agent``'s chain hides from it (P56), sorted."""
        return sorted(n for n in self._known_names(agent) if self.hidden(agent, n) is not None)

    def _known_names(self, agent: str | None) -> set[str]:
        names = set(self.tools.get(None, {}))
        for a in self.chain(agent):
            names |= set(self.tools.get(a, {}))
        return names

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

    def mint_token(self) -> str:
        self.tokens += 1
        return f"token-{self.tokens}"
