"""`docs check` reads order claims in prose: a sentence that orders two stages against the
flow model is an error, and the two languages of a pair must claim the same order, even once
the pair's record has been re-recorded (by hand, by `docs record`, or by `docs generate` from
an edited prose source). One edit gives one error, against the file that changed, saying how
to fix it. The real pages (ours and upstream's) pass."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from dsh_conformance.cli import main
from dsh_conformance.tools.catalogs import CATALOGS
from dsh_conformance.tools.docs_check import check_tree
from dsh_conformance.tools.flow_model import load_flow_model
from .upstream_findings import is_upstream_finding
from dsh_conformance.tools.md_structure import parse
from dsh_conformance.tools.pairing import blob_hash, render_record
from dsh_conformance.tools.pipeline_page import PAGE, PROSE_FILE, generate
from dsh_conformance.tools.prose_claims import Claim, LexiconError, OrderGraph, closure, load_lexicon, sentence_claims

MODEL = load_flow_model()
LEXICON = load_lexicon(MODEL)
FLOW_HINT = ('or, if the pipeline changed, the flow model catalogs/tool-execution-pipeline.flow.yaml (installed: '
             'importlib.resources.files("dsh_conformance.catalogs"))')
GENERATE_HINT = "edit both languages in tools/data/tool-execution-pipeline.prose.yaml and run `dsh-conformance docs generate`"


def _errors(root: Path) -> list[str]:
    """The errors, without upstream's real findings (the README's list, tests/test_docs_claims.py)."""
    return [str(f).replace(str(root), "ROOT") for f in check_tree(root, CATALOGS) if f.severity == "error"
            and not is_upstream_finding(f)]


def _claims(text: str, lang: str = "en") -> set[tuple[str, str]]:
    return {(c.before, c.after) for s in sentence_claims(text, LEXICON, lang) for c in s.claims}  # type: ignore[arg-type]


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    """A copy of our generated docs in a fresh tree (the working directory, so that paths in
    the fix hints read as a user types them)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for path, text in generate(docs).items():
        path.write_bytes(text.encode("utf-8"))
    monkeypatch.chdir(CATALOGS.parent)
    return tmp_path


def _edit(tree: Path, name: str, old: str, new: str) -> None:
    path = tree / "docs" / name
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_bytes(text.replace(old, new, 1).encode("utf-8"))


def _rerecord(docs: Path, page: str = PAGE) -> None:
    en, zh = (docs / f"{page}.md").read_bytes(), (docs / f"{page}.zh.md").read_bytes()
    (docs / f"{page}.i18n.yaml").write_text(render_record("# re-recorded", f"{page}.md", en, f"{page}.zh.md", zh),
                                            encoding="utf-8")


EN, ZH = f"ROOT/docs/{PAGE}.md", f"ROOT/docs/{PAGE}.zh.md"


# ================================================================== the two missed edits

def test_a_changed_meaning_is_caught_after_re_recording(tree):
    _edit(tree, f"{PAGE}.md", "resolves asks before monotonic guards", "resolves asks after monotonic guards")
    _rerecord(tree / "docs")
    assert _errors(tree) == [
        f"{EN}:60: error: “`ctx.approval` resolves asks after monotonic guards, and owner policy that must not be "
        "reordered remains a registered g…” says monotonic guards (guards) before `ctx.approval` (approval) (the flow "
        "model runs them the other way: S33 `approval -->|allowed-once| guards`): fix the sentence (suggested "
        "wording: “`ctx.approval` before monotonic guards”, the order of P2, P40, P44), "
        f"{FLOW_HINT}; only its pair {PAGE}.zh.md:62 says approval before guards "
        f"({GENERATE_HINT} once the sentence is fixed)"]


def test_an_english_reordering_of_the_stages_is_caught(tree):
    _edit(tree, f"{PAGE}.md", "The `tools/pre-execute` waterfall runs first, monotonic guards run next, and the "
          "`tools/execute` and", "The `tools/execute` waterfall runs first, monotonic guards run next, and the "
          "`tools/pre-execute` and")
    _rerecord(tree / "docs")
    errors = _errors(tree)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{EN}:6: error: “The `tools/execute` waterfall runs first, monotonic guards run next")
    assert "`tools/execute` (around) before monotonic guards (guards) (the flow model runs them the other way: " \
           "S27 `guards -->|allow| around`)" in errors[0]
    assert "`tools/execute` (around) before `tools/pre-execute` (pre) (the flow model runs them the other way: " \
           "S26 `pre -->|allow| guards`, S27 `guards -->|allow| around`)" in errors[0]
    assert f"its pair {PAGE}.zh.md:8 says" in errors[0] and FLOW_HINT in errors[0]


