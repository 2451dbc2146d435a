"""What running an implementation under the suite's watch costs:
``python -m dsh_conformance.tools.bench_inprocess [REPEATS]``.

Runs the corpus through the embedded oracle's ``answer()`` called directly, through
``conformance.iut.InProcessIUT`` (a worker thread under a timeout: the embedded oracle's
path), and through ``conformance.iut.PythonIUT`` (the worker process that ``--impl
py:MODULE`` runs, here with the oracle's own module), alternating, and prints the best time
of each (the best of several runs is what a loaded, shared machine lets one compare), then
the bare cost of one hand-off to the worker thread and the worker process's start.
"""

from __future__ import annotations

import sys
import time

from dsh_conformance.iut.in_process import Worker, embedded_oracle
from dsh_conformance.iut.process import PythonIUT
from dsh_conformance.iut.protocol import parse_answer
from dsh_conformance.oracle.serve import answer
from dsh_conformance.running.references import corpus_items
from dsh_conformance.spec.corpus import CASES




def main(argv: list[str] | None = None) -> int:
    repeats = int((argv if argv is not None else sys.argv[1:] or ["15"])[0])
    docs = [doc for _, doc, _ in corpus_items(CASES)]
    iut = embedded_oracle()
    iut.start()

    def direct() -> None:
        for n, doc in enumerate(docs):
            parse_answer(answer(n, doc))

    def watched() -> None:
        for n, doc in enumerate(docs):
            iut.run(n, doc)

    t0 = time.perf_counter()
    worker = PythonIUT("dsh_conformance.oracle.serve")
    worker.start()
    worker_start = time.perf_counter() - t0

    def in_a_worker() -> None:
        for n, doc in enumerate(docs):
            worker.run(n, doc)

    best = {"called directly": float("inf"), "through the watchdog": float("inf"),
            "in a worker process": float("inf")}
    for _ in range(repeats):
        for name, fn in (("called directly", direct), ("through the watchdog", watched),
                         ("in a worker process", in_a_worker)):
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    iut.close()
    worker.close()
    for name, seconds in best.items():
        print(f"{name:<22} {seconds / len(docs) * 1000:.3f} ms a scenario ({len(docs)} scenarios, best of {repeats})")
    thread = Worker()
    hand_off = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(10_000):
            thread.call(lambda: None, 30)
        hand_off = min(hand_off, (time.perf_counter() - t0) / 10_000)
    print(f"one hand-off to the worker thread: {hand_off * 1e6:.1f} us")
    print(f"the worker process's start and handshake: {worker_start * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
