"""Deliberately wrong Code Mode implementations, one per mode, for the suite's own tests.

``python tests/fakes/code_mode_fake.py MODE`` serves the IUT protocol with the oracle's
run_code bridge changed in one way, so each is a real (wrong) implementation that breaks
one oracle-independent law of ``conformance.laws.code_mode``.
"""

from __future__ import annotations

import sys
from collections import deque


from dsh_conformance.oracle import code_mode, pipeline  # noqa: E402
from dsh_conformance.kit.jsvalue import NotLossless, Thrown, snapshot  # noqa: E402
from serve_loop import serve_as  # noqa: E402  (the script's own directory is on sys.path)

MODE = sys.argv[1]
Bridge = code_mode.Bridge


def rejected_calls_take_numbers() -> None:
    """A binding call rejected for its argument still takes a sub-call number (P118, P119)."""
    original = Bridge.call

    async def call(self, name, raw):
        try:
            snapshot(raw)
        except (NotLossless, Thrown):
            if not self.signal.aborted:
                self.rec.sub_calls += 1
        return await original(self, name, raw)
    Bridge.call = call


def nested_calls_compute_meta() -> None:
    """A sub-call computes ``meta`` as a top-level call would (P120, P74)."""
    original = pipeline.success

    def success(w, rec, tool, candidate):
        parent, rec.parent = rec.parent, None
        try:
            return original(w, rec, tool, candidate)
        finally:
            rec.parent = parent
    pipeline.success = success


def start_logged_late() -> None:
    """``tool/code-dispatch-start`` is appended after the sub-call entered the registry (P122)."""

    async def start(self, sub):
        sub_rec, route = await self.stages.prepare(self.w, sub.input)
        if self.rec.agent is not None:
            self.w.append_event(self.rec.agent, "tool/code-dispatch-start", self._entry(sub))
        if route.kind == "dispatch":
            self.w.sched.spawn(self._dispatch(sub, sub_rec))
            return
        sub.parked, sub.settled = (sub_rec, route), True
        sub.flight.resolve(None)
    Bridge.start = start


def sub_calls_root_themselves() -> None:
    """A sub-call's root id is its own id, not the run_code record's root (P119)."""
    original = Bridge.start

    async def start(self, sub):
        sub.input.rootCallId = sub.input.callId
        await original(self, sub)
    Bridge.start = start


class LandingOrder(deque):
    """A commit queue whose head is the first sub-call that settled."""

    def _first(self):
        return next((i for i, s in enumerate(self) if s.settled), 0)

    def __getitem__(self, i):
        return super().__getitem__(self._first() if i == 0 else i)

    def popleft(self):
        item = self[0]
        self.remove(item)
        return item


def commits_as_they_land() -> None:
    """Sub-calls commit in the order their bodies finish, not in submission order (P121)."""
    original = Bridge.__init__

    def init(self, w, rec, stages):
        original(self, w, rec, stages)
        self.commits = LandingOrder()
    Bridge.__init__ = init


def exclusive_runs_in_parallel() -> None:
    """Every sub-call is classified parallel: an exclusive one overlaps others (P121)."""
    code_mode.classify = lambda w, inp: "parallel"


def no_overlap_cap() -> None:
    """``maxParallelSubCalls`` is ignored (P121)."""
    original = Bridge.__init__

    def init(self, w, rec, stages):
        original(self, w, rec, stages)
        w.scenario = w.scenario.model_copy(update={"maxParallelSubCalls": 1000})
    Bridge.__init__ = init


def bindings_get_content() -> None:
    """A successful sub-call resolves its binding with its content, not its value (P124)."""
    original = Bridge.settle

    def settle(self, sub, result):
        if not result["isError"]:
            result = {**result, "value": result["content"]}
        original(self, sub, result)
    Bridge.settle = settle


def returns_before_commits() -> None:
    """run_code's body returns without waiting for started sub-calls (P125)."""

    async def drain(self):
        return None
    Bridge.drain = drain


def contexts_stay_on_sub_calls() -> None:
    """Sub-call contexts are not deferred on run_code (P126)."""
    original = Bridge.commit

    async def commit(self, sub):
        saved = list(self.rec.deferred)
        await original(self, sub)
        self.rec.deferred[:] = saved
    Bridge.commit = commit


def conclusion_not_forwarded() -> None:
    """A concluding sub-call does not mark run_code (P127)."""
    original = Bridge.commit

    async def commit(self, sub):
        concluded = self.rec.concluded
        await original(self, sub)
        self.rec.concluded = concluded
    Bridge.commit = commit


def compact_rendering() -> None:
    """run_code renders its result as compact JSON, whatever its depth (P128)."""
    original = code_mode.render_json
    code_mode.render_json = lambda v, depth=0, compact=False: original(v, depth, True)


PATCHES = {
    "rejected-calls-take-numbers": rejected_calls_take_numbers,
    "nested-calls-compute-meta": nested_calls_compute_meta,
    "start-logged-late": start_logged_late,
    "sub-calls-root-themselves": sub_calls_root_themselves,
    "commits-as-they-land": commits_as_they_land,
    "exclusive-runs-in-parallel": exclusive_runs_in_parallel,
    "no-overlap-cap": no_overlap_cap,
    "bindings-get-content": bindings_get_content,
    "returns-before-commits": returns_before_commits,
    "contexts-stay-on-sub-calls": contexts_stay_on_sub_calls,
    "conclusion-not-forwarded": conclusion_not_forwarded,
    "compact-rendering": compact_rendering,
}


def main() -> int:
    PATCHES[MODE]()
    return serve_as(f"fake-{MODE}")


if __name__ == "__main__":
    sys.exit(main())
