"""A client's view of a loop step: the UI projections, outside the pipeline (P14).

A client renders the session log: each ``tool/call`` event through the definition's
``presentCall(arguments)`` and each ``tool/result`` event through ``presentResult(arguments,
{content, isError, meta?})``, looking the definition up as the calling agent sees it when
the view is made. Nothing of this reaches the pipeline: it runs after the step, reads
only the log, and a presenter's throw costs the view and nothing else. The viewer is the
scenario language's (``run.present``); the oracle and every adapter implement the same.

A view is skipped, with no presenter invoked, when the stored arguments are not JSON or
a result has no ``tool/call`` before it (the client's soft fall).
"""

from __future__ import annotations

from typing import Any

from ..kit.jsvalue import Thrown
from .arguments import json_parse
from .registry import World
from ..kit.scenario import LoopRun, Tool
from ..kit.script import Invocation, perform_sync


def present(w: World, run: LoopRun) -> None:
    """Project the loop agent's ``tool/call`` and ``tool/result`` events, in log order."""
    args_of: dict[str, tuple[str, Any]] = {}
    for event in [e for e in w.trace.events if e.agent == run.agent]:
        if event.type == "tool/call":
            call, name = event.data["callId"], event.data["name"]
            try:
                args = json_parse(event.data["arguments"])
            except ValueError:
                continue
            args_of[call] = (name, args)
            _project(w, run.agent, call, name, "presentCall", args, None)
        elif event.type == "tool/result":
            call = event.data["message"]["source"]["callId"]
            if call not in args_of:
                continue
            name, args = args_of[call]
            block = event.data["message"]["content"][0]
            result: dict[str, Any] = {"content": block["content"], "isError": block["isError"] is True}
            if "meta" in event.data:
                result["meta"] = event.data["meta"]
            _project(w, run.agent, call, name, "presentResult", args, result)


def _project(w: World, agent: str, call: str, name: str, which: str, args: Any, result: Any) -> None:
    tool: Tool | None = w.view(agent, name)  # the definition the agent sees now (P56)
    script = getattr(tool, which) if tool is not None else None
    if tool is None or script is None:
        return
    inv = Invocation(who=f"{tool.ref}.{which}", stage=which, record=None, rules=("P14",), args=args,
                     call_id=call, **({"result": result} if result is not None else {}))
    try:
        perform_sync(w, inv, script)
    except Thrown:
        pass  # a throwing presenter costs its view only
