"""Building and driving the real DSH package: the Node adapter installed per version or tree, which packages go together, a DSH checkout built for the adapter."""
