"""`dsh-conformance docs check`: our docs and upstream's tree pass with explained warnings;
corrupted copies fail, each with a precise message at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_conformance.cli import main
from dsh_conformance.tools.catalogs import CATALOGS
from dsh_conformance.tools.docs_check import BadInput, check_tree
from dsh_conformance.tools.md_structure import parse
from dsh_conformance.tools.pairing import render_record
from dsh_conformance.tools.pipeline_page import PAGE, generate

from .upstream_findings import is_upstream_finding

ACKNOWLEDGED = [
    "node 'owned' calls `hook/invoked` tool-owned, but the catalogs say hook-bridge writes it",
    "node 'owned' calls `hook/result` tool-owned, but the catalogs say hook-bridge writes it",
    "node 'owned' groups `fs/observed` with session events, but it is a live event with mode emit",
]


def _errors(findings):
    return [str(f) for f in findings if f.severity == "error"]


KEPT_RENDERING = "the English (tool-execution-pipeline.md:60) says 'binding rejections', and this paragraph renders it"


def _assert_acknowledged_warnings_only(findings):
    assert _errors(findings) == []
    warnings = [f for f in findings if f.severity == "warning"]
    assert len(warnings) == len(ACKNOWLEDGED) + 1
    for w, expected in zip(warnings, ACKNOWLEDGED):
        assert w.message.startswith(expected) and "acknowledged in the flow model:" in w.message
        assert w.line == 20  # the `owned` node's line
    # Upstream's Chinese, which our page keeps word for word, mistranslates a spec term.
    assert warnings[-1].file.name == f"{PAGE}.zh.md" and KEPT_RENDERING in warnings[-1].message
    assert warnings[-1].message.endswith("kept: our page reproduces upstream's text")


@pytest.fixture
def tree(tmp_path) -> Path:
    """A copy of our generated docs in a fresh tree."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for path, text in generate(docs).items():
        path.write_bytes(text.encode("utf-8"))
    return tmp_path


def _edit(tree: Path, name: str, old: str, new: str, count: int = 1) -> None:
    path = tree / "docs" / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= count, old
    path.write_bytes(text.replace(old, new, count).encode("utf-8"))


def _rerecord(tree: Path) -> None:
    """Bring the record along, so that only the corruption under test is left."""
    docs = tree / "docs"
    en, zh = (docs / f"{PAGE}.md").read_bytes(), (docs / f"{PAGE}.zh.md").read_bytes()
    (docs / f"{PAGE}.i18n.yaml").write_text(render_record("# re-recorded", f"{PAGE}.md", en, f"{PAGE}.zh.md", zh),
                                            encoding="utf-8")


def test_our_docs_pass(capsys):
    _assert_acknowledged_warnings_only(check_tree(CATALOGS.parent, CATALOGS))
    assert main(["docs", "check"]) == 0
    assert capsys.readouterr().out.endswith("docs check: 0 error(s), 4 warning(s) in " + str(CATALOGS.parent / "docs") + "\n")


def test_upstreams_tree_gives_its_real_findings_as_errors(shared, capsys):
    # What our page keeps on purpose (a warning there) is a real error on upstream's own page.
    root = shared / "upstream/b150a551b8"
    findings = check_tree(root, CATALOGS)
    assert [f.severity for f in findings] == ["error"] * 4
    assert all(is_upstream_finding(f) for f in findings)
    assert sum("a known upstream error (flow model)" in f.message for f in findings) == 3
    assert main(["docs", "check", "--root", str(root)]) == 1
    assert "4 error(s), 0 warning(s)" in capsys.readouterr().out


def test_upstreams_catalogs_are_read(shared):
    # The tree's own catalogs are consulted: the names resolve there, with the same modes.
    from dsh_conformance.tools.tree_catalogs import read_tree_catalogs

    tree = read_tree_catalogs(shared / "upstream/b150a551b8/docs")
    assert tree.session_events["tool/result"][0] == "surface"
    assert tree.live_events["fs/observed"][0] == "emit"
    assert ("@deepseek-ai/dsh-tools", "run_code") in tree.tools
    assert "ctx.approval" in tree.services


