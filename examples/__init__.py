"""The starter examples, package data of the suite: one pipeline written on each kit
(``core_pipeline.py`` on the Python kit, ``core_pipeline.mjs`` on the JS kit); ``dsh-conformance
kit agree`` runs both and compares their answers."""
