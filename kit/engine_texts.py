"""Texts of the JavaScript engine and of the scenario language that the kit's interpreter
throws: a refused write's TypeError (V8's wording; the spec leaves it to the engine, section
1, and the comparison takes any of them for any other, ``oracle.texts.WRITE_REFUSALS``) and
the scenario language's own errors."""

from __future__ import annotations

NO_AGENT_SESSION = "append: the call has no agent, so no session to append to"  # the scenario language's own


# Failed writes to frozen or identity fields raise a TypeError whose wording belongs to the
# engine, not the spec (section 1). The oracle uses V8's wording so that traces read
# naturally next to the real package's.
def frozen_set(key: str) -> str:
    return f"Cannot assign to read only property '{key}' of object '#<Object>'"


def frozen_add(key: str) -> str:
    return f"Cannot add property {key}, object is not extensible"


def frozen_define_new(key: str) -> str:
    """Object.defineProperty of a key a non-extensible object lacks."""
    return f"Cannot define property {key}, object is not extensible"


def frozen_delete(key: str) -> str:
    return f"Cannot delete property '{key}' of #<Object>"


def frozen_define(key: str) -> str:
    return f"Cannot redefine property: {key}"


def nullish_read(what: str, key: str) -> str:
    """The TypeError of reading ``key`` off ``null`` or ``undefined`` (``what``)."""
    return f"Cannot read properties of {what} (reading '{key}')"


def getter_only(key: str) -> str:
    return f"Cannot set property {key} of #<Object> which has only a getter"


def nullish_set(what: str, key: str) -> str:
    """Assigning ``key`` of ``null`` or ``undefined`` (``what``), or of another non-object."""
    return f"Cannot set properties of {what} (setting '{key}')"


NULLISH_DELETE = "Cannot convert undefined or null to object"  # deleting a property of null or undefined
DEFINE_ON_NON_OBJECT = "Object.defineProperty called on non-object"  # defining one on a primitive or nullish


def primitive_create(key: str, kind: str, shown: str) -> str:
    """Assigning ``key`` of a primitive (``kind`` ``string``, ``symbol``, ...; ``shown`` its text)."""
    return f"Cannot create property '{key}' on {kind} '{shown}'"
