"""Implementations under test: what ``--impl`` means, the line protocol, the connections to process and in-process implementations, the host of a ``py:`` one, the keeper of a process."""
