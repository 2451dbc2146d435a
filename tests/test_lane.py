"""kit.scheduler's Lane and settle_all: the pieces a run_code bridge's lane is built from
(P121, P125), shared by the oracle and the Python example. What they promise: one task at a
time, a wakeup during a turn is not lost, a lane that ends can be driven again, and a drain
waits for work added while it waits, whatever a task's outcome."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_conformance.kit.jsvalue import Thrown
from dsh_conformance.kit.scheduler import Lane, Scheduler, Task, settle_all


class Queue:
    """A lane that takes one item per turn, sleeping while nothing is queued and ending when
    told to."""

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched
        self.items: list[str] = []
        self.done: list[str] = []
        self.closing = False
        self.turns = 0
        self.lane = Lane(sched, self.turn)

    async def turn(self) -> str:
        self.turns += 1
        if self.items:
            item = self.items.pop(0)
            await self.sched.tick()
            self.done.append(item)
            return "again"
        return "done" if self.closing else "sleep"

    def push(self, item: str) -> None:
        self.items.append(item)
        self.lane.wakeup()
        self.lane.drive()


@pytest.mark.rules("P121")
def test_a_lane_takes_its_work_in_order_and_sleeps_until_woken() -> None:
    sched = Scheduler()
    q = Queue(sched)

    async def main() -> list[str]:
        q.push("a")
        q.push("b")
        first = q.lane.drive()
        assert q.lane.drive() is first  # one task while it runs
        await sched.timer(5)
        turns = q.turns
        await sched.timer(5)
        assert q.turns == turns  # asleep: no turn without a wakeup
        q.push("c")
        q.closing = True
        q.lane.wakeup()
        await first
        return q.done
    assert sched.run(main()) == ["a", "b", "c"]


@pytest.mark.rules("P121")
def test_a_wakeup_during_a_turn_is_kept() -> None:
    sched = Scheduler()
    q = Queue(sched)

    async def main() -> list[str]:
        q.items.append("a")
        task = q.lane.drive()  # the turn on "a" waits on a tick
        q.items.append("b")
        q.lane.wakeup()  # during that turn
        await sched.timer(1)
        q.closing = True
        q.lane.wakeup()
        await task
        return q.done
    assert sched.run(main()) == ["a", "b"]


@pytest.mark.rules("P125")
def test_a_lane_that_ended_is_driven_again() -> None:
    sched = Scheduler()
    q = Queue(sched)
    q.closing = True

    async def main() -> list[str]:
        ended = q.lane.drive()  # nothing to do: it ends within drive()
        assert ended.done
        q.push("late")
        again = q.lane.drive()
        assert again is not ended
        await again
        return q.done
    assert sched.run(main()) == ["late"]


@pytest.mark.rules("P125")
def test_settle_all_waits_for_work_added_meanwhile_and_ignores_rejections() -> None:
    sched = Scheduler()
    tasks: dict[int, Task] = {}
    order: list[str] = []

    def add(key: int, coro: Any) -> None:
        task = sched.start(coro)
        if not task.done:
            tasks[key] = task
            task.on_settle(lambda _d: tasks.pop(key, None))

    async def fails() -> None:
        await sched.timer(3)
        order.append("fails")
        raise Thrown("boom")

    async def spawns() -> None:
        await sched.timer(1)
        order.append("spawns")
        add(3, late())

    async def late() -> None:
        await sched.timer(10)
        order.append("late")

    async def main() -> list[str]:
        add(1, fails())
        add(2, spawns())
        await settle_all(tasks)
        assert not tasks
        return order
    assert sched.run(main()) == ["spawns", "fails", "late"]