def test_the_edits_exit_1_from_the_command(tree, capsys):
    _edit(tree, f"{PAGE}.md", "resolves asks before monotonic guards", "resolves asks after monotonic guards")
    _rerecord(tree / "docs")
    assert main(["docs", "check", "--root", str(tree)]) == 1
    out = capsys.readouterr().out
    # One edit, one error: the hand-edited generated files' staleness is shown as its consequence.
    assert out.count(": error: ") == 1 and "docs check: 1 error(s), 6 warning(s)" in out, out
    assert f"{tree / 'docs' / PAGE}.md:1: warning: stale;" in out


def test_an_edited_prose_source_regenerated_is_caught(tmp_path, monkeypatch):
    # The path that hid the drift: edit the English of the bilingual source, run `docs
    # generate` (which re-records the pair), and the Chinese is left saying the old order.
    monkeypatch.chdir(CATALOGS.parent)
    prose = yaml.safe_load(PROSE_FILE.read_text(encoding="utf-8"))
    prose["en"]["closing"] = prose["en"]["closing"].replace("resolves asks before monotonic guards",
                                                            "resolves asks after monotonic guards")
    source = tmp_path / "prose.yaml"
    source.write_text(yaml.safe_dump(prose, allow_unicode=True), encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    for path, text in generate(docs, prose=source).items():
        path.write_bytes(text.encode("utf-8"))
    errors = _errors(tmp_path)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{EN}:60: error: “`ctx.approval` resolves asks after monotonic guards")


# ================================================================== more edits of our own making

def test_a_chinese_only_reordering(tree):
    _edit(tree, f"{PAGE}.zh.md", "`tools/pre-execute` waterfall（瀑布式事件）首先运行，随后是单调守卫，然后运行 `tools/execute` 和 "
          "`tools/post-execute` waterfall", "`tools/post-execute` waterfall（瀑布式事件）首先运行，随后是单调守卫，然后运行 "
          "`tools/execute` 和 `tools/pre-execute` waterfall")
    _rerecord(tree / "docs")
    errors = _errors(tree)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{ZH}:8: error: “`tools/post-execute` waterfall（瀑布式事件）首先运行")
    assert "” says 单调守卫 (guards) before `tools/pre-execute` (pre) (the flow model runs them the other way: " \
           "S26 `pre -->|allow| guards`); `tools/post-execute` (post) before `tools/execute` (around) (the flow model " \
           "runs them the other way: S42 `around --> post`); " in errors[0]
    assert f"its pair {PAGE}.md:6 says" in errors[0]


def test_a_chinese_only_inversion_of_before(tree):
    _edit(tree, f"{PAGE}.zh.md", "`ctx.approval` 在单调守卫之前处理询问", "`ctx.approval` 在单调守卫之后处理询问")
    _rerecord(tree / "docs")
    errors = _errors(tree)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{ZH}:62: error: “`ctx.approval` 在单调守卫之后处理询问，")
    assert "单调守卫 (guards) before `ctx.approval` (approval) (the flow model runs them the other way: S33 " in errors[0]


@pytest.mark.parametrize("new, said", [
    ("monotonic guards run before the approval prompt resolves asks", "monotonic guards (guards) before approval "
     "prompt (approval)"),
    ("guards run before approval resolves asks", "guards (guards) before approval (approval)"),
])
def test_guards_run_before_approval(tree, new, said):
    _edit(tree, f"{PAGE}.md", "`ctx.approval` resolves asks before monotonic guards", new)
    _rerecord(tree / "docs")
    errors = _errors(tree)
    assert len(errors) == 1, errors
    assert f"says {said} (the flow model runs them the other way: S33 `approval -->|allowed-once| guards`)" in errors[0]


def test_post_execute_after_tools_result(tree):
    _edit(tree, f"{PAGE}.md", "`tools/result` then observes", "`tools/post-execute` runs after `tools/result`, which "
          "then observes")
    _rerecord(tree / "docs")
    errors = _errors(tree)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{EN}:60: error: “`tools/post-execute` runs after `tools/result`, which then")
    assert "`tools/result` (final) before `tools/post-execute` (post) (the flow model runs them the other way: " \
           "S45 `post --> finalize`, S47 `finalize --> final`)" in errors[0]


def test_swapped_items_of_the_stage_list(tree):
    _edit(tree, f"{PAGE}.md", "the `tools/execute` and `tools/post-execute` waterfalls follow",
          "the `tools/post-execute` and `tools/execute` waterfalls follow")
    _rerecord(tree / "docs")
    errors = _errors(tree)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{EN}:6: error: “The `tools/pre-execute` waterfall runs first, monotonic guards run "
                                "next, and the `tools/post-execute` and `tools/execut…” says `tools/post-execute` (post) "
                                "before `tools/execute` (around) (the flow model runs them the other way: S42 "
                                "`around --> post`)"), errors


