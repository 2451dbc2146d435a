"""What a profile set draws and how skips count: generated scenarios stay inside the
implementation's profiles and declared features (not drawn rather than skipped), the two
situations a core run must not draw (issue 24 rows 4 and 5), and --max-skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh_conformance.spec.rules import rules
from dsh_conformance.spec.situations import OPTIONAL_FEATURES, situations
from dsh_conformance.strategies.draws import draw_examples

from .conftest import run_fake_module
from .hang_guards import hang_guard



def _run(tmp_path: Path, variant: str, *args: str) -> tuple[int, Any, str]:
    return run_fake_module(tmp_path, "core_variant", {"CORE_VARIANT": variant}, *args)


@pytest.mark.rules("P29", "P45", "P60", "P67", "P70")
def test_a_core_run_draws_no_situation_of_another_profile_or_undeclared_feature():
    core = list(draw_examples(60, 3, frozenset({"core"}), frozenset()))
    assert len(core) == 60
    assert not [s.name for e in core for s in situations(e.doc)]
    assert all(rules()[r].profile == "core" for e in core for r in e.doc["rules"])
    # With reference but no declared feature: the optional ones are not drawn either.
    plain = list(draw_examples(60, 3, frozenset({"core", "reference"}), frozenset()))
    assert not {s.name for e in plain for s in situations(e.doc)} & set(OPTIONAL_FEATURES)
    declared = list(draw_examples(60, 3, frozenset({"core", "reference"}), frozenset(OPTIONAL_FEATURES.values())))
    assert any(e.doc.get("timeoutPolicy") for e in declared)


def test_every_profile_and_feature_draws_as_before():
    # The default run (the oracle declares every optional feature) is not confined at all.
    every = frozenset({"core", "reference", "loop", "code-mode"})
    a = [json.dumps(e.doc, sort_keys=True) for e in draw_examples(15, 0, every)]
    b = [json.dumps(e.doc, sort_keys=True) for e in draw_examples(15, 0, every, frozenset(OPTIONAL_FEATURES.values()))]
    assert a == b


@pytest.mark.rules("P45")
def test_guards_read_as_a_snapshot_pass_core_and_fail_reference_on_p45(tmp_path):
    # Row 5: a guard unregistering itself (or another) mid-pass. Only P45 (reference) reads
    # the tables live: a core run never draws it and passes; core,reference fails on P45.
    code, rep, out = _run(tmp_path, "guards-snapshot", "--profiles", "core")
    assert code == 0, out
    assert not [c.id for c in rep.cases if c.outcome.value in ("fail", "skip")]
    code, rep, out = _run(tmp_path, "guards-snapshot", "--profiles", "core,reference", "--examples", "0")
    assert code == 1
    failed = {c.id: c.failing_rules for c in rep.cases if c.outcome.value == "fail"}
    assert "P45" in failed["guard-table-changes-during-pass"]


@pytest.mark.rules("P56")
def test_re_registration_that_replaces_passes_every_profile(tmp_path):
    # Row 4: re-registering a tool does not throw the runtime's own "already registered"
    # error. Registration is out of scope (section 1.3, revision 3): no case and no draw
    # registers a name registered already, so no profile set tells such a port apart.
    for profiles in ("core", "core,reference,loop,code-mode"):
        code, rep, out = _run(tmp_path, "reregister", "--profiles", profiles, "--examples", "40")
        assert code == 0, out[-3000:]
        assert not [c.id for c in rep.cases if c.outcome.value in ("fail", "skip")]


def test_no_corpus_case_registers_a_name_registered_already():
    from dsh_conformance.spec.corpus import CASES

    for path in sorted(CASES.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert "tool-reregistration" not in {s.name for s in situations(doc)}, path.name


def test_a_core_port_without_features_is_sent_nothing_it_must_skip(tmp_path):
    code, rep, out = _run(tmp_path, "core-strict")
    assert code == 0, out
    assert not [c.id for c in rep.cases if c.outcome.value == "skip"]
    generated = next(c for c in rep.cases if c.id.startswith("generated-seed-"))
    assert generated.draws == 100 and generated.skipped_draws == {"all": 0}
    assert rep.footer.skipped == {"all": 0, "asked": 154}


def test_too_many_skips_fail_the_run_and_are_shown(tmp_path):
    code, rep, out = _run(tmp_path, "skip-most", "--examples", "30")
    assert code == 1
    assert "TOO MANY SKIPPED" in out and "more than --max-skipped 0.25" in out
    assert rep.footer.too_many_skipped and rep.footer.exit == 1
    skipped = rep.footer.skipped
    assert skipped["all"] > 0.5 * skipped["asked"] and skipped["core"] == skipped["all"] and skipped["reference"] > 0
    code, rep, out = _run(tmp_path, "skip-most", "--examples", "30", "--max-skipped", "1")
    assert code == 0 and rep.footer.too_many_skipped is None
    assert "skipped " in out  # still said, per profile


def test_reports_show_skips_per_profile(tmp_path):
    from dsh_conformance.cli import main

    _, rep, _ = _run(tmp_path, "skip-most", "--examples", "10")
    for fmt in ("md", "html", "json"):
        out = tmp_path / f"r.{fmt}"
        assert main(["report", rep.path, "--format", fmt, "-o", str(out)]) == 0
        text = out.read_text(encoding="utf-8")
        assert "skipped" in text and "reference" in text
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert data["implementations"][0]["skipped"]["all"] == rep.footer.skipped["all"]


@pytest.mark.parametrize("bad", ["2", "-0.1", "x", "nan"])
def test_max_skipped_takes_a_fraction(bad, capsys):
    from dsh_conformance.cli import main

    with pytest.raises(SystemExit) as e:
        main(["run", "--max-skipped", bad])
    assert e.value.code == 2
    assert "--max-skipped" in capsys.readouterr().err


@pytest.mark.rules("P70")
def test_a_corpus_case_needing_an_undeclared_feature_is_not_sent(tmp_path):
    # core-strict declares no feature; with reference declared too it would be sent the
    # timeout-policy cases: they are not-scored ("needs feature"), not skipped.
    from dsh_conformance.running.runner import Runner
    from dsh_conformance.iut.in_process import InProcessIUT
    from dsh_conformance.oracle import serve
    from dsh_conformance.spec.corpus import CASES

    def started():
        return {**serve.started(), "profiles": ["core", "reference"], "features": []}

    iut = InProcessIUT(started, serve.answer, timeout=hang_guard(10))
    iut.start()
    try:
        runner = Runner(iut, {"core", "reference"})
        path = next(p for p in sorted(CASES.glob("*.json")) if '"timeoutPolicy": true' in p.read_text(encoding="utf-8"))
        doc = json.loads(path.read_text(encoding="utf-8"))
        rec = runner.decide(doc["id"], doc, "corpus", path.name)
        assert rec.outcome.value == "not-scored" and rec.message == "needs feature timeout-policy"
    finally:
        iut.close(graceful=False)
