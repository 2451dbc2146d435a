"""Whether two equal JSON values are the same value, type for type (the comparison's fast path)."""

from __future__ import annotations

import marshal
from typing import Any


def same_json(e: Any, a: Any) -> bool:
    """Whether two equal (``==``) values have the same ``repr``: the same types, in the same
    order (``==`` takes ``True`` for ``1``, ``1.0`` for ``1``, ``-0.0`` for ``0.0``). Equal
    marshal bytes say so in less than half of ``repr``'s time (issue 25): format 2 writes no
    references, so only the values and their exact types count, a float by its bits. Where
    the bytes differ, or marshal takes no such value (a subclass of dict), ``repr`` says."""
    try:
        if marshal.dumps(e, 2) == marshal.dumps(a, 2):
            return True
    except ValueError:
        pass
    return repr(e) == repr(a)


__all__ = ["same_json"]