def test_a_side_branch_is_not_before_the_pipeline(tree):
    _edit(tree, f"{PAGE}.md", "Definition-owned `finalizeContent` and `tools/result` run afterward.",
          "Definition-owned `finalizeContent` and `tools/result` run afterward. `presentCall` runs after "
          "`tools/pre-execute`.")
    _rerecord(tree / "docs")
    errors = _errors(tree)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{EN}:6: error: “`presentCall` runs after `tools/pre-execute`.” says "
                                "`tools/pre-execute` (pre) before `presentCall` (presentCall) (the flow model has no "
                                "path between pre and presentCall: they are on separate branches)")


def test_an_order_the_model_allows_must_still_be_said_in_both_languages(tree):
    # Consistent with the model, but only the English says it: one error, on the English.
    _edit(tree, f"{PAGE}.md", "`tools/result` then observes", "`tools/post-execute` runs before `tools/result`, "
          "which then observes")
    _rerecord(tree / "docs")
    assert _errors(tree) == [
        f"{EN}:60: error: the two languages state different orders: only this paragraph says post before final; "
        f"only its pair {PAGE}.zh.md:62 says finalize before final, normalized before final; bring them to the same "
        f"order, {GENERATE_HINT}"]


def test_the_side_the_record_says_changed_gets_the_one_error(tree):
    # Not re-recorded: the record says the Chinese changed; its "out of sync" error folds into
    # the prose error of that side.
    _edit(tree, f"{PAGE}.zh.md", "无损表示的结果。", "无损表示的结果。`tools/post-execute` 在 `tools/result` 之前运行。")
    errors = _errors(tree)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{ZH}:62: error: the two languages state different orders: only this paragraph "
                                f"says post before final; its pair {PAGE}.md:60 does not say it; bring them to the "
                                "same order")
    assert errors[0].endswith(f"(and {PAGE}.i18n.yaml:6 holds an older hash of this file)")


INTRO = ("The `tools/pre-execute` waterfall runs first, monotonic guards run next, and the `tools/execute` and "
         "`tools/post-execute` waterfalls follow; the three waterfalls may transform a call. Definition-owned "
         "`finalizeContent` and `tools/result` run afterward.")


@pytest.mark.parametrize("side, old, new", [
    ("md", INTRO, "First the `tools/pre-execute` waterfall runs, then the monotonic guards, and then the "
     "`tools/execute` and `tools/post-execute` waterfalls; the three waterfalls may transform a call. "
     "Definition-owned `finalizeContent` and `tools/result` run afterward."),
    ("md", INTRO, "The `tools/pre-execute` waterfall runs before the monotonic guards, which run before the "
     "`tools/execute` and `tools/post-execute` waterfalls; the three waterfalls may transform a call. After them, "
     "definition-owned `finalizeContent` and `tools/result` run."),
    ("md", INTRO, "The pipeline runs `tools/pre-execute` → monotonic guards → `tools/execute` → `tools/post-execute`; "
     "the three waterfalls may transform a call. Definition-owned `finalizeContent` and `tools/result` run afterward."),
    ("md", "`ctx.approval` resolves asks before monotonic guards", "monotonic guards run only after `ctx.approval` "
     "resolves asks"),
    ("zh.md", "`ctx.approval` 在单调守卫之前处理询问", "单调守卫晚于 `ctx.approval` 处理询问"),
    ("zh.md", "`ctx.approval` 在单调守卫之前处理询问", "单调守卫在 `ctx.approval` 处理询问之后运行"),
    ("md", "`tools/result` then observes the immutable", "Then `tools/result` observes the immutable"),
])
def test_the_same_order_said_otherwise_is_not_an_error(tree, side, old, new):
    _edit(tree, f"{PAGE}.{side}", old, new)
    _rerecord(tree / "docs")
    assert _errors(tree) == []


