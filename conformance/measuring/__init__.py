"""Measuring the suite itself: mutants of the oracle and the mutation report, coverage of the oracle's branches by the generated half, the benchmark, and the agreement of the two kits."""
