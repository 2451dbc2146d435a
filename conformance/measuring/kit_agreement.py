"""``dsh-conformance kit agree``: the two kits give a scenario one meaning, shown by running both.

A scenario is interpreted twice: by the Python kit (``kit/``: the oracle and Python ports) and
by the JavaScript kit (``tools/dsh-adapter/kit/``: the real package's adapter and every JS
port). The starter example is written once on each (``examples/core_pipeline.py``,
``examples/core_pipeline.mjs``), stage for stage the same pipeline; both are run over the
corpus and over generated draws (several seeds, every profile) and their answers compared:
the same kind of answer (trace, skip or error), and traces that are identical, JSON for JSON.
A difference is a difference of the kits (or of the two examples): where the kits differ, a
port is judged on how the suite read the scenario rather than on its pipeline.

The comparison is exact: the observations the suite compares, lane by lane (a call's, a
getter's, a program's: how lanes interleave is never compared), the events, results and
warnings, in order, value for value as the protocol carries them. Where the suite's own comparison (``compare.judge``) would let a
difference through (an engine's wording of a refused write, say), it is still counted, apart.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dsh_conformance.iut.connection import IUTFailure
from dsh_conformance.iut.process import ProcessIUT
from dsh_conformance.iut.protocol import Errored, Skipped, Traced
from dsh_conformance.judge.compare import judge
from dsh_conformance.judge.lanes import observations_by_call
from dsh_conformance.resources import EXAMPLES
from dsh_conformance.spec.corpus import load_corpus
from dsh_conformance.strategies.citation import ALL_PROFILES
from dsh_conformance.strategies.draws import draw_examples

PYTHON_EXAMPLE = EXAMPLES / "core_pipeline.py"
JS_EXAMPLE = EXAMPLES / "core_pipeline.mjs"
PROFILE_SETS: tuple[frozenset[str], ...] = (frozenset({"core"}), frozenset({"core", "reference"}),
                                           frozenset({"code-mode"}), frozenset({"loop"}), ALL_PROFILES)
"""The generated draws are drawn for each of these (what a run under ``--profiles`` draws)."""


@dataclass
class Agreement:
    """What a comparison found: scenarios run, answers identical, and each difference."""

    scenarios: int = 0
    identical: int = 0
    traced: int = 0  # both answered a trace
    skipped: int = 0  # both answered the same skip: nothing of the kits was compared (a loop run, say)
    differences: list[tuple[str, str]] = field(default_factory=list)  # (label, what differs)
    judged_equal: int = 0  # differences the suite's own comparison would let through

    def summary(self) -> str:
        line = (f"{self.scenarios} scenarios: {self.identical} identical answers ({self.traced} traces, "
                f"{self.skipped} skipped by both), {len(self.differences)} different")
        if self.judged_equal:
            line += f" ({self.judged_equal} of them equal by the suite's comparison)"
        return line


def _answer_doc(a: Traced | Skipped | Errored) -> dict[str, Any]:
    if isinstance(a, Traced):
        # What an implementation reports: the observations the suite compares (the Python
        # kit's notes on why, its rules and its checkpoints, aside), lane by lane as the suite
        # compares them, each lane in the order its observations came.
        trace = a.trace.model_dump(by_alias=True, exclude={"scenario"})
        lanes = {lane: [{k: v for k, v in trace["observations"][n].items() if k != "rules"} for _item, _why, n in items]
                 for lane, items in observations_by_call(a.trace).items()}
        trace["observations"] = _abandoned_answerers(lanes)
        for e in trace["events"]:
            e.pop("at", None)  # where an event falls among the observations: no comparison reads it
        trace["events"], trace["dispatch-log"] = dispatch_log_apart(trace["events"])
        return {"trace": trace}
    if isinstance(a, Skipped):
        return {"skipped": a.reason}
    return {"errored": a.message}


def _abandoned_answerers(lanes: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """P43: where the shipped service answered `cancelled`, its answerers were abandoned, and
    where their late steps fall against the call's next stages is microtask order (the suite
    puts them in a lane of their own where the oracle notes the abandon): so here too."""
    out = dict(lanes)
    for call, items in lanes.items():
        if any(o["stage"] == "approval" and o["what"] == "outcome" and o["value"] == "cancelled" for o in items):
            answerer = [o for o in items if o["stage"] == "approval" and o["who"] not in (None, "approval")]
            if answerer:
                out[call] = [o for o in items if o not in answerer]
                out[f"{call} answerers"] = answerer
    return out


def dispatch_log_apart(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """P122: a sub-call's ``tool/code-dispatch`` follows its commit after the log waterfall, so
    where it falls against later starts and commits is microtask order (a JS port's every
    ``await`` takes a turn the Python kit's scheduler need not): as the suite compares them
    (``compare.event_lanes``), the dispatch logs go in a lane of their own, by sub-call, and
    the other events are compared by place, without their sequence numbers."""
    if not any(e["type"] == "tool/code-dispatch" for e in events):
        return events, []

    def sub_call(e: dict[str, Any]) -> tuple[str, str, int]:
        head, _, n = str(e["data"].get("subCallId", "")).rpartition(":code:")
        return (e["agent"], head, int(n) if n.isdigit() else 0)
    logs = sorted((e for e in events if e["type"] == "tool/code-dispatch"), key=sub_call)
    rest = [e for e in events if e["type"] != "tool/code-dispatch"]
    return [{k: v for k, v in e.items() if k != "seq"} for e in rest], [{k: v for k, v in e.items() if k != "seq"}
                                                                        for e in logs]


def _text(v: Any) -> str:
    return json.dumps(v, default=str, ensure_ascii=True)


def _first_difference(py: dict[str, Any], js: dict[str, Any]) -> str:
    if py.keys() != js.keys():
        return f"python answered {_text(py)[:300]}, javascript {_text(js)[:300]}"
    if "trace" not in py:
        return f"python: {_text(py)[:300]}; javascript: {_text(js)[:300]}"
    pa, pb = py["trace"]["observations"], js["trace"]["observations"]
    parts = [(f"observations[{lane}]", pa.get(lane, []), pb.get(lane, [])) for lane in dict.fromkeys([*pa, *pb])]
    parts += [(part, py["trace"].get(part, []), js["trace"].get(part, []))
              for part in ("events", "dispatch-log", "results", "warnings")]
    for part, a, b in parts:
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else None
            y = b[i] if i < len(b) else None
            if x != y:
                return f"{part}[{i}]: python {_text(x)[:400]}; javascript {_text(y)[:400]}"
    return "the traces differ"


def compare(scenarios: Iterable[tuple[str, dict[str, Any]]], python: list[str] | None = None,
            js: list[str] | None = None, limit: int = 20, progress: bool = False) -> Agreement:
    """Run each (label, scenario document) on both examples and compare the answers
    (``progress``: a line on stderr every 500 scenarios)."""
    found = Agreement()
    py_iut = ProcessIUT(python or [sys.executable, str(PYTHON_EXAMPLE)])
    js_iut = ProcessIUT(js or [node(), str(JS_EXAMPLE)])
    with py_iut, js_iut:
        py_iut.start()
        js_iut.start()
        for seq, (label, doc) in enumerate(scenarios, start=1):
            found.scenarios += 1
            if progress and found.scenarios % 500 == 0:
                print(f"... {found.summary()}", file=sys.stderr, flush=True)
            answers = []
            for iut in (py_iut, js_iut):
                try:
                    answers.append(iut.run(seq, doc))
                except IUTFailure as e:
                    answers.append(Errored(seq=seq, errored=True, message=f"{e.kind}: {e}"))
                    iut.restart()
            py, js_ = (_answer_doc(a) for a in answers)
            if py == js_:
                found.identical += 1
                found.traced += "trace" in py
                found.skipped += "skipped" in py
                continue
            a, b = answers
            if isinstance(a, Traced) and isinstance(b, Traced) and judge(a.trace, b.trace, set(ALL_PROFILES))[0] is None:
                found.judged_equal += 1
            if len(found.differences) < limit:
                found.differences.append((label, _first_difference(py, js_)))
            else:
                found.differences.append((label, ""))
    return found


def node() -> str:
    return shutil.which("node") or "node"


def corpus_scenarios() -> Iterator[tuple[str, dict[str, Any]]]:
    for case in load_corpus():
        yield case.id, case.document


def drawn_scenarios(seeds: Iterable[int], examples: int,
                    profile_sets: Iterable[frozenset[str]] = PROFILE_SETS) -> Iterator[tuple[str, dict[str, Any]]]:
    """``examples`` independent draws per seed and profile set (the draws a run makes)."""
    for profiles in profile_sets:
        for seed in seeds:
            for i, example in enumerate(draw_examples(examples, seed, profiles)):
                yield f"seed {seed} ({','.join(sorted(profiles))}) draw {i + 1}", example.doc


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def cmd_agree(args: argparse.Namespace) -> int:
    """Both examples over the corpus and the draws; exit 1 when any answer differs."""
    seeds = _seeds(args.seeds)
    scenarios: list[Iterable[tuple[str, dict[str, Any]]]] = []
    if not args.no_corpus:
        scenarios.append(corpus_scenarios())
    profile_sets = PROFILE_SETS if args.profiles is None else (frozenset(args.profiles.split(",")),)
    scenarios.append(drawn_scenarios(seeds, args.examples, profile_sets))

    def chained() -> Iterator[tuple[str, dict[str, Any]]]:
        for part in scenarios:
            yield from part
    found = compare(chained(), progress=True)
    for label, what in found.differences:
        if what:
            print(f"DIFFERENT {label}: {what}")
    print(found.summary())
    return 0 if not found.differences else 1


__all__ = ["Agreement", "compare", "corpus_scenarios", "drawn_scenarios", "cmd_agree", "PYTHON_EXAMPLE", "JS_EXAMPLE"]
