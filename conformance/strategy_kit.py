"""The smallest pieces the scenario strategies are built of: weighted choice, and the
content blocks, messages and errors they write (shared by ``conformance.strategies`` and
``conformance.code_mode_strategies``)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

S = st.SearchStrategy


def weighted(*branches: tuple[int, Any]) -> S:
    """Draw from one of ``branches``, each ``(weight, strategy or plain value)``, chosen
    with probability proportional to its weight. Shrinking goes to the first branch, so
    list the plain case first. (``st.one_of`` would not do: it ignores repeated branches.)"""
    if not any(isinstance(s, st.SearchStrategy) for _, s in branches):
        return st.sampled_from([v for w, v in branches for _ in range(w)])  # one draw, not two
    strategies = [s if isinstance(s, st.SearchStrategy) else st.just(s) for _, s in branches]
    if len(strategies) == 1:
        return strategies[0]
    index = st.sampled_from([i for i, (w, _) in enumerate(branches) for _ in range(w)])
    return index.flatmap(lambda i: strategies[i])


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def message(mid: str, t: str = "context") -> dict[str, Any]:
    """A user message (section 3.7), as contexts and injections carry them."""
    return {"id": mid, "role": "user", "content": [text(t)], "source": {"kind": "plugin", "plugin": "gen"}}


def err(m: str, cls: str = "Error") -> dict[str, Any]:
    return {"$js": "error", "class": cls, "message": m}


UNDEF = {"$js": "undefined"}
