"""What ``--impl`` means (``conformance.connect``): every kind ``make_iut`` starts is an
``IUT`` as the protocol class declares it, and the runner drives each the same way,
sending runs ahead only to one whose ``pipeline`` takes them."""

from __future__ import annotations

import ast
import inspect

import pytest

from dsh_conformance.argtypes import UsageError
from dsh_conformance.iut.connect import IUT, Pipeline, make_iut
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.iut.in_process import InProcessIUT
from dsh_conformance.iut.process import ProcessIUT, PythonIUT
from dsh_conformance.reporting.report import Outcome
from dsh_conformance.resources import SUITE
from dsh_conformance.spec.rules import ORACLE_PROFILES
from dsh_conformance.running.runner import Runner
from dsh_conformance.running.references import corpus_items

pytestmark = pytest.mark.rules("P1")

KINDS = [("oracle", ProcessIUT, True), ("oracle-inprocess", InProcessIUT, False),
         ("py:dsh_conformance.oracle.serve", PythonIUT, True)]


def _members(protocol: type) -> set[str]:
    """The names a Protocol class declares: its annotated attributes, methods and properties."""
    own = {n for n in vars(protocol) if not n.startswith("_")}
    return own | set(inspect.get_annotations(protocol))


@pytest.mark.parametrize("spec,kind,pipelined", KINDS)
def test_every_kind_is_an_iut_and_says_whether_it_takes_runs_ahead(spec, kind, pipelined):
    iut = make_iut(spec, 30, False)
    assert type(iut) is kind
    assert _members(IUT) <= set(dir(iut)), sorted(_members(IUT) - set(dir(iut)))
    if pipelined:
        assert iut.pipeline is iut
        assert _members(Pipeline) <= set(dir(iut))
    else:
        assert iut.pipeline is None
    assert iut.started is None and iut.restarts == 0  # nothing started yet


@pytest.mark.parametrize("spec,kind,pipelined", KINDS)
def test_the_runner_drives_every_kind_alike(spec, kind, pipelined):
    """Real starts, a real process where the kind has one: the corpus cases pass, and a
    pipelined IUT had its runs sent ahead (its generation counts the process started)."""
    items = corpus_items(CASES)[:4]
    iut = make_iut(spec, 30, False)
    iut.start()
    try:
        runner = Runner(iut, set(ORACLE_PROFILES))
        runner.run_cases(items)
    finally:
        iut.close()
    assert [r.outcome for r in runner.records] == [Outcome.PASS] * len(items)
    assert (iut.pid is not None) == (kind is not InProcessIUT)
    if pipelined:
        assert iut.pipeline.generation == 1 and not iut.pipeline.pending


@pytest.mark.parametrize("spec,message", [
    ("", "--impl '': an empty command line"),
    ("py:", "--impl py:: name a module"),
    ("py:no_such_package_here.iut", "no module named 'no_such_package_here'"),
    ("dsh@", "--impl dsh@: name a version"),
    ("dsh:", "--impl dsh:: name a directory"),
    ("'unclosed", "not a command line"),
])
def test_a_spec_naming_no_implementation_is_a_usage_error(spec, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_iut(spec, 30, False)


def test_build_goes_only_with_a_tree():
    with pytest.raises(UsageError, match="--build builds a DSH working tree"):
        make_iut("dsh", 30, False, build=True)


def test_the_plugin_and_the_runner_do_not_import_the_cli():
    """What --impl means is connect's: the plugin takes it from there, and the runner asks
    an IUT's pipeline, not its class."""
    for name in ("plugin.py", "running/runner.py", "measuring/bench.py"):
        tree = ast.parse((SUITE / name).read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not imported & {"cli", "dsh_conformance.cli"}, name
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "isinstance"]
        assert not [ast.unparse(c) for c in calls if "IUT" in ast.unparse(c.args[1])], name


@pytest.mark.parametrize("extra", [None, {"s": "\ud800 lone, é, \u2028, \"quoted\"\n", "n": [-0.0, 1e300, 2**70, None]}])
def test_a_run_message_spliced_from_the_case_text_is_the_encoded_message(extra):
    """The runner sends the document's text as it encoded it once for the case (its key,
    its size): spliced into the run line, it must be the bytes protocol.dumps writes."""
    from dsh_conformance.iut.process import run_message
    from dsh_conformance.iut.protocol import dumps
    from dsh_conformance.running.references import corpus_items, document_text as _document_text

    for seq, (_, doc, _) in enumerate(corpus_items(CASES), start=1):
        doc = doc if extra is None else {**doc, "extra": extra}
        whole = dumps({"cmd": "run", "seq": seq, "scenario": doc})
        assert run_message(seq, doc, _document_text(doc)) == whole == run_message(seq, doc)
