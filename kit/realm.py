"""What the JS values of one run refer to beyond themselves (spec section 3.11 tokens).

Two tokens name something outside the value they sit in:

- ``{"$js":"getter","id":g}``: an own enumerable accessor property whose every read runs
  the scenario's getter ``g`` (a synchronous participant: it can count its reads, return
  another value each time, return a hostile value, or change the registry; P13, P23, P26);
- ``{"$js":"shared","id":s}``: the object defined under ``s`` by
  ``{"$js":"shared","id":s,"value":...}`` earlier in the same value, reached once more (a
  shared reference, P13).

``jsvalue`` reads such tokens through the realm installed for the run in progress
(``installed``), so that the value helpers stay plain functions of wire values. A run
installs its world's realm around the whole run; no realm is installed otherwise, and a
token then fails loudly.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol


class Realm(Protocol):
    def read_getter(self, getter_id: str) -> Any:
        """Run getter ``getter_id`` once and return what it returns (or raise Thrown)."""

    def shared(self, shared_id: str) -> Any:
        """The value defined for shared object ``shared_id``."""


class NoRealm(LookupError):
    """A getter or shared token was read outside a run."""


class ValueRealm:
    """The realm of one value on its own: its shared objects resolve, a getter read fails
    (what a getter gives is only known while its scenario runs)."""

    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions

    def read_getter(self, getter_id: str) -> Any:
        raise NoRealm(f"getter {getter_id!r} is read outside its scenario's run")

    def shared(self, shared_id: str) -> Any:
        return self.definitions[shared_id]


_CURRENT: ContextVar[Realm | None] = ContextVar("dsh_realm", default=None)


def current() -> Realm:
    realm = _CURRENT.get()
    if realm is None:
        raise NoRealm("a getter or shared token is read outside a scenario run")
    return realm


@contextmanager
def installed(realm: Realm) -> Iterator[None]:
    reset = _CURRENT.set(realm)
    try:
        yield
    finally:
        _CURRENT.reset(reset)


# The rules of the reading in progress whose accessors a getter's reads belong to: message(x)
# reads a thrown Error's ``message`` (P9). A getter's reads are put down to them beside the
# snapshot's and entry's (P13, P23), so a message read twice is blamed where it was read.
_READING: ContextVar[tuple[str, ...]] = ContextVar("dsh_reading", default=())


def reading_rules() -> tuple[str, ...]:
    """The rules of the reading in progress (``reading``); none outside one."""
    return _READING.get()


@contextmanager
def reading(rules: tuple[str, ...]) -> Iterator[None]:
    """Getters read inside this block read for ``rules`` (a synchronous reading only)."""
    reset = _READING.set(rules)
    try:
        yield
    finally:
        _READING.reset(reset)
