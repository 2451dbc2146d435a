"""The option types the command line and the pytest plugin share (one definition each):
argparse types that raise ``argparse.ArgumentTypeError`` with a one-line reason, the name
of an expectations file the suite ships, and ``UsageError``, an option value refused past
argparse (a bad ``--impl``, conflicting options)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable

from dsh_conformance.resources import EXPECTATIONS


class UsageError(Exception):
    """An option value the command refuses: its one-line reason, exit 2 (the plugin turns it
    into ``pytest.UsageError``)."""


def count(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value
    parse.__name__ = "count"
    return parse


def seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def fraction(text: str) -> float:
    """An argparse type: a share from 0 to 1 (``--max-skipped 0.25``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a fraction: {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a fraction from 0 to 1, not {text}")
    return value


def whole(text: str) -> int:
    """An argparse type: any whole number (a seed)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


whole.__name__ = "whole number"


def seed_range(text: str) -> list[int]:
    """An argparse type: ``A-B``, the seeds A to B (whole numbers, A <= B), or one seed."""
    first, _, last = text.partition("-")
    try:
        a, b = int(first), int(last or first)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a range of seeds A-B: {text!r}") from None
    if a > b:
        raise argparse.ArgumentTypeError(f"not a range of seeds A-B with A <= B: {text!r}")
    return list(range(a, b + 1))


seed_range.__name__ = "range of seeds"


def expectations_path(name: str) -> Path:
    """An expectations file, or the name of one the suite ships (``dsh-tools-0.1.0-rc.8``)."""
    shipped = EXPECTATIONS / f"{name}.yaml"
    if not Path(name).exists() and "/" not in name and shipped.is_file():
        return shipped
    return Path(name)
