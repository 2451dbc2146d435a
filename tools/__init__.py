"""Generators and checkers of dsh-conformance (catalogs, docs) and the Node adapter."""
