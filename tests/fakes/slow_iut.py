"""The oracle served over the IUT protocol, taking ``DELAY`` seconds over each scenario:
a run long enough to show its progress line (``python tests/fakes/slow_iut.py 0.4``)."""

from __future__ import annotations

import sys

from serve_loop import serve_as  # the script's own directory is on sys.path

DELAY = float(sys.argv[1]) if len(sys.argv) > 1 else 0.4

if __name__ == "__main__":
    sys.exit(serve_as("fake-slow", DELAY))
