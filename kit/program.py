"""The scenario's code runtime: it runs a declarative program against the bindings the
``run_code`` bridge hands it, as ``ctx.codeRuntime.run({program, bindings, signal})`` would.

The runtime is not the spec's: DSH leaves program execution to a code runtime (section 1.3),
so a scenario brings its own, scripted one. It is part of the scenario language, so it is
the kit's: the oracle's bridge (``oracle.code_mode``) and a Python port's run it from here,
and the JS kit's ``tools/dsh-adapter/kit/program.mjs`` is the same runtime, step for step
(tools/dsh-adapter/lib/code-runtime.mjs registers it as the real ``ctx.codeRuntime``).
What a program does is what ``kit.scenario.Program`` says; what it sees is recorded in the
trace under stage ``program`` of the ``run_code`` call, so that an implementation's bindings
are checked by what they hand the program (P117, P118, P124, P125):

- ``start``: the binding names the namespace holds;
- ``bind``: the program calls a binding (``n`` counts the program's calls, rejected ones too);
- ``settle``: a call settles, with its value or the error the program would catch
  (``ToolCallError`` naming the binding, or a ``TypeError`` for a name with no binding),
  whether or not the program awaits it;
- ``log``: a printed line; ``late``: the run is over and the ``afterSettle`` steps begin;
- ``end``: what the runtime resolves with, ``{logs, value?}`` or ``{logs, error: {kind, message}}``;
- ``throw``: what ``run()`` rejects with instead (a ``reject`` step: the runtime crashed).

A settlement is recorded by the runtime's own reaction to the promise, registered when the
call is made, so before any ``await`` of the program's resumes. Where settlements of
different calls fall among the program's steps depends on JavaScript's microtask order, which
the spec leaves open: comparisons take the ``settle`` observations by ``n``. The abort of the
run's signal stops the program at once: the runtime resolves with an ``abort`` failure while
the program's pending calls go on settling (P116, P125).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .jsvalue import clone, JsValue, NotLossless, Thrown, is_undefined, message_of, snapshot, token, type_error
from .scenario import Program
from .scheduler import Deferred, Signal
from .session import RunState

# The runtime's own texts (not the spec's: the runtime is the scenario's participant, and
# both kits word them alike).
INVALID_COMPLETION = "the program's completion value is not lossless JSON"
RUN_ABORTED = "the run was aborted"
TOOL_CALL_ERROR = "ToolCallError"  # the namespace's rejection class (bindings' errorClass)


def no_program(code: str) -> str:
    return f'the scenario has no program "{code}"'


def not_a_function(name: str) -> str:
    return f"tools.{name} is not a function"


Binding = Callable[[JsValue], Deferred]
"""A member of the ``tools`` namespace: called with the argument, returns the call's promise."""


@dataclass
class RunRequest:
    """What the bridge hands the runtime (``CodeRunRequest``)."""
    call: str  # the run_code call: the trace lane the program's observations go to
    code: str  # the program's name, run_code's ``code`` argument
    bindings: dict[str, Binding]  # own properties of a null-prototype namespace (P117)
    signal: Signal  # the run's signal (P125)


class _Stop(Exception):
    """The run's signal aborted while the program waited: the program stops there."""


@dataclass(frozen=True)
class _Rejects:
    """What the steps end with at a ``reject`` step: the runtime's ``run()`` rejects with ``thrown``."""
    thrown: JsValue