# ================================================================== other pages and pairs of a tree

def _upstream_copy(shared: Path, tmp_path: Path) -> Path:
    root = tmp_path / "upstream"
    shutil.copytree(shared / "upstream/b150a551b8/docs", root / "docs")
    return root


def test_upstream_stage_chain_swapped(shared, tmp_path, capsys):
    root = _upstream_copy(shared, tmp_path)
    page = root / "docs/subsystems/tools.md"
    text = page.read_text(encoding="utf-8")
    old = "→ `tools/execute` (around-dispatch wrappers) → `tools/post-execute` (inspect/replace the result)"
    assert old in text
    page.write_text(text.replace(old, "→ `tools/post-execute` (inspect/replace the result) → `tools/execute` "
                                      "(around-dispatch wrappers)"), encoding="utf-8")
    errors = _errors(root)
    assert len(errors) == 1, errors
    # A long sentence is quoted from where the claim is made.
    assert errors[0].startswith("ROOT/docs/subsystems/tools.md:172: error: “…registered monotonic guards → "
                                "`tools/post-execute` (inspect/replace the result) → `tools/execute`"), errors
    assert "`tools/post-execute` (post) before `tools/execute` (around) (the flow model runs them the other way: " \
           "S42 `around --> post`)" in errors[0]
    assert main(["docs", "check", "--root", str(root)]) == 1
    assert "5 error(s)" in capsys.readouterr().out  # with upstream's four real findings


def test_upstream_pair_hint_names_the_record_command(shared, tmp_path, monkeypatch):
    root = _upstream_copy(shared, tmp_path)
    monkeypatch.chdir(root)
    _edit(root, f"{PAGE}.md", "resolves asks before monotonic guards", "resolves asks after monotonic guards")
    _rerecord(root / "docs")
    errors = _errors(root)
    assert len(errors) == 1, errors
    assert errors[0].endswith(f"(then re-record the pair: `dsh-conformance docs record docs/{PAGE}.md` once the "
                              "sentence is fixed)")


def test_swapped_items_of_an_ordered_stage_list(tree):
    docs = tree / "docs"
    (docs / "guide").mkdir()
    en = ("# Stages\n\nEnglish | [中文](stages.zh.md)\n\nA call goes through:\n\n1. `tools/pre-execute`\n"
          "2. the monotonic guards\n3. `tools/execute`\n4. `tools/post-execute`\n")
    zh = ("# 阶段\n\n[English](stages.md) | 中文\n\n一次调用经过：\n\n1. `tools/pre-execute`\n2. 单调守卫\n"
          "3. `tools/execute`\n4. `tools/post-execute`\n")
    (docs / "guide/stages.md").write_text(en, encoding="utf-8")
    (docs / "guide/stages.zh.md").write_text(zh, encoding="utf-8")
    _rerecord(docs / "guide", "stages")
    assert _errors(tree) == []
    (docs / "guide/stages.md").write_text(en.replace("3. `tools/execute`\n4. `tools/post-execute`",
                                                     "3. `tools/post-execute`\n4. `tools/execute`"), encoding="utf-8")
    _rerecord(docs / "guide", "stages")
    errors = _errors(tree)
    assert len(errors) == 1, errors
    assert errors[0].startswith("ROOT/docs/guide/stages.md:7: error: “ordered list: `tools/pre-execute` / the "
                                "monotonic guards / `tools/post-execute` / `tools/execute`” says `tools/post-execute` "
                                "(post) before `tools/execute` (around)")
    assert "its pair stages.zh.md:7 says around before post" in errors[0]
    assert "then re-record the pair: `dsh-conformance docs record " in errors[0]


def test_sections_with_other_paragraph_counts_are_compared_as_a_whole(tree):
    docs = tree / "docs"
    (docs / "guide").mkdir()
    en = "# Flow\n\nEnglish | [中文](flow.zh.md)\n\n## Order\n\n`tools/execute` runs before `tools/post-execute`.\n"
    zh = ("# 流程\n\n[English](flow.md) | 中文\n\n## 顺序\n\n说明如下。\n\n`tools/execute` 先于 "
          "`tools/post-execute`。\n")
    (docs / "guide/flow.md").write_text(en, encoding="utf-8")
    (docs / "guide/flow.zh.md").write_text(zh, encoding="utf-8")
    _rerecord(docs / "guide", "flow")
    assert _errors(tree) == []  # one paragraph against two: the section says the same
    (docs / "guide/flow.zh.md").write_text(zh.replace("`tools/execute` 先于", "`tools/execute` 和"), encoding="utf-8")
    _rerecord(docs / "guide", "flow")
    errors = _errors(tree)
    assert len(errors) == 1 and errors[0].startswith(
        "ROOT/docs/guide/flow.md:7: error: the two languages state different orders: only this paragraph says "
        "around before post; its pair flow.zh.md:7 does not say it"), errors


