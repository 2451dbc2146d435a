"""``dsh-conformance docs ...``: the docs generator and checker (see tools/ docs modules)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``docs`` command to the CLI's subcommands."""
    docs = sub.add_parser("docs", help="generate or check the pipeline doc page (not yet available)")
    docs.set_defaults(func=lambda args: (print("docs: not implemented yet") or 2))
