"""What the in-process watchdog costs: ``python -m tools.bench_inprocess [REPEATS]``.

Runs the corpus through the embedded oracle's ``answer()`` called directly and through
``conformance.iut.InProcessIUT`` (a worker thread under a timeout), alternating, and prints
the best time of each (the best of several runs is what a loaded, shared machine lets one
compare), then the bare cost of one hand-off to the worker.
"""

from __future__ import annotations

import sys
import time


def main(argv: list[str] | None = None) -> int:
    from dsh_conformance.corpus import CASES
    from dsh_conformance.iut import _Worker, embedded_oracle
    from dsh_conformance.protocol import parse_answer
    from dsh_conformance.runner import corpus_items
    from dsh_conformance.oracle.serve import answer

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

    best = {"called directly": float("inf"), "through the watchdog": float("inf")}
    for _ in range(repeats):
        for name, fn in (("called directly", direct), ("through the watchdog", watched)):
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    iut.close()
    for name, seconds in best.items():
        print(f"{name:<22} {seconds / len(docs) * 1000:.3f} ms a scenario ({len(docs)} scenarios, best of {repeats})")
    worker = _Worker()
    hand_off = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(10_000):
            worker.call(lambda: None, 30)
        hand_off = min(hand_off, (time.perf_counter() - t0) / 10_000)
    print(f"one hand-off to the worker: {hand_off * 1e6:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