class _Threw(Exception):
    """The program threw: an awaited rejection it did not catch."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


RULES_SETTLE = ("P118", "P124", "P125")


@dataclass
class ProgramRun:
    w: RunState
    req: RunRequest
    program: Program | None
    logs: list[str] = field(default_factory=list)
    handles: dict[str, Deferred] = field(default_factory=dict)
    calls: int = 0

    @property
    def who(self) -> str:
        return self.req.code

    def obs(self, what: str, value: Any, rules: tuple[str, ...]) -> None:
        self.w.obs(self.req.call, "program", what, self.who, value, rules)

    # ------------------------------------------------------------------ the run

    async def run(self) -> dict[str, Any]:
        result = Deferred()
        signal = self.req.signal

        def finish(outcome: dict[str, Any]) -> None:
            if not result.done:
                self.obs("end", outcome, ("P128",))
                result.resolve(outcome)

        def crash(rejects: _Rejects) -> None:
            if not result.done:
                self.obs("throw", rejects.thrown, ("P125",))
                result.reject(Thrown(clone(rejects.thrown)))

        # Sorted as JavaScript sorts strings (by UTF-16 code units): the namespace's order is not the spec's.
        self.obs("start", {"bindings": sorted(self.req.bindings, key=lambda s: s.encode("utf-16-be", "surrogatepass"))},
                 ("P117",))
        if self.program is None:
            finish({"logs": [], "error": {"kind": "exception", "message": no_program(self.req.code)}})
            return await result
        # The runtime stops the program when the run's signal aborts; a continuation the
        # program left behind (afterSettle) runs then.
        signal.listen(lambda _s: finish(self.failure("abort", RUN_ABORTED)))
        if self.program.afterSettle:
            signal.listen(lambda _s: self.w.sched.start(self.late()))
        steps = self.w.sched.start(self.steps())
        steps.on_settle(lambda d: None if d.error is not None else crash(d.value) if isinstance(d.value, _Rejects)
                        else finish(d.value))
        return await result

    def failure(self, kind: str, message: str) -> dict[str, Any]:
        return {"logs": list(self.logs), "error": {"kind": kind, "message": message}}

    async def steps(self) -> dict[str, Any] | _Rejects:
        assert self.program is not None
        try:
            for step in self.program.steps:
                if self.req.signal.aborted:
                    raise _Stop()
                match step.do:
                    case "call":
                        pending = self.call(step.tool, step.arguments)
                        if step.as_ is not None:
                            self.handles[step.as_] = pending
                        else:
                            await self.wait(pending, step.catch)
                    case "await":
                        await self.wait(self.handles[step.handle], step.catch)
                    case "log":
                        self.logs.append(step.text)
                        self.obs("log", step.text, ("P128",))
                    case "sleep":
                        await self.wait(self.w.sched.timer(step.ms), False)
                    case "return":
                        return self.completion(step.value)
                    case "throw":
                        raise _Threw(step.message)
                    case "fail":
                        return self.failure(step.kind, step.message)
                    case "reject":
                        return _Rejects(step.thrown)
        except _Threw as t:
            return self.failure("exception", t.message)
        except _Stop:
            return self.failure("abort", RUN_ABORTED)
        return self.completion({"$js": "undefined"})

    def completion(self, value: JsValue) -> dict[str, Any]:
        """The run's result for a completion value: only lossless JSON crosses (P128)."""
        if is_undefined(value):
            return {"logs": list(self.logs)}
        try:
            return {"logs": list(self.logs), "value": snapshot(value)}
        except (NotLossless, Thrown):
            return self.failure("invalid-output", INVALID_COMPLETION)

    async def late(self) -> None:
        """The ``afterSettle`` steps, once the run is over: calls are not dispatched (P118), and
        awaited handles show how their calls ended (P125)."""
        assert self.program is not None
        self.obs("late", None, ("P125",))
        for step in self.program.afterSettle:
            if step.do == "call":
                pending = self.call(step.tool, step.arguments)
                if step.as_ is not None:
                    self.handles[step.as_] = pending
                else:
                    await _settled(pending)
            elif step.do == "await" and step.handle in self.handles:  # a call the program never reached: nothing to await
                await _settled(self.handles[step.handle])

    # ------------------------------------------------------------------ calls

    def call(self, name: str, arguments: JsValue) -> Deferred:
        """``tools[name](arguments)``: the binding's promise, its settlement recorded."""
        self.calls += 1
        n = self.calls
        self.obs("bind", {"n": n, "tool": name, "arguments": arguments}, ("P117", "P118"))
        binding = self.req.bindings.get(name)
        if binding is None:  # a null-prototype namespace has nothing else under that name
            pending = Deferred()
            pending.reject(Thrown(type_error(not_a_function(name))))
        else:
            pending = binding(clone(arguments))
        pending.on_settle(lambda d: self.record(n, name, d))
        return pending

    def record(self, n: int, name: str, d: Deferred) -> None:
        """The runtime's reaction to a call's settlement: the first one registered, so it
        runs before the program's own ``await`` goes on."""
        entry: dict[str, Any] = {"n": n, "tool": name}
        if d.error is None:
            entry["value"] = d.value
        else:
            entry["error"] = _caught(name, d.error.value)
        self.obs("settle", entry, RULES_SETTLE)

    async def wait(self, pending: Deferred, catch: bool) -> None:
        """Await ``pending`` while the run lasts: an abort of the run's signal stops the program."""
        first = await self.w.sched.any_of(pending, self.req.signal.on_abort)
        if first == 1 or self.req.signal.aborted:
            raise _Stop()
        if pending.error is not None and not catch:
            raise _Threw(message_of(pending.error.value))


async def _settled(pending: Deferred) -> None:
    try:
        await pending
    except Thrown:
        pass


def _caught(name: str, x: JsValue) -> dict[str, Any]:
    """What the program catches: a binding's rejection arrives as the namespace's
    ``ToolCallError`` naming the binding (the runtime materializes the declared class); a
    name without a binding throws a ``TypeError`` where it is called."""
    if token(x) == "error" and x.get("class") == "TypeError" and x.get("message") == not_a_function(name):
        return {"name": "TypeError", "message": x["message"]}
    return {"name": TOOL_CALL_ERROR, "toolName": name, "message": message_of(x)}


async def run_program(w: RunState, req: RunRequest) -> dict[str, Any]:
    """``codeRuntime.run(request)``: resolves with ``{logs, value?}`` or ``{logs, error}``,
    or rejects (raises ``Thrown``) at a ``reject`` step."""
    program = next((p for p in w.scenario.programs if p.id == req.code), None)
    return await ProgramRun(w, req, program).run()
