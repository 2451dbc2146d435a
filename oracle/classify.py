"""Classification of a call before it starts (P19), for the loop's batches (P20) and for
``run_code``'s sub-calls (P121)."""

from __future__ import annotations

from ..kit.jsvalue import Thrown
from ..kit.record import Input
from .registry import World
from .schema_check import schema_violations
from ..kit.script import Invocation, perform_sync


def classify(w: World, inp: Input) -> str:
    """P19: "parallel" only when the definition the call would dispatch to says exactly true.

    The definition is the one visible to the call's agent, unless the call collapses (P28):
    a model-direct call in ``code`` mode. A nested call (``parent`` set) never collapses."""
    tool = w.view(inp.agent, inp.name)
    collapsed = tool is not None and w.collapses(inp.agent, inp.name, inp.parent is not None)
    verdict = "exclusive"
    if tool is not None and not collapsed and tool.concurrencySafe is not None:
        if not (tool.define and schema_violations(tool.parameters, inp.arguments, "arguments")):
            # A sub-call's classifier runs for that sub-call (its lane of the trace); a loop
            # call's classifier is handed no record, only the parsed arguments.
            inv = Invocation(who=f"{tool.ref}.isConcurrencySafe", stage="classify", record=None,
                             rules=("P19",), args=inp.arguments,
                             call_id=inp.callId if inp.parent is not None else None)
            try:
                verdict = "parallel" if perform_sync(w, inv, tool.concurrencySafe) is True else "exclusive"
            except Thrown:
                verdict = "exclusive"
    w.obs(inp.callId, "classify", "end", None, verdict, ("P19",))
    return verdict
