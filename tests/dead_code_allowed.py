"""Names vulture cannot see used, each group with who uses it (tests/test_dead_code.py reads
this file as vulture's whitelist; it is never imported). A name is added here only when
something outside Python's own references uses it; dead code is deleted instead."""
# ruff: noqa
# type: ignore
_ = None

# Commands, run by name: conformance/command_line.py's Command("module", "cmd_x") imports the
# module when the command is chosen.
cmd_run, cmd_replay, cmd_report, cmd_expectations, cmd_catalogs, cmd_bench, cmd_diff
cmd_generate, cmd_check, cmd_record

# pytest: hooks of the plugin (conformance/plugin.py, worker_exit.py, suite_tests.py) and
# the tests the plugin collects from conformance/suite_tests.py and fuzz_tests.py.
pytest_addoption, pytest_configure, pytest_collection_modifyitems, pytest_sessionstart, pytest_sessionfinish
pytest_generate_tests, test_case, test_generated_scenarios, test_property

# pydantic: a model's configuration, its validators (decorated, called by pydantic), and the
# fields of models that only validate or serialize (the protocol's, the catalogs' schemas).
_.model_config
_._divergence_shape, _._violations_shape, _._kept_is_named, _._from_list, _._references, _._consistent
toolName, additionalContexts, attachment, toolCallId, isError, plugin, concludesTurn, homepage, errored
point, dialect, handlerId, exitCode, stderrSummary, durationMs, parentCallId, subCallId, removedCount
silent  # tools/flow_model.py: a flow edge's field, read from the flow model's YAML and written to the Mermaid text

# Other frameworks' hooks: a module's lazy names (PEP 562), pickle's reducer, hypothesis'
# local constants (overridden while drawing), pygal's axis labels, MkDocs' page hook.
__getattr__
_.reducer_override
_._local_constants
_.x_labels
on_page_markdown

# Data that is filled in, not read by name: the adapter's timing line (bench's AdapterTimes,
# built from its JSON), and the environment variable a cached directory is keyed on
# (running/reference_cache.py: an lru_cache key).
mean_ms
xdg