def test_a_re_recorded_edit_is_reported_against_the_side_git_sees_changed(tree):
    if shutil.which("git") is None:
        pytest.skip("no git")
    docs = tree / "docs"

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=docs, check=True,
                       capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "pages")
    # The Chinese side says an order the English does not: both hold under the model, the
    # record is re-recorded, and git says which side was edited.
    _edit(tree, f"{PAGE}.zh.md", "无损表示的结果。", "无损表示的结果。`tools/post-execute` 先于 `tools/result`。")
    _rerecord(docs)
    errors = _errors(tree)
    assert len(errors) == 1 and errors[0].startswith(f"{ZH}:62: error: the two languages state different orders: "
                                                     "only this paragraph says post before final"), errors


def test_a_page_without_a_pair_is_checked_too(tree):
    (tree / "docs/notes.md").write_text("# Notes\n\nAfter `tools/result`, the `tools/post-execute` waterfall runs. "
                                        "Filesystem read-before-edit checks run first.\n", encoding="utf-8")
    errors = _errors(tree)
    assert len(errors) == 1 and errors[0].startswith("ROOT/docs/notes.md:3: error: “After `tools/result`, the "
                                                     "`tools/post-execute` waterfall runs.” says"), errors


# ================================================================== the real pages, and the reading itself

def test_our_pages_claim_the_models_order_in_both_languages():
    graph = OrderGraph(MODEL)
    pages = {lang: parse((CATALOGS.parent / "docs" / f"{PAGE}{'.zh' if lang == 'zh' else ''}.md").read_text("utf-8"))
             for lang in ("en", "zh")}
    claims = {lang: [closure({c for s in sentence_claims(p.source, LEXICON, lang) for c in s.claims})  # type: ignore[arg-type]
                     for p in pages[lang].paragraphs if "[English]" not in p.source] for lang in pages}
    assert claims["en"] == claims["zh"]
    found = set().union(*claims["en"])
    assert {Claim("pre", "guards"), Claim("guards", "around"), Claim("post", "finalize"), Claim("approval", "guards"),
            Claim("finalize", "final")} <= found  # the check is not vacuous
    assert all(graph.holds(c) for c in found)


def test_upstream_pages_make_claims_and_pass(shared):
    root = shared / "upstream/b150a551b8"
    text = (root / "docs/subsystems/tools.md").read_text(encoding="utf-8")
    chain = next(p for p in parse(text).paragraphs if p.line == 172)
    assert {("pre", "guards"), ("guards", "around"), ("around", "post"), ("post", "finalize"),
            ("finalize", "final")} <= _claims(chain.source)
    assert [e for e in check_tree(root, CATALOGS) if e.severity == "error" and not is_upstream_finding(e)] == []