def test_a_copy_of_our_docs_passes(tree):
    _assert_acknowledged_warnings_only(check_tree(tree, CATALOGS))


def test_changed_edge(tree):
    for name in (f"{PAGE}.md", f"{PAGE}.zh.md"):
        _edit(tree, name, "  pre -->|deny| denied\n", "  pre -->|deny| post\n")
    _rerecord(tree)
    errors = _errors(check_tree(tree, CATALOGS))
    en = tree / "docs" / f"{PAGE}.md"
    assert errors == [
        f"{en}:8: error: edge S31 `pre -->|deny| denied` of the flow model (tool-execution-pipeline.flow.yaml) "
        "is missing from the Mermaid block",
        f"{en}:37: error: edge `pre -->|deny| post` is not a drawn edge of the flow model (tool-execution-pipeline.flow.yaml)",
    ]


def test_changed_edge_style_names_the_models_edge(tree):
    for name in (f"{PAGE}.md", f"{PAGE}.zh.md"):
        _edit(tree, name, "  guards -.->|throw| normalized\n", "  guards -->|throw| normalized\n")
    _rerecord(tree)
    errors = _errors(check_tree(tree, CATALOGS))
    assert any(":35: error: edge `guards -->|throw| normalized` is not a drawn edge of the flow model "
               "(tool-execution-pipeline.flow.yaml) (the model draws S29 between these nodes as dotted with label "
               "'throw')" in e for e in errors), errors


def test_heading_depth_changed_on_one_side(tree):
    _edit(tree, f"{PAGE}.zh.md", "\n# 工具执行流水线\n", "\n## 工具执行流水线\n")
    _rerecord(tree)
    en = tree / "docs" / f"{PAGE}.md"
    assert _errors(check_tree(tree, CATALOGS)) == [
        f"{en}:4: error: tool-execution-pipeline.md ↔ tool-execution-pipeline.zh.md: heading (depth) #1 diverges "
        "between the pair: 1 (tool-execution-pipeline.md:4) vs 2 (tool-execution-pipeline.zh.md:4)"]


def test_stale_hash(tree):
    _edit(tree, f"{PAGE}.zh.md", "这样一来", "因此")
    errors = _errors(check_tree(tree, CATALOGS))
    record = tree / "docs" / f"{PAGE}.i18n.yaml"
    assert len(errors) == 1
    assert errors[0].startswith(f"{record}:6: error: tool-execution-pipeline.zh.md is out of sync — its git blob "
                                "hash is ")
    assert "the content no longer matches the pair's last confirmed-consistent state" in errors[0]


def test_event_renamed_to_an_unknown_one(tree):
    for name in (f"{PAGE}.md", f"{PAGE}.zh.md"):
        _edit(tree, name, "<code>tools/post-execute</code>", "<code>tools/after-execute</code>")
    _rerecord(tree)
    errors = _errors(check_tree(tree, CATALOGS))
    en = tree / "docs" / f"{PAGE}.md"
    assert f"{en}:21: error: unknown name `tools/after-execute`: not in the name table (generated from " \
           "pipeline.catalog.json, rc.8's public surface as the catalogs hold it)" in errors
    assert any(e.startswith(f"{en}:21: error: node 'post': label '<code>tools/after-execute</code> waterfall") for e in errors)


def test_renamed_prose_name(tree):
    _edit(tree, f"{PAGE}.md", "log `tool/code-dispatch`", "log `tool/code-dispatched`")
    _rerecord(tree)
    errors = _errors(check_tree(tree, CATALOGS))
    en = tree / "docs" / f"{PAGE}.md"
    assert f"{en}:60: error: unknown name `tool/code-dispatched`: not in the name table (generated from " \
           "pipeline.catalog.json, rc.8's public surface as the catalogs hold it)" in errors


def test_mermaid_block_differs_between_the_languages(tree):
    _edit(tree, f"{PAGE}.zh.md", "  toolBody --> around\n", "  toolBody -.-> around\n")
    _rerecord(tree)
    errors = _errors(check_tree(tree, CATALOGS))
    en, zh = tree / "docs" / f"{PAGE}.md", tree / "docs" / f"{PAGE}.zh.md"
    assert f"{en}:47: error: the Mermaid block differs between the languages: first difference at " \
           f"tool-execution-pipeline.md:47 / tool-execution-pipeline.zh.md:49: 'toolBody --> around' vs " \
           "'toolBody -.-> around'" in errors
    assert f"{zh}:49: error: edge `toolBody -.-> around` is not a drawn edge of the flow model " \
           "(tool-execution-pipeline.flow.yaml) (the model draws S41 between these nodes as solid)" in errors


