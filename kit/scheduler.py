"""A deterministic, single-threaded stand-in for the JavaScript event loop.

Pipeline stages are ``async`` functions. Awaiting another coroutine never suspends; a
task suspends only on a ``Deferred`` that is not settled yet: an abort signal, a timer
of virtual time, a loop gate, or another task. Ready tasks run in FIFO order and virtual
time only advances when nothing is ready, so a scenario always produces the same trace.
A run in which every task waits and no timer is pending never settles in JavaScript
either: it is reported as ``Deadlock`` (a bad scenario, not an oracle verdict).
"""

from __future__ import annotations

import heapq
import inspect
from collections import deque
from collections.abc import Callable, Coroutine, Generator
from typing import Any

from .jsvalue import JsValue, Thrown


ABORT_REASON = {"$js": "error", "class": "DOMException", "name": "AbortError",
                "message": "This operation was aborted"}
"""What ``AbortController.abort()`` without a reason aborts with (a DOMException
AbortError): the caller's abort, a ``cancel()`` and an ``abort`` step without a reason."""


class Deadlock(Exception):
    """Every task waits and nothing can wake them: the scenario never settles."""


class Deferred:
    """A one-shot settlement that tasks can wait on (a promise, in JS terms)."""

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self.error: Thrown | None = None
        self._callbacks: list[Callable[[Deferred], None]] = []

    def resolve(self, value: Any = None) -> None:
        if not self.done:
            self.done, self.value = True, value
            self._fire()

    def reject(self, error: Thrown) -> None:
        if not self.done:
            self.done, self.error = True, error
            self._fire()

    def on_settle(self, fn: Callable[[Deferred], None]) -> None:
        if self.done:
            fn(self)
        else:
            self._callbacks.append(fn)

    def _fire(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(self)

    def __await__(self) -> Generator[Deferred, None, Any]:
        if not self.done:
            yield self
        if self.error is not None:
            raise self.error
        return self.value


class Task(Deferred):
    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        super().__init__()
        self.coro = coro


class Scheduler:
    def __init__(self) -> None:
        self.now = 0
        self._ready: deque[Task] = deque()
        self._timers: list[tuple[int, int, Deferred]] = []
        self._seq = 0

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> Task:
        task = Task(coro)
        self._ready.append(task)
        return task

    def start(self, coro: Coroutine[Any, Any, Any]) -> Task:
        """Call an async function as JavaScript does: it runs at once, up to its first real
        wait, and the caller goes on with the promise (the task)."""
        task = Task(coro)
        self._step(task)
        return task

    def tick(self) -> Deferred:
        """A wait that lets every task already ready run first: what an ``await`` of an
        already settled promise costs in JavaScript (one turn of the microtask queue)."""
        d = Deferred()

        async def resolve() -> None:
            d.resolve(None)
        self.spawn(resolve())
        return d

    def timer(self, ms: int) -> Deferred:
        d = Deferred()
        self._seq += 1
        heapq.heappush(self._timers, (self.now + ms, self._seq, d))
        return d

    def cancel(self, d: Deferred) -> None:
        """Drop a pending timer: it never fires."""
        d.done = True

    def any_of(self, *ds: Deferred) -> Deferred:
        """Settles with the index of the first of ``ds`` to settle."""
        out = Deferred()
        for i, d in enumerate(ds):
            d.on_settle(lambda _d, i=i: out.resolve(i))
        return out

    def _step(self, task: Task) -> None:
        try:
            waited = task.coro.send(None)
        except StopIteration as stop:
            task.resolve(stop.value)
            return
        except Thrown as thrown:
            task.reject(thrown)
            return
        assert isinstance(waited, Deferred), f"a task awaited {waited!r}"
        waited.on_settle(lambda _d: self._ready.append(task))

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` and every task it spawns until ``coro`` settles."""
        main = self.spawn(coro)
        try:
            while True:
                while self._ready:
                    self._step(self._ready.popleft())
                if main.done and not self._ready:
                    break
                if not self._timers:
                    if main.done:
                        break
                    raise Deadlock("every task waits on something that never happens")
                when, _, d = heapq.heappop(self._timers)
                if d.done:  # cancelled
                    continue
                self.now = max(self.now, when)
                d.resolve(None)
        except BaseException:
            self._abandon()
            raise
        if main.error is not None:
            raise main.error
        return main.value


    def _abandon(self) -> None:
        """The run ends early (a scenario error, Ctrl-C or SIGTERM landing mid-run): the
        tasks spawned and never started are closed, not left to the collector, which would
        warn of each coroutine that it was never awaited (on the run's stderr, after the
        one line an interrupted run ends with). Started ones are closed by the collector
        without a word."""
        ready, self._ready = self._ready, deque()
        for task in ready:
            if inspect.getcoroutinestate(task.coro) == inspect.CORO_CREATED:
                task.coro.close()


class Lane:
    """One task that works through its own queues while there is work and sleeps until woken:
    JavaScript's ``while (true) { ...; await new Promise((r) => (this.wake = r)) }`` run by
    whoever calls ``drive`` first. ``turn`` takes one step and says what follows: "again",
    "sleep" until the next ``wakeup``, or "done" (the task ends, and the next ``drive``
    starts another). A wakeup during a turn is kept: the sleep after that turn ends at once.
    ``drive`` is for the lane's clients (a turn that drove its own lane before its first wait
    would start a second task)."""

    def __init__(self, sched: Scheduler, turn: Callable[[], Coroutine[Any, Any, str]]) -> None:
        self._sched, self._turn = sched, turn
        self._wake: Deferred | None = None
        self._task: Task | None = None

    def wakeup(self) -> None:
        wake, self._wake = self._wake, None
        if wake is not None:
            wake.resolve(None)

    def drive(self) -> Task:
        """The running task, or a new one started now (it runs up to its first wait)."""
        if self._task is None:
            task = self._sched.start(self._run())
            # A lane with nothing to do ends within start(): no task is left running then.
            self._task = None if task.done else task
            return task
        return self._task

    async def _run(self) -> None:
        try:
            while True:
                wake = self._wake = Deferred()
                step = await self._turn()
                if step == "done":
                    return
                if step == "sleep":
                    await wake
        finally:
            self._task = self._wake = None


async def settle_all(tasks: dict[Any, Task]) -> None:
    """Wait, one task at a time, until ``tasks`` is empty: each removes itself when it
    settles, and one may add another meanwhile. A rejection is the task's own business
    (what JavaScript's ``await Promise.allSettled`` of the set, repeated, does)."""
    while tasks:
        for task in list(tasks.values()):
            try:
                await task
            except Thrown:
                pass


class Signal:
    """An AbortSignal. Abort listeners run synchronously, as DOM abort events do."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.aborted = False
        self.reason: JsValue = None
        self.on_abort = Deferred()
        self._listeners: list[Callable[[Signal], None]] = []

    def abort(self, reason: JsValue) -> None:
        if self.aborted:
            return
        self.aborted, self.reason = True, reason
        listeners, self._listeners = self._listeners, []
        for fn in listeners:
            fn(self)
        self.on_abort.resolve(None)

    def listen(self, fn: Callable[[Signal], None]) -> Callable[[], None]:
        self._listeners.append(fn)

        def dispose() -> None:
            if fn in self._listeners:
                self._listeners.remove(fn)
        return dispose


def fuse(caller: Signal, current: Signal, name: str) -> tuple[Signal, Callable[[], None]]:
    """P60: one signal that aborts when either source aborts; the record's reason wins
    when both are already aborted. Returns the signal and its detach function."""
    if caller is current:
        return caller, lambda: None
    fused = Signal(name)
    if current.aborted:
        fused.abort(current.reason)
        return fused, lambda: None
    if caller.aborted:
        fused.abort(caller.reason)
        return fused, lambda: None
    disposers: list[Callable[[], None]] = []

    def relay(source: Signal) -> None:
        fused.abort(source.reason)
        for d in disposers:
            d()
    disposers.append(caller.listen(relay))
    disposers.append(current.listen(relay))

    def detach() -> None:
        for d in disposers:
            d()
    return fused, detach
