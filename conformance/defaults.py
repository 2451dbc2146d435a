"""The defaults a command applies and its ``--help`` states, in one place that imports
nothing: ``dsh-conformance --help`` reads them without importing the modules that apply them
(``conformance.command_line``), and those modules take them from here."""

from __future__ import annotations

# run, replay, bench: the implementation under test (conformance.iut, conformance.runner)
DEFAULT_TIMEOUT = 30.0  # seconds per scenario
DEFAULT_START_TIMEOUT = 60.0  # seconds for the handshake: a cold Node start on a loaded machine takes a while
DEFAULT_GIVE_UP_AFTER = 5  # consecutive timeouts or crashes that declare an IUT broken
DEFAULT_EXAMPLES = 100  # generated scenarios of a run that chooses no cases
# --max-skipped (conformance.skips): the real package's run skips none of the corpus and few
# generated draws; a port skipping a quarter of what it was sent checked too little to pass.
DEFAULT_MAX_SKIPPED = 0.25

# mutate (conformance.mutate)
DEFAULT_BUDGET = 20  # operator mutants drawn
DEFAULT_JOBS = 2  # mutants run at once
DEFAULT_SCENARIO_TIMEOUT = 10.0  # seconds per scenario inside a mutant
DEFAULT_MUTANT_TIMEOUT = 180.0  # seconds for a mutant's whole run

# docs check (tools/docs_cli.py)
DOCS_MAX_PER_FILE = 50  # findings shown per file
