"""``dsh-conformance badge``: valid SVG badges whose numbers are the report's scores."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from dsh_conformance.cli import main
from dsh_conformance.spec.corpus import CASES
from dsh_conformance.reporting.report import read_report
from dsh_conformance.spec.rules import rules

from .conftest import FAKE, corpus_subset

BYPASS = f"{sys.executable} {FAKE} guard-bypass"
PICK = ["guard-denies-with-number", "pre-deny-skips-body", "guard-falsy-returns-deny", "approval-shipped-allowed-once"]
SVG = "{http://www.w3.org/2000/svg}"


def _texts(path: Path) -> list[str]:
    root = ET.parse(path).getroot()  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg" and int(root.get("width")) > 0 and root.get("height") == "20"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    return list(dict.fromkeys(texts))  # shields draw each text twice (shadow, then text)


def _cited(profile: str) -> set[str]:
    """The rules of ``profile`` the picked cases cite, read from the case files."""
    out = set()
    for name in PICK:
        out |= {r for r in json.loads((CASES / f"{name}.json").read_text())["rules"] if rules()[r].profile == profile}
    return out


@pytest.mark.rules("P46")
def test_badges_per_profile_and_overall(tmp_path, capsys):
    cases = corpus_subset(tmp_path, PICK)
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    assert main(["run", "--cases", str(cases), "--examples", "0", "--report", str(good)]) == 0
    assert main(["run", "--impl", BYPASS, "--cases", str(cases), "--examples", "0", "--report", str(bad)]) == 1
    out = tmp_path / "badges"
    capsys.readouterr()
    assert main(["badge", str(good), str(bad), "-o", str(out)]) == 0
    written = capsys.readouterr().out
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{impl}{suffix}.svg" for impl in ("dsh-conformance-oracle-0.1.0", "fake-guard-bypass-0.1.0")
                           for suffix in ("", "-code-mode", "-core", "-loop", "-reference"))
    assert all(f"wrote {out / n}" in written for n in names)
    # The oracle passes every rule the cases cite.
    core, ref = _cited("core"), _cited("reference")
    assert _texts(out / "dsh-conformance-oracle-0.1.0-core.svg") == ["dsh core", f"{len(core)}/{len(core)}"]
    total = len(core) + len(ref) + len(_cited("loop"))
    assert _texts(out / "dsh-conformance-oracle-0.1.0.svg") == ["dsh conformance", f"{total}/{total}"]
    # The fake fails the rules its failures are put down to (the footer's verdicts).
    footer = read_report(bad).footer
    verdicts = {r: o for r, o in footer.rules.items() if rules()[r].profile == "core"}
    failing = {r for r, o in verdicts.items() if o == "fail"}
    passing = {r for r, o in verdicts.items() if o == "pass"}
    assert {"P46", "P48"} <= failing and passing <= core  # P48: a broken invariant, not cited
    assert set(verdicts) <= core | failing
    assert _texts(out / "fake-guard-bypass-0.1.0-core.svg") == ["dsh core", f"{len(passing)}/{len(passing | failing)}"]
    assert 'fill="#4c1"' in (out / "dsh-conformance-oracle-0.1.0-core.svg").read_text()
    assert 'fill="#4c1"' not in (out / "fake-guard-bypass-0.1.0-core.svg").read_text()


def test_badge_of_a_bad_report(tmp_path, capsys):
    bad = tmp_path / "r.jsonl"
    bad.write_text("not json\nnot json either\n")
    assert main(["badge", str(bad), "-o", str(tmp_path)]) == 2
    assert f"{bad}:1: not a report record" in capsys.readouterr().err


def test_a_long_implementation_name_gives_bounded_distinct_file_names(tmp_path, capsys):
    """The name is the implementation's (a report is anyone's file): 300 characters once
    crashed ``badge`` with ENAMETOOLONG (issue 40). File names are cut, keep a digest of the
    whole name (two long names differing at the end stay apart), and an output path too long
    for the file system is one line, exit 2."""
    from dsh_conformance.reporting.report import CaseRecord, Footer, Outcome, ReportWriter, new_header

    reports = []
    for end in ("a", "b"):
        path = tmp_path / f"{end}.jsonl"
        w = ReportWriter(path)
        w.write(new_header({"name": "x" * 300 + end, "version": "1", "language": "python"}, ["core"], 0, 0))
        w.write(CaseRecord(source="corpus", id="c", outcome=Outcome.PASS, rules=["P1"], trace_digest="sha256:aa"))
        w.write(Footer(counts={"pass": 1}, rules={"P1": "pass"}, exit=0, finished="now"))
        w.close()
        reports.append(str(path))
    out = tmp_path / "badges"
    assert main(["badge", *reports, "-o", str(out)]) == 0, capsys.readouterr().err
    names = [p.name for p in out.iterdir()]
    assert len(names) == len(set(names)) == 4 and all(len(n) <= 100 for n in names), names
    capsys.readouterr()
    too_long = tmp_path / ("y" * 300) / "badges"
    assert main(["badge", reports[0], "-o", str(too_long)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "File name too long" in err, err
    assert main(["diff", reports[0], reports[0], "-o", str(tmp_path / ("z" * 300 + ".md"))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "File name too long" in err, err
