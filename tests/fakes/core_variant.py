"""The oracle with one change that only a `reference` rule (or no rule) fixes, as an
in-process implementation (``--impl py:core_variant``, this directory on PYTHONPATH),
``CORE_VARIANT`` saying which:

- ``reregister``: registering a tool whose name is registered already replaces it instead of
  throwing the runtime's own "already registered" error (registration is out of scope,
  spec section 1.3);
- ``guards-snapshot``: the guard pass reads the guard tables as they were when it started,
  so a guard registered or unregistered during the pass (itself included) changes nothing
  until the next pass (P45, reference, reads them live).

- ``guards-reversed``: the guard pass calls the layers from the agent's own scope out to the
  global layer, each in reverse registration order (P45, reference, fixes the order);
- ``cursor-unshared``: each listener's ``next()`` runs the listener after it, however often it
  is called (a cursor per listener; P6, reference, makes one consuming cursor shared by all);
- ``feedback-lenient``: a block's null or undefined feedback block contributes ``""`` and a
  feedback that is not an array counts as empty, where P84 (reference) makes the stage throw;
- ``finalizer-contexts``: the failure a throwing ``finalizeContent`` leaves keeps an empty
  ``additionalContexts`` list (key presence, P92, reference).

- ``skip-most``: answers ``skipped`` to two scenarios of every three (a port that expresses
  little, and says so);
- ``core-strict``: declares only ``core`` and no optional feature, and answers ``skipped`` to
  any scenario with the timeout policy, the shipped approval service, an agent loop, Code
  Mode or an aborted caller: what a core-only port without those cannot run.

Otherwise it declares every profile the oracle does: ``--profiles core`` must pass it, and
``--profiles core,reference`` must fail ``guards-snapshot`` on the rule that fixes the
difference; no corpus case tells ``reregister`` apart under any profile (section 1.3).
"""

from __future__ import annotations

import json
import os
from typing import Any

from dsh_conformance.oracle import pipeline, registry, serve
from dsh_conformance.kit.jsvalue import is_undefined
from dsh_conformance.kit.scenario import Tool
from dsh_conformance.kit.trace import EVENT_STAGES
from dsh_conformance.kit.script import Invocation

MODE = os.environ.get("CORE_VARIANT", "")


def _register_replacing(self: Any, ref: str, _original: Any = registry.World.register) -> None:
    item = self.decl[ref]
    if isinstance(item, Tool) and item.name != "run_code":
        self._tools_changed()  # what a name resolves to is kept until the tools change
        self.tools.setdefault(item.scope, {})[item.name] = item
        return
    _original(self, ref)


def _layers_snapshot(self: Any, agent: Any, _original: Any = registry.World.guard_layers_for) -> Any:
    """Each layer's active guards copied when the pass starts: the oracle's live read (P45)
    then walks the copy, so a guard added during the pass is not reached."""
    return [[e for e in layer if e.active] for layer in _original(self, agent)]


def _layers_reversed(self: Any, agent: Any, _original: Any = registry.World.guard_layers_for) -> Any:
    """The layers and the guards in each in the other order (P45's order, which only the
    reference fixes)."""
    return [list(reversed([e for e in layer if e.active])) for layer in reversed(list(_original(self, agent)))]


class _OwnCursors(pipeline._Cursor):
    """A cursor per listener: its next() always runs the listener after it (or the terminal)."""

    async def step(self) -> Any:
        return await self._at(0)

    async def _at(self, position: int) -> Any:
        if position >= len(self.listeners):
            return await self.terminal()
        listener = self.listeners[position]

        async def next_() -> Any:
            value = await self._at(position + 1)
            return self.w.freeze(value) if self.freeze_next else value

        if listener.id == pipeline.TIMEOUT_POLICY:
            return await pipeline.timeout_wrapper(self.w, self.rec, next_)
        inv = Invocation(who=listener.id, stage=EVENT_STAGES[self.event], record=self.rec, rules=self.rules,
                         next=next_, **self.args)
        return await pipeline.perform(self.w, inv, listener.script or pipeline._DELEGATE)


def _lenient_block_message(feedback: Any, _original: Any = pipeline.block_message) -> str:
    if not isinstance(feedback, list):
        feedback = []
    return _original([{"type": "text", "text": ""} if b is None or is_undefined(b)
                      or (isinstance(b, dict) and b.get("$js") == "hole") else b for b in feedback])


def _finalizer_contexts(trace: dict[str, Any]) -> None:
    """Every failure a throwing finalizeContent left, with ``additionalContexts: []`` added."""

    def add(v: Any) -> None:  # the failure, wherever an observation after the throw carries it
        if isinstance(v, dict):
            if v.get("isError") is True and isinstance(v.get("content"), list):
                v.setdefault("additionalContexts", [])
            for x in v.values():
                add(x)

    threw: set[str] = set()
    for o in trace["observations"]:
        if o["call"] in threw and not (o["who"] is not None and o["what"] in ("return", "throw")):
            add(o["value"])
        if (o["stage"], o["what"], o["who"]) == ("finalize", "throw", None):
            threw.add(o["call"])
    for r in trace["results"]:
        if r["callId"] in threw:
            add(r["result"])


if MODE == "reregister":
    registry.World.register = _register_replacing
elif MODE == "guards-snapshot":
    registry.World.guard_layers_for = _layers_snapshot
elif MODE == "guards-reversed":
    registry.World.guard_layers_for = _layers_reversed
elif MODE == "cursor-unshared":
    pipeline._Cursor = _OwnCursors
elif MODE == "feedback-lenient":
    pipeline.block_message = _lenient_block_message
elif MODE not in ("", "skip-most", "core-strict", "finalizer-contexts"):
    raise SystemExit(f"core_variant: unknown CORE_VARIANT {MODE!r}")


def started() -> dict[str, Any]:
    reply = serve.started()
    reply["implementation"]["name"] = f"core-variant-{MODE}"
    if MODE == "core-strict":
        reply.update(profiles=["core"], features=[])
    return reply


def _cannot(scenario: dict[str, Any]) -> str | None:
    text = json.dumps(scenario)
    calls = (scenario.get("run") or {}).get("calls") or []
    for what, there in (("the timeout policy", bool(scenario.get("timeoutPolicy"))),
                        ("the shipped approval service", (scenario.get("approval") or {}).get("service") == "shipped"),
                        ("the agent loop", (scenario.get("run") or {}).get("kind") == "loop"),
                        ("Code Mode", bool(scenario.get("programs")) or '"run_code"' in text),
                        ("an aborted caller", any(c.get("aborted") or "abortAt" in c for c in calls)
                         or '"do": "abort"' in text)):
        if there:
            return f"core-strict cannot express {what}"
    return None


def answer(seq: int, scenario: Any) -> Any:
    if MODE == "skip-most" and seq % 3:
        return {"seq": seq, "skipped": True, "reason": "not expressed by this port"}
    if MODE == "core-strict" and (why := _cannot(scenario)):
        return {"seq": seq, "skipped": True, "reason": why}
    reply = serve.answer(seq, scenario)
    if MODE == "finalizer-contexts" and "trace" in reply:
        reply = json.loads(json.dumps(reply))  # the oracle's own values stay as they are
        _finalizer_contexts(reply["trace"])
    return reply
