"""Text and files written safely: files never torn (an atomic write, a lock, an output
refused before the run), text shown escaped on a terminal and in Markdown and XML, names
without the machine's paths. Every concern above writes through it."""