def test_label_wording_must_agree_with_modes(tree):
    for name in (f"{PAGE}.md", f"{PAGE}.zh.md"):
        _edit(tree, name, "<code>tools/result</code> synchronous notification",
              "<code>tools/result</code> waterfall")
        _edit(tree, name, "Session event: <code>tool/result</code>", "Session event: <code>tools/execute</code>")
    _rerecord(tree)
    errors = _errors(check_tree(tree, CATALOGS))
    en = tree / "docs" / f"{PAGE}.md"
    assert f"{en}:24: error: node 'final' says `waterfall`, but `tools/result` is a live event with mode emit" in errors
    assert f"{en}:26: error: node 'toolResult' says `Session event:`, but `tools/execute` is a live event with " \
           "mode waterfall" in errors


def test_missing_switcher_and_malformed_record(tree):
    _edit(tree, f"{PAGE}.zh.md", "[English](tool-execution-pipeline.md) | 中文\n\n", "")
    record = tree / "docs" / f"{PAGE}.i18n.yaml"
    record.write_text(record.read_text(encoding="utf-8").replace(f"{PAGE}.md: ", f"{PAGE}.md:"), encoding="utf-8")
    errors = _errors(check_tree(tree, CATALOGS))
    zh = tree / "docs" / f"{PAGE}.zh.md"
    assert f"{zh}:4: error: missing language switcher — no link to tool-execution-pipeline.md: the first paragraph " \
           "after the title must be `[English](tool-execution-pipeline.md) | 中文`" in errors
    assert any(e.startswith(f"{record}:5: error: malformed consistency record line") for e in errors), errors


def test_line_endings_and_unparseable_mermaid(tree):
    for name in (f"{PAGE}.md", f"{PAGE}.zh.md"):
        _edit(tree, name, "  toolBody --> around\n", "  toolBody ==> around\n")
    _edit(tree, f"{PAGE}.md", "# Tool Execution Pipeline\n", "# Tool Execution Pipeline\r\n")
    _rerecord(tree)
    errors = _errors(check_tree(tree, CATALOGS))
    en = tree / "docs" / f"{PAGE}.md"
    assert f"{en}:4: error: CR line ending; pages use LF only" in errors
    assert f"{en}:47: error: not a node or edge line of the flowchart subset: 'toolBody ==> around'" in errors


def test_tree_catalogs_are_checked(tree):
    docs = tree / "docs"
    # Our own small fixtures in the shape of upstream's catalogs.
    (docs / "persistence-catalog.md").write_text(
        "# Catalog\n\n#### `tool/call` — log-only\n\n#### `tool/result` — log-only\n\n#### `user/message` — surface\n",
        encoding="utf-8")
    (docs / "event-producer-consumer.md").write_text(
        "# Matrix\n\n| Event | Mode |\n| --- | --- |\n| `tools/result` | `waterfall` |\n| `tools/execute` | `waterfall` |\n",
        encoding="utf-8")
    findings = check_tree(tree, CATALOGS)
    errors = _errors(findings)
    en = docs / f"{PAGE}.md"
    assert f"{en}:26: error: `tool/result`: persistence-catalog.md:5 marks it log-only, pipeline.catalog.json surface" in errors
    assert f"{en}:20: error: `todo/write` (session-log event) is not in the tree's persistence-catalog.md" in errors
    assert f"{en}:24: error: `tools/result`: event-producer-consumer.md:5 gives mode waterfall, pipeline.catalog.json emit" in errors
    assert f"{en}:13: error: `tools/pre-execute` (live event) is not in the tree's event catalogs " \
           "(event-producer-consumer.md, subsystems/)" in errors


