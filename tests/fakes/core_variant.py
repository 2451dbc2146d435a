"""The oracle with one change that only a `reference` rule (or no rule) fixes, as an
in-process implementation (``--impl py:core_variant``, this directory on PYTHONPATH),
``CORE_VARIANT`` saying which:

- ``reregister``: registering a tool whose name is registered already replaces it instead of
  throwing the runtime's own "already registered" error (registration is out of scope,
  spec section 1.3);
- ``guards-snapshot``: the guard pass reads the guard tables as they were when it started,
  so a guard registered or unregistered during the pass (itself included) changes nothing
  until the next pass (P45, reference, reads them live).

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
from dsh_conformance.kit.jsvalue import UNDEFINED, Thrown, is_undefined
from dsh_conformance.kit.scenario import Tool
from dsh_conformance.kit.script import Invocation, perform_sync

MODE = os.environ.get("CORE_VARIANT", "")


def _register_replacing(self: Any, ref: str, _original: Any = registry.World.register) -> None:
    item = self.decl[ref]
    if isinstance(item, Tool) and item.name != "run_code":
        self._tools_changed()  # what a name resolves to is kept until the tools change
        self.tools.setdefault(item.scope, {})[item.name] = item
        return
    _original(self, ref)


def _guards_snapshot(w: Any, rec: Any) -> Any:
    w.obs(rec.callId, "guards", "start", None, None, ("P44",))
    snapshot = [[e for e in layer if e.active] for layer in w.guard_layers_for(rec.agent)]
    for layer in snapshot:
        for entry in layer:
            inv = Invocation(who=entry.guard.id, stage="guards", record=rec, rules=("P45", "P46", "P50"))
            try:
                v = perform_sync(w, inv, entry.guard.script)
            except Thrown as t:
                w.obs(rec.callId, "guards", "throw", None, t.value, ("P49",))
                raise
            if not is_undefined(v):
                w.obs(rec.callId, "guards", "end", None, v, ("P46",))
                return v
    w.obs(rec.callId, "guards", "end", None, UNDEFINED, ("P46",))
    return UNDEFINED


if MODE == "reregister":
    registry.World.register = _register_replacing
elif MODE == "guards-snapshot":
    pipeline._guards = _guards_snapshot
elif MODE not in ("", "skip-most", "core-strict"):
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
    return serve.answer(seq, scenario)
