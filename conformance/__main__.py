"""``dsh-conformance`` (and ``python -m dsh_conformance``): the signal handlers first, then
the command. Importing the command takes seconds on a busy machine; a Ctrl-C or SIGTERM
meanwhile ends it with one line and exit 130 (143), as it does any later."""

from __future__ import annotations

import sys

from .interrupts import Interrupted, check, deferred, install


def main() -> int:
    install()
    try:
        # Deferred: an exception raised inside a library's import (pydantic builds its
        # serializers in Rust and turns what it catches there into a SchemaError) would be a
        # traceback and exit 1; the signal is recorded and raised once the imports are done.
        with deferred():
            from .cli import main as command

        code = command()
        check()  # a signal on the way out
        return code
    except Interrupted as e:  # one that came before the command's own handling of it began
        print(f"dsh-conformance: {e.what}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
