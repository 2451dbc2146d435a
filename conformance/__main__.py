"""``dsh-conformance`` (and ``python -m dsh_conformance``): the signal handlers first, then
the command line read by its light grammar (``conformance.command_line``: ``--help``,
``--version`` and a usage error are answered there, importing nothing heavy), then the
command's module. Importing it takes seconds on a busy machine; a Ctrl-C or SIGTERM
meanwhile ends it with one line and exit 130 (143), as it does any later."""

from __future__ import annotations

import sys

from dsh_conformance.running.interrupts import Interrupted, check, deferred, install


def main() -> int:
    install()
    try:
        # lazy (start-up): imported once the signal handlers are in place, so that Ctrl-C
        # during the imports is handled; the grammar is light (--help within 0.3 s)
        from dsh_conformance.command_line import Command, parser
        from dsh_conformance.textio.terminal import readable_streams

        readable_streams()
        args = parser().parse_args()
        # Deferred: an exception raised inside a library's import (pydantic builds its
        # serializers in Rust and turns what it catches there into a SchemaError) would be a
        # traceback and exit 1; the signal is recorded and raised once the imports are done.
        with deferred():
            # lazy (start-up): the commands' module, heavy, only once a command is chosen
            from dsh_conformance.cli import run_command

            if isinstance(args.func, Command):  # a command whose module is heavy
                args.func.load()
        code = run_command(args)
        check()  # a signal on the way out
        return code
    except Interrupted as e:  # one that came before the command's own handling of it began
        print(f"dsh-conformance: {e.what}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
