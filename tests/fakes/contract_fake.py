"""Implementations that break the trace contract (the observation catalog), one per mode.

``python tests/fakes/contract_fake.py MODE`` serves the IUT protocol as the oracle does,
with every trace it answers changed in one way on the wire:

- ``ok-for-applied``: a ``mutate`` outcome reads ``ok`` instead of ``applied`` (a word
  outside the catalog's vocabulary);
- ``missing-field``: a ``mutate`` value has no ``outcome``;
- ``extra-kind``: one observation more, of a kind the catalog does not have (a probe's ``call``
  at its first stage);
- ``skip-post-listener``: the first ``tools/post-execute`` listener's observations are
  left out, as by an implementation whose waterfall never calls it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from dsh_conformance.oracle import serve
from serve_loop import serve_with  # the script's own directory is on sys.path

MODE = sys.argv[1]


def _mutates(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in trace["observations"] if o["what"] == "mutate"]


def change(trace: dict[str, Any]) -> None:
    obs = trace["observations"]
    if MODE == "ok-for-applied":
        for o in _mutates(trace):
            if o["value"]["outcome"] == "applied":
                o["value"]["outcome"] = "ok"
    elif MODE == "missing-field":
        for o in _mutates(trace):
            del o["value"]["outcome"]
    elif MODE == "extra-kind":
        first = next(o for o in obs if o["what"] == "start" and o["who"] is None)
        obs.insert(obs.index(first) + 1, {**first, "what": "call"})
    elif MODE == "skip-post-listener":
        listener = next((o["who"] for o in obs if o["stage"] == "post-execute" and o["who"] is not None), None)
        trace["observations"] = [o for o in obs if not (o["stage"] == "post-execute" and o["who"] == listener)]
    else:
        raise SystemExit(f"unknown mode {MODE!r}")


def answer(msg: dict[str, Any]) -> dict[str, Any]:
    reply = serve.answer(msg["seq"], msg["scenario"])
    if "trace" in reply:
        reply = json.loads(json.dumps(reply))  # a copy of the oracle's own values
        change(reply["trace"])
    return reply


def main() -> int:
    return serve_with(answer, lambda started: started["implementation"].update(name=f"fake-{MODE}"))


if __name__ == "__main__":
    sys.exit(main())