def test_other_pairs_of_the_tree(tree):
    docs = tree / "docs"
    (docs / "guide").mkdir()

    def pair(stem, en, zh):
        (docs / "guide" / f"{stem}.md").write_text(en, encoding="utf-8")
        (docs / "guide" / f"{stem}.zh.md").write_text(zh, encoding="utf-8")
        (docs / "guide" / f"{stem}.i18n.yaml").write_text(
            render_record("", f"{stem}.md", en.encode(), f"{stem}.zh.md", zh.encode()), encoding="utf-8")

    pair("b", "# B\n\nEnglish | [中文](b.zh.md)\n\nText.\n", "# 乙\n\n[English](b.md) | 中文\n\n文字。\n")
    pair("a", "# A\n\nEnglish | [中文](a.zh.md)\n\nSee [b](b.md).\n\n- one\n- two\n",
         "# 甲\n\n[English](a.md) | 中文\n\n见 [b](b.md)。\n\n- 一\n")
    (docs / "guide" / "c.zh.md").write_text("# 丙\n", encoding="utf-8")
    errors = _errors(check_tree(tree, CATALOGS))
    a, a_zh, c_zh = docs / "guide/a.md", docs / "guide/a.zh.md", docs / "guide/c.zh.md"
    assert f'{a_zh}:5: error: link target "b.md" uses the wrong locale; expected "b.zh.md"' in errors
    assert f"{a}:7: error: a.md ↔ a.zh.md: list (kind, start, item count) #1 diverges between the pair: " \
           "bullet:items=2 (a.md:7) vs bullet:items=1 (a.zh.md:7)" in errors
    assert f"{c_zh}:1: error: incomplete pair — missing c.md, c.i18n.yaml" in errors
    assert not any("/b." in e for e in errors), errors


def test_bad_input(tmp_path, capsys):
    assert main(["docs", "check", "--root", str(tmp_path / "nowhere")]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert main(["docs", "check", "--root", str(tmp_path)]) == 2  # nothing to check
    assert "no bilingual pair" in capsys.readouterr().err
    assert main(["docs", "check", "--catalogs", str(tmp_path)]) == 2  # no flow model there
    with pytest.raises(BadInput, match="cannot read"):
        check_tree(CATALOGS.parent, tmp_path)


def test_errors_exit_1_and_drift_is_reported(tree, capsys):
    _edit(tree, f"{PAGE}.md", "This graph shows", "This graph displays")
    assert main(["docs", "check", "--root", str(tree)]) == 1
    out = capsys.readouterr().out
    # One edit, one error: the record's "out of sync"; the page's staleness is its consequence.
    assert f"{tree / 'docs' / PAGE}.md:1: warning: stale; it differs from what `dsh-conformance docs generate` writes now" in out
    assert "out of sync" in out and "docs check: 1 error(s)" in out


def test_a_stale_page_alone_is_an_error(tree, capsys):
    # An edit no other check sees (a word of the footer) and a re-recorded pair: staleness
    # is the only error.
    _edit(tree, f"{PAGE}.md", "Maintenance mode: curated", "Maintenance mode: hand-curated")
    _rerecord(tree)
    assert main(["docs", "check", "--root", str(tree)]) == 1
    out = capsys.readouterr().out
    assert f"{tree / 'docs' / PAGE}.md:1: error: stale; it differs from what `dsh-conformance docs generate` writes now" in out


def test_structure_of_a_small_page():
    s = parse("<!-- c -->\n\n# T\n\n[English](a.md) | 中文\n\nSee `x/y` and [l](b.zh.md#z).\n\n"
              "1. a\n2. b\n   - c\n\n| h | i |\n| --- | --- |\n| 1 | 2 |\n| 3 | 4 |\n\n```mermaid x\nflow\n```\n")
    assert [h.text for h in s.headings] == ["1"]
    assert [(l.line, l.text) for l in s.lists] == [(9, "ordered:start=1:items=2"), (11, "bullet:items=1")]
    assert [t.text for t in s.tables] == ["3x2"]
    assert [(f.info, f.body, f.line) for f in s.fences] == [("mermaid x", "flow", 18)]
    assert [l.text for l in s.links] == ["a.md", "b.zh.md#z"]
    assert s.first_paragraph_after_h1().source == "[English](a.md) | 中文"
    assert s.paragraphs[1].code == ("x/y",)
