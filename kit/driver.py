"""Running a scenario to its end, around whatever pipeline an implementation has: the
realm that getter and shared tokens read from, the caller's inputs of direct calls, the
caller's own aborts (``abortAt``), the results the trace records, and the errors that say
a scenario cannot be run to an end. The oracle and every port built on the kit share it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

from . import realm
from .jsvalue import Thrown, clone, is_undefined, message_of, read
from .record import Input
from .scenario import Call, ScenarioError
from .scenario_checks import scenario_values
from .scheduler import ABORT_REASON, Deadlock, Deferred
from .script import Invocation, perform_sync
from .session import RunState, Runaway
from .trace import Trace, call_result
from .value_refs import definitions


class ScenarioRunError(Exception):
    """The scenario cannot be run to an end: it never settles, or a step makes no sense
    where it stands. This is a defect of the scenario, not a verdict on an implementation."""


class RunRealm:
    """What getter and shared tokens of this run refer to (``kit.realm``)."""

    def __init__(self, w: RunState) -> None:
        self.w = w
        self.getters = {g.id: g for g in w.scenario.getters}
        self.definitions: dict[str, Any] = {}
        for value in scenario_values(w.scenario):
            for sid, v in definitions(value).items():
                self.definitions.setdefault(sid, v)

    def read_getter(self, getter_id: str) -> Any:
        getter = self.getters.get(getter_id)
        if getter is None:
            raise ScenarioError(f"getter {getter_id}", "no getter has this id")
        # A read is attributed to no call: a getter can sit in any value, and which of the
        # run's calls a read belongs to is not the getter's to know (compared per getter).
        # P13, P23, and the rules of the reading that reads it (P9: a thrown Error's message)
        inv = Invocation(who=getter_id, stage="getter", record=None, rules=("P13", "P23", *realm.reading_rules()))
        return perform_sync(self.w, inv, getter.script)

    def shared(self, shared_id: str) -> Any:
        if shared_id not in self.definitions:
            raise ScenarioError(f"shared {shared_id}", "no shared object has this id")
        return self.definitions[shared_id]


def run_to_end(w: RunState, run: Callable[[], None]) -> Trace:
    """Run ``run`` (which drives ``w``'s scheduler) with the run's realm installed; the
    trace, or ScenarioRunError when the scenario cannot be run to an end. A caller that
    makes ``w`` inside ``no_cycle_collection()`` and lets it go before leaving spares the
    collector a pass over the run's whole state (``oracle.run.run_scenario``)."""
    with realm.installed(RunRealm(w)), no_cycle_collection():
        try:
            run()
        except Deadlock as e:
            raise ScenarioRunError(f"the scenario never settles: {e}") from None
        except Runaway as e:
            raise ScenarioRunError(str(e)) from None
        except ScenarioError as e:
            raise ScenarioRunError(str(e)) from None
        except Thrown as t:  # only a registration step outside any participant can get here
            raise ScenarioRunError(f"uncaught throw outside the pipeline: {message_of(t.value)}") from None
    return w.trace


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """No cyclic garbage collection while a scenario runs: a run allocates tens of objects
    per observation and keeps most of them in its trace, so the collector's passes over
    them grew with the scenario (a third of a 1,000-call run). What a run leaves
    unreachable is collected at the next pass after it; a run is bounded by the invocation
    budget (session.INVOCATION_BUDGET). Nested, only the outermost turns it back on: the
    first pass after it walks whatever is still held then (the trace, and the run's state
    when the caller still holds it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


Execute = Callable[[Input], Coroutine[Any, Any, Any]]
"""An implementation's ``execute(input)``: the call's final result."""


def run_direct(w: RunState, calls: list[Call], execute: Execute,
               observed: Callable[[str, Any], bool] | None = None) -> None:
    """Direct calls one after another, each with its own caller signal: a call starts when
    the previous one has returned its result. ``observed(call_id, result)``: whether the
    result is the very object the ``tools/result`` observers received (P98; None: it is)."""
    for call in calls:
        inp = call_input(w, call)
        timer = _abort_at(w, call, inp)
        result = w.sched.run(execute(inp))
        if timer is not None:
            w.sched.cancel(timer)  # the caller stops waiting once execute() resolved
        seen = True if observed is None else observed(call.callId, result)
        w.trace.results.append(call_result(call.callId, result, w.is_deeply_frozen(result), seen))


def _abort_at(w: RunState, call: Call, inp: Input) -> Deferred | None:
    """``call.abortAt``: the caller aborts its own signal at a chosen virtual time."""
    if call.abortAt is None:
        return None
    timer = w.sched.timer(call.abortAt)

    def fire(_d: Any) -> None:
        w.obs(call.callId, "checkpoint", "abort", None, "caller", ("P52",))
        inp.signal.abort(ABORT_REASON)
    timer.on_settle(fire)
    return timer


def call_input(w: RunState, call: Call) -> Input:
    """The input object a direct call hands ``execute()`` (section 3.2)."""
    signal = w.signal(f"caller:{call.callId}")
    if call.aborted:
        signal.abort(ABORT_REASON)
    # P23: an input field run by a getter is read once, where entry reads it: rootCallId and
    # name before the definition is looked up, arguments as the snapshot reads it (E1, E2).
    root: Any = call.rootCallId
    if "rootCallId" in call.getters:
        root = read({"$js": "getter", "id": call.getters["rootCallId"]})
        root = None if root is None or is_undefined(root) else root  # input.rootCallId ?? callId
    name: Any = call.name
    if "name" in call.getters:
        name = read({"$js": "getter", "id": call.getters["name"]})
    arguments = clone(call.arguments)
    if "arguments" in call.getters:
        arguments = {"$js": "getter", "id": call.getters["arguments"]}
    return Input(callId=call.callId, name=name, arguments=arguments,
                 signal=signal, agent=call.agent, rootCallId=root,
                 parent="foreign-token" if call.parent else None)
