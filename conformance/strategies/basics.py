"""The smallest pieces the scenario strategies are built of: weighted choice, and the
content blocks, messages and errors they write (shared by every module of
``conformance.strategies``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, get_args

from hypothesis import strategies as st

from dsh_conformance.kit.scenario import Step



S = st.SearchStrategy
F = TypeVar("F", bound=Callable[..., Any])


def reused(fn: F) -> F:
    """``fn``, a function that builds a strategy, building it once per distinct arguments.
    Hypothesis works out the properties of each new strategy object (validation, emptiness,
    labels) the first time it is drawn from; strategies built afresh inside every draw
    cost more in that than in the draws themselves. Arguments are told apart by type as
    well as value (``True`` is not ``1``, ``-0.0`` not ``0.0``); a call with an argument
    that has no such key (a list, a dict) builds a fresh strategy, as before."""
    built: dict[Any, tuple[Any, Any]] = {}

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            key = (_key(args), _key(tuple(sorted(kwargs.items()))))
        except TypeError:
            return fn(*args, **kwargs)
        found = built.get(key)
        if found is None:
            if len(built) >= _MAX_BUILT:  # arguments that are fresh strategies each time: no unbounded growth
                built.clear()
            # The arguments are kept with the strategy: a key names a strategy argument by
            # its id, which must not be reused by another object while the entry lives.
            found = built[key] = ((args, kwargs), fn(*args, **kwargs))
        return found[1]
    return wrapper  # type: ignore[return-value]


_MAX_BUILT = 4096


def _key(x: Any) -> Any:
    kind = type(x)
    if kind in (str, int, bool, type(None)):
        return (kind, x)
    if kind is float:
        return (kind, repr(x))
    if kind is tuple:
        return (kind, tuple(_key(i) for i in x))
    if isinstance(x, st.SearchStrategy):
        return ("strategy", id(x))
    raise TypeError(f"no key for {kind.__name__}")


@reused
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


PARTICIPANTS = ("tools", "listeners", "guards", "approval")  # the keys of a document that hold scripts


def edit_steps(doc: dict[str, Any], edit: Callable[[Any], list[Any]],
               keys: tuple[str, ...] = PARTICIPANTS) -> None:
    """Every scripted step under ``keys`` of a scenario document replaced by ``edit(step)``
    (none, itself or others), at any depth (a step's own sub-scripts too)."""
    def walk(v: Any) -> Any:
        if isinstance(v, list):
            return [walk(y) for x in v for y in edit(x)]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v
    for key in keys:
        if key in doc:
            doc[key] = walk(doc[key])


def _step_defaults() -> dict[str, dict[str, Any]]:
    """For each step kind of the scenario language, its fields that have a default other
    than null, with that default (``kit.scenario``'s step models)."""

    out: dict[str, dict[str, Any]] = {}
    for model in get_args(get_args(Step)[0]):
        defaults = {name: f.default for name, f in model.model_fields.items()
                    if not f.is_required() and f.default_factory is None and f.default is not None}
        for kind in get_args(model.model_fields["do"].annotation):
            out[kind] = defaults
    return out


STEP_DEFAULTS = _step_defaults()


def _implicit(step: Any) -> list[Any]:
    if not isinstance(step, dict) or not isinstance(step.get("do"), str):
        return [step]
    defaults = STEP_DEFAULTS.get(step["do"], {})
    return [{k: v for k, v in step.items()
             if not (k in defaults and type(v) is type(defaults[k]) and v == defaults[k])}]


def leave_defaults_out(doc: dict[str, Any]) -> None:
    """Every scripted step of ``doc`` without the fields it sets to their default (a mutate
    step's ``catch: true``, a cancel's ``keepInbox: false``...), in place. The strategies
    write each field they mean; a document a user writes leaves the defaults out, and an
    implementation must read the absent field as the language says (the defaults of
    ``kit.scenario``'s step models, null ones aside)."""
    edit_steps(doc, _implicit)