@pytest.mark.parametrize("text, lang, claims", [
    ("The `tools/pre-execute` waterfall runs first, monotonic guards run next, and the `tools/execute` waterfall "
     "follows.", "en", {("pre", "guards"), ("pre", "around"), ("guards", "around")}),
    ("Then `tools/execute` runs after `tools/pre-execute`.", "en", {("pre", "around")}),
    ("Monotonic guards run once `tools/pre-execute` allows.", "en", set()),
    ("Once `tools/pre-execute` allows, the monotonic guards run.", "en", {("pre", "guards")}),
    ("Before `tools/execute`, the monotonic guards run.", "en", {("guards", "around")}),
    ("`tools/post-execute` follows `tools/execute`.", "en", {("around", "post")}),
    ("`tools/execute`, followed by `tools/post-execute`.", "en", {("around", "post")}),
    ("`tools/pre-execute` → monotonic guards → `tools/execute`.", "en",
     {("pre", "guards"), ("guards", "around"), ("pre", "around")}),
    # Words that only look like order words.
    ("Filesystem read-before-edit checks stay below `tool-fs`; `tools/execute` and `tools/result` run.", "en", set()),
    ("The first `tools/execute` call and the next `tools/result` event; the following `tools/pre-execute`.", "en",
     set()),
    ("The registry invokes `finalizeContent` exactly once, e.g. for `tools/result`.", "en", set()),
    ("`tools/result` runs immediately before, so the later `tool/result` append is safe.", "en", set()),
    ("`tools/result` never runs before `tools/post-execute`; `tools/execute` doesn't run after `tools/result`.", "en",
     set()),
    ("`tools/result` 不会在 `tools/post-execute` 之前运行。", "zh", set()),
    ("`tools/pre-execute` 首先运行，随后是单调守卫，然后运行 `tools/execute`。", "zh",
     {("pre", "guards"), ("pre", "around"), ("guards", "around")}),
    ("`ctx.approval` 在单调守卫之前处理询问。", "zh", {("approval", "guards")}),
    ("在 `tools/result` 之后，`tool/result` 被记录。", "zh", {("final", "toolResult")}),
    ("`tools/execute` 先于 `tools/post-execute`；`tools/result` 晚于 `finalizeContent`。", "zh",
     {("around", "post"), ("finalize", "final")}),
    ("文件系统守卫、`tools/execute` 和 `tools/result` 都会运行。", "zh", set()),
    # 在 B 之前 with its own verb: the later clause's stage is not its subject (upstream's subsystems/tools).
    ("随后在 `tools/result` 之前立即物化并冻结已接受的结果，因此可用于后续持久化的 `tool/result` 追加。", "zh",
     {("final", "toolResult")}),  # the sequence (随后) only, never `tool/result` before `tools/result`
    ("在 `tools/result` 之前，`finalizeContent` 运行。", "zh", {("finalize", "final")}),
    ("`tools/pre-execute` → 已注册的单调 guard → `tools/execute`。", "zh",
     {("pre", "guards"), ("guards", "around"), ("pre", "around")}),
    ("Guards run before approval.", "en", {("guards", "approval")}),
    ("守卫在审批之前运行。", "zh", {("guards", "approval")}),
    ("Filesystem guards run before approval policy and `tools/execute`.", "en", set()),
])
def test_claims_read_from_a_sentence(text, lang, claims):
    assert _claims(text, lang) == claims


def test_a_sentence_opening_with_then_follows_the_last_sentence_with_stages():
    assert _claims("The `tools/execute` waterfall runs. Nothing else happens. `tools/result` then observes.") == {
        ("around", "final")}
    assert _claims("`tools/execute` 运行。随后，`tools/result` 会观察。", "zh") == {("around", "final")}


def test_a_bad_stage_lexicon_is_bad_input(tmp_path):
    bad = tmp_path / "stages.yaml"
    bad.write_text("nowhere:\n  en: [x]\n", encoding="utf-8")
    with pytest.raises(LexiconError, match="'nowhere' is not a node of the flow model"):
        load_lexicon(MODEL, bad)
    bad.write_text("guards:\n  en: ['(']\n", encoding="utf-8")
    with pytest.raises(LexiconError, match="guards: en phrase"):
        load_lexicon(MODEL, bad)


# ================================================================== docs record

def test_docs_record_re_records_a_pair(tree, capsys):
    docs = tree / "docs"
    _edit(tree, f"{PAGE}.zh.md", "这样一来", "因此")
    record = docs / f"{PAGE}.i18n.yaml"
    comment = [line for line in record.read_text(encoding="utf-8").split("\n") if line.startswith("#")]
    assert main(["docs", "record", str(docs / f"{PAGE}.zh.md")]) == 0
    assert capsys.readouterr().out == f"wrote {record}\n"
    text = record.read_text(encoding="utf-8")
    assert [line for line in text.split("\n") if line.startswith("#")] == comment  # its comment kept
    assert f"{PAGE}.zh.md: {blob_hash((docs / f'{PAGE}.zh.md').read_bytes())}" in text
    assert _errors(tree) == []
    assert main(["docs", "record", str(docs / f"{PAGE}.md")]) == 0
    assert "already records both sides" in capsys.readouterr().out


def test_docs_record_bad_input(tmp_path, capsys):
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    assert main(["docs", "record", str(tmp_path / "a.md")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'a.md'}: no pair to record: a.zh.md missing in {tmp_path}\n"
    assert main(["docs", "record", str(tmp_path / "a.txt")]) == 2
    assert "not a Markdown page" in capsys.readouterr().err
    assert not (tmp_path / "a.i18n.yaml").exists()
