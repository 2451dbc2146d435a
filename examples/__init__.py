"""The starter ports (package data of the wheel: `dsh-conformance kit py` writes the Python one)."""
