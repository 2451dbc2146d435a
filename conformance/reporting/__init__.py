"""Reporting a run: the report file, scores and badges, the matrix in Markdown, JSON, JUnit and HTML, the results site, diffs between runs, and text made safe for terminals and files."""
