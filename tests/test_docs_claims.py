"""`docs check` holds every page of a docs tree to the pipeline, in both languages: counts,
drop/keep statements, stage roles, event ownership, the kind a name is called, orders in
plain-text code blocks, and the spec's terms in Chinese. Upstream's whole docs tree gives its
real findings only (no false alarm); edits planted into upstream's own pages are each caught
with the rule they contradict and a suggested wording."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dsh_conformance.tools.catalog_index import load_index
from dsh_conformance.tools.catalogs import CATALOGS
from dsh_conformance.tools.docs_check import check_tree
from dsh_conformance.tools.flow_model import load_flow_model
from dsh_conformance.tools.glossary import check_pair, load_glossary
from dsh_conformance.tools.pipeline_claims import ClaimChecker, load_claims, pipeline_waterfalls
from dsh_conformance.tools.prose_claims import load_lexicon

from .upstream_findings import UPSTREAM_FINDINGS, is_upstream_finding

MODEL = load_flow_model()
INDEX = load_index(CATALOGS)
CHECKER = ClaimChecker(MODEL, INDEX, load_lexicon(MODEL), load_claims(MODEL))
FULL = "upstream/b150a551b8-full/docs"


def _claims(text: str, name: str = "page.md") -> list[str]:
    return [f.message for f in CHECKER.check_page(Path(name), text + "\n")]


# ================================================================== the engine, on small pages

def test_the_waterfalls_a_call_passes_come_from_the_catalogs():
    assert pipeline_waterfalls(MODEL, INDEX) == ["tools/pre-execute", "tools/execute", "tools/post-execute"]


@pytest.mark.parametrize("text, name, rule", [
    ("Sub-calls go through BOTH waterfalls.", "page.md", "P120"),
    ("Each sub-call passes the two pipeline waterfalls.", "page.md", "P120"),
    ("子调用会经过两个 waterfall。", "page.zh.md", "P120"),
    ("Sub-call contexts are deliberately dropped.", "page.md", "P126"),
    ("The `additionalContexts` of a sub-call are discarded.", "page.md", "P126"),
    ("子调用的上下文会被丢弃。", "page.zh.md", "P126"),
    ("Sub-calls log their own `tool/result`.", "page.md", "P120"),
    ("Use `tools/result` to replace the final content.", "page.md", "P99"),
    ("用 `tools/result` 替换最终内容。", "page.zh.md", "P99"),
    ("A registered monotonic guard may ask the user.", "page.md", "P46"),
    ("Use `tools/post-execute` to wrap dispatch with a deadline.", "page.md", "P78"),
    # Variants a maintainer writes, not only the listed examples.
    ("The two waterfalls may transform a call.", "page.md", "P1"),
    ("这两个 waterfall 可以改写一次调用。", "page.zh.md", "P1"),
    ("Sub-calls bypass the monotonic guards.", "page.md", "P120"),
    ("子调用会跳过审批。", "page.zh.md", "P120"),
    ("Sub-call contexts are injected on their own.", "page.md", "P126"),
    ("A sub-call's `additionalContexts` are handed to the program.", "page.md", "P126"),
    ("`tools/result` listeners can change the outcome.", "page.md", "P99"),
    ("Use `tools/pre-execute` to wrap dispatch with a timeout.", "page.md", "P31"),
    ("`tools/execute` wrappers may approve the call.", "page.md", "P54"),
])
def test_a_claim_the_rules_contradict_is_an_error(text, name, rule):
    found = _claims(text, name)
    assert len(found) == 1, found
    assert f"({rule}" in found[0] and "suggested wording: “" in found[0]


@pytest.mark.parametrize("text, name", [
    ("Sub-calls go through all three waterfalls.", "page.md"),
    ("Sub-call contexts are never dropped: they ride on the `run_code` result.", "page.md"),
    ("子调用的上下文不会被丢弃。", "page.zh.md"),
    ("The filesystem's `fs/*` waterfalls are two.", "page.md"),
    ("Use `tools/post-execute` to replace the content, and `tools/result` to observe the outcome.", "page.md"),
    ("`tools/result` cannot replace the outcome.", "page.md"),
    # Upstream's pages of June and July 2026 (the mirror's history, `--as-of`).
    ("`tools/result` to observe the immutable normalized outcome without changing it.", "page.md"),
    ("The stale guard + literal match + atomic rewrite is the unit that must stay together.", "page.md"),
    ("An orphan-fixture guard test fails on a golden not referenced by any scenario.", "page.md"),
    ("`tools/result` observes the immutable outcome after transforms, lossless-JSON validation and finalization.",
     "page.md"),
    ("Sub-calls omit `additionalContexts` to preserve call/result adjacency.", "page.md"),
    ("The `tools/pre-execute` waterfall and the `tools/result` synchronous notification.", "page.md"),
    ("Log-only `todo/write` and `tool/code-dispatch` are tool-owned session events.", "page.md"),
    ("The three waterfalls may transform a call.", "page.md"),
    ("Sub-calls cannot bypass the monotonic guards.", "page.md"),
    ("Sub-call contexts are never injected on their own.", "page.md"),
    # Words inside code spans and link targets are names, not claims.
    ("Sub-call contexts: see `fault:sub-call-contexts-dropped` and [it](sub-calls-dropped.md).", "page.md"),
    # A table listing faults states no rule: cells are read for stage roles only.
    ("| Fault | Rule |\n| --- | --- |\n| A sub-call's contexts are dropped | P126 |", "page.md"),
    # Paths and globs are not event names; scopes beyond the pipeline's are not judged.
    ("See `tools/data/glossary.yaml`, the `fs/*-intent` waterfalls and `approval/policy`.", "page.md"),
    ("`rawName` is used only on the wire (`tools/call`); `dsh-acp` consumes `tools/progress` generically.", "page.md"),
    ("`tools/pre-execute` is a waterfall; `tools/result` is a synchronous notification.", "page.md"),
])
def test_what_agrees_with_the_rules_is_no_claim_against_them(text, name):
    assert _claims(text, name) == []


@pytest.mark.parametrize("text, said", [
    ("The `tools/result` waterfall observes the outcome.", "calls `tools/result` a waterfall"),
    ("The `tools/execute` synchronous notification.", "calls `tools/execute` a notification (emit)"),
    ("The `fs/observed` session event records a read.", "calls `fs/observed` a session event"),
    ("`tools/result` is a waterfall.", "calls `tools/result` a waterfall"),
    ("`tools/result` 是一个 waterfall。", "calls `tools/result` a waterfall"),
    ("`approval/request` is a session event.", "calls `approval/request` a session event"),
    ("`turn/*`, `tool/call`, `tools/result` and `compaction/*` are durable session-event types.",
     "calls `tools/result` a session event"),
    ("`turn/*`、`tool/call`、`tools/result` 和 `compaction/*` 是持久化的会话事件类型。", "calls `tools/result` a session event"),
    ("`tool/call` and `fs/observed` are session events.", "calls `fs/observed` a session event"),
    ("Listeners of `tools/pre-exec` decide.", "names `tools/pre-exec`, which is not in the name table"),
    ("| Event | Role |\n| --- | --- |\n| `tool/results` event | the outcome |", "suggested wording: “`tool/result`”"),
    ("Listeners on `fs/observer` see a read.", "names `fs/observer`"),
    ("`hook/invoke` 事件记录一次调用。", "names `hook/invoke`"),
    ("Tool-owned events: `todo/write`, `hook/invoked`.", "calls `hook/invoked` tool-owned, but"),
    ("Tool-owned session events include `fs/observed`.", "calls `fs/observed` tool-owned with session events"),
])
def test_kinds_and_ownership_come_from_the_catalog_index(text, said):
    found = _claims(text, "page.zh.md" if any("\u4e00" <= c <= "\u9fff" for c in text) else "page.md")
    assert len(found) == 1 and said in found[0], found


def test_a_mistranslated_term_is_flagged_and_an_accepted_one_is_not():
    terms = load_glossary()
    en = "# T\n\nEnglish | [中文](t.zh.md)\n\nSub-calls return denials as binding rejections.\n"
    bad = "# T\n\n[English](t.md) | 中文\n\n子调用将拒绝呈现为具有约束力的驳回。\n"
    good = "# T\n\n[English](t.md) | 中文\n\n子调用将拒绝呈现为绑定拒绝。\n"
    found = check_pair(Path("t.md"), Path("t.zh.md"), en, bad, terms)
    assert len(found) == 1 and found[0].line == 5
    assert "renders it '具有约束力的驳回'" in found[0].message and "(P124)" in found[0].message
    assert "suggested wording: 绑定拒绝" in found[0].message
    assert check_pair(Path("t.md"), Path("t.zh.md"), en, good, terms) == []


# ================================================================== upstream's whole tree

def _upstream(shared: Path) -> Path:
    source = shared / FULL
    if not source.is_dir():
        pytest.skip(f"{FULL} is not in ../shared")
    return source


def test_upstreams_whole_tree_gives_only_its_real_findings(shared):
    root = _upstream(shared).parent
    findings = check_tree(root, CATALOGS)
    errors = [f for f in findings if f.severity == "error"]
    assert [f for f in errors if not is_upstream_finding(f)] == []  # no false alarm on 330 files
    assert len(errors) == len(UPSTREAM_FINDINGS)  # each real finding once
    assert [f for f in findings if f.severity == "warning"] == []


# (file, old, new): each edit is planted into upstream's own page; they touch separate claims,
# so one run of the check over one edited copy shows them all.
PLANTED: dict[str, list[tuple[str, str, str]]] = {
    # P120: three waterfalls, not both.
    "both-waterfalls": [("tool-execution-pipeline.md", "sub-calls carry the parent token",
                         "sub-calls go through BOTH waterfalls, carry the parent token")],
    # P126: sub-call contexts ride on the parent result.
    "dropped": [("tool-execution-pipeline.md", "and omit `additionalContexts` to preserve call/result adjacency",
                 "and their contexts are deliberately dropped to preserve call/result adjacency")],
    "dropped-zh": [("tool-execution-pipeline.zh.md", "并省略 `additionalContexts`", "并丢弃子调用的上下文")],
    # A reversed order around outer normalization (the stage has prose names now).
    "normalization": [("tool-execution-pipeline.md", "and normalizes a snapshot failure before the visible "
                       "definition's snapshotted `finalizeContent` callback enforces its synchronous content-only "
                       "invariant", "before the visible definition's snapshotted `finalizeContent` callback "
                       "enforces its synchronous content-only invariant; outer normalization then runs")],
    "normalization-zh": [("tool-execution-pipeline.zh.md", "如果快照失败，则会先将失败规范化，之后再由可见定义中已随快照固定的 "
                          "`finalizeContent` 回调强制执行其同步且仅限内容的不变式", "可见定义中已随快照固定的 `finalizeContent` "
                          "回调先强制执行其同步且仅限内容的不变式，之后再将快照失败规范化")],
    # Claims in pages other than the pipeline page: a stage role in the extension cookbook ...
    "role": [("cookbook/extension-cookbook.md", "`tools/result` for contained observation of the immutable final "
              "outcome", "`tools/result` to replace the immutable final outcome")],
    # ... and in a table row of the same cookbook ...
    "role-table": [("cookbook/extension-cookbook.md", "observe immutable authoritative outcomes with `tools/result`;",
                    "use `tools/result` to rewrite authoritative outcomes;")],
    # ... an arrow chain inside a code block, both languages alike (code blocks are verbatim) ...
    "code-block": [(name, "tool/call* -> tools/pre-execute -> tools/execute",
                    "tool/call* -> tools/execute -> tools/pre-execute") for name in ("architecture.md",
                                                                                    "architecture.zh.md")],
    # ... when tools/result fires, in the Cordis tutorial ...
    "tutorial": [("cordis-tutorial/07-into-the-harness.md", "is emitted as part of result materialization, before "
                  "`execute`'s promise resolves to the caller", "is emitted after `tool/result` is appended")],
    # ... an order claim in subsystems/tools, in Chinese ...
    "order-zh": [("subsystems/tools.zh.md", "→ `tools/execute`（环绕分派包装层）→ `tools/post-execute`（检查/替换结果）",
                  "→ `tools/post-execute`（检查/替换结果）→ `tools/execute`（环绕分派包装层）")],
    # ... and what a name is, on the approval page.
    "kind": [("subsystems/approval.md", "It appends `approval/asked`, obtains",
              "It appends the `approval/request` session event, obtains")],
    # Names and modes on the developer events pages (the event matrix, a subsystem page, the
    # persistence catalog).
    "matrix-mode": [("event-producer-consumer.md", "| `tools/result` | `emit` |", "| `tools/result` | `waterfall` |")],
    "subsystem-mode": [("subsystems/tools.md", "#### `tools/result` — emit", "#### `tools/result` — waterfall")],
    "badge": [("persistence-catalog.md", "#### `tool/call` — log-only", "#### `tool/call` — surface")],
    # What a name is, on the developer events page.
    "events-page": [("user/develop/framework/events.md", "`step/*`, `tool/call`, `tool/result`, and `compaction/*` are",
                     "`step/*`, `tool/call`, `tools/result`, and `compaction/*` are")],
    # A misspelt event name on the approval page.
    "name": [("subsystems/approval.md", "`ctx.approval` dispatch servic", "`tools/pre-executed` listeners, a dispatch "
                                                                          "servic")],
    # A mistranslated term in another pair.
    "term": [("subsystems/tools.zh.md", "已注册的单调 guard", "已注册的单调递增 guard")],
}
CAUGHT = {
    "both-waterfalls": ("tool-execution-pipeline.md:60", "says 'BOTH waterfalls', but a sub-call passes the whole "
                        "pipeline, all 3 waterfalls (`tools/pre-execute`, `tools/execute`, `tools/post-execute`) (P120;"),
    "dropped": ("tool-execution-pipeline.md:60", "says 'dropped', but a sub-call's contexts are deferred on the "
                "`run_code` record"),
    "dropped-zh": ("tool-execution-pipeline.zh.md:62", "says '丢弃', but a sub-call's contexts are deferred"),
    "normalization": ("tool-execution-pipeline.md:60", "says finalize before outer normalization (normalized) (the "
                      "flow model runs them the other way: S46 `normalized --> finalize`)"),
    "normalization-zh": ("tool-execution-pipeline.zh.md:62", "says `finalizeContent` (finalize) before 将快照失败规范化 "
                         "(normalized) (the flow model runs them the other way: S46 `normalized --> finalize`)"),
    "role": ("cookbook/extension-cookbook.md:33", "gives `tools/result` the role 'replace', but `tools/result` only "
             "observes the frozen, authoritative outcome (P99); suggested wording:"),
    "role-table": ("cookbook/extension-cookbook.md:115", "gives `tools/result` the role 'rewrite'"),
    "code-block": ("architecture.md:77", "says `tools/execute` (around) before `tools/pre-execute` (pre)"),
    "tutorial": ("cordis-tutorial/07-into-the-harness.md:94", "says `tool/result` (toolResult) before `tools/result` "
                 "(final)"),
    "order-zh": ("subsystems/tools.zh.md:172", "says `tools/post-execute` (post) before `tools/execute` (around)"),
    "kind": ("subsystems/approval.md:86", "calls `approval/request` a session event, but pipeline.catalog.json has "
             "it as a live waterfall event (P43); suggested wording: “`approval/request` waterfall”"),
    "matrix-mode": ("event-producer-consumer.md:61", "`tools/result` is listed with mode waterfall, but "
                    "pipeline.catalog.json gives mode emit (P98, P99, P100)"),
    "subsystem-mode": ("subsystems/tools.md:702", "`tools/result` is listed with mode waterfall"),
    "badge": ("persistence-catalog.md:791", "`tool/call` is marked surface, but pipeline.catalog.json marks it "
              "log-only"),
    "events-page": ("user/develop/framework/events.md:106", "calls `tools/result` a session event, but "
                    "pipeline.catalog.json has it as a live emit event (P98, P99, P100)"),
    "name": ("subsystems/approval.md:5", "names `tools/pre-executed`, which is not in the name table (generated "
             "from pipeline.catalog.json, which holds every rc.8 event of the scopes tools/, tool/, fs/, hook/, todo/); "
             "suggested wording: “`tools/pre-execute`”"),
    "term": ("subsystems/tools.zh.md:172", "says 'monotonic guards', and this paragraph renders it '单调递增 guard'; "
             "in the spec (P48)"),
}


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> list[str]:
    from .conftest import SHARED

    source = _upstream(SHARED)
    root = tmp_path_factory.mktemp("planted")
    shutil.copytree(source, root / "docs")
    for edits in PLANTED.values():
        for name, old, new in edits:
            path = root / "docs" / name
            text = path.read_bytes().decode("utf-8")
            assert old in text, old
            path.write_bytes(text.replace(old, new, 1).encode("utf-8"))
    return [str(f).replace(str(root), "ROOT") for f in check_tree(root, CATALOGS)
            if f.severity == "error" and not is_upstream_finding(f)]


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_an_edit_planted_in_upstreams_pages_is_caught(planted, kind):
    where, said = CAUGHT[kind]
    assert any(e.startswith(f"ROOT/docs/{where}: error: ") and said in e for e in planted), planted


# ================================================================== the name table

def test_the_name_table_is_the_catalogs():
    from dsh_conformance.tools.name_table import name_table

    table = name_table(INDEX)
    assert table.kind_of("ctx.tools.execute").kind == "service-method"
    assert table.kind_of("ask", "PreToolDecision").kind == "type-member"
    assert table.kind_of("fs/observed").kind == "live-event"  # not a session event (spec section 4)
    assert table.kind_of("finalizeContent").of == "ToolDefinition"
    assert {e.kind for e in table.entries} == {"session-event", "live-event", "service", "service-method", "tool",
                                               "type", "type-member", "package", "event-scope"}


SURFACE = Path(__file__).resolve().parent.parent / "tools/dsh-adapter/node_modules/@deepseek-ai/dsh-tools/lib/types"


def test_every_name_of_the_packages_pipeline_surface_is_in_the_name_table():
    """Read from rc.8's declarations (after `make adapter`): the registry's events, its public
    methods, a definition's and a result's members, and the decisions' variants."""
    import re

    from dsh_conformance.tools.name_table import name_table

    index_d = SURFACE / "index.d.ts"
    if not index_d.is_file():
        pytest.skip("the adapter's node_modules are not installed (make adapter)")
    text = index_d.read_text(encoding="utf-8")

    def block(head: str) -> str:
        start = text.index(head)
        return text[start: text.index("\n}", start)]

    table = name_table(INDEX)
    events = re.findall(r"^\s+'([\w/-]+)'\(", block("interface Events"), re.M)
    runtime = block("export declare class ToolRuntime")
    methods = {m for m in re.findall(r"^    (\w+)\(", runtime, re.M) if m != "constructor"}
    definition = set(re.findall(r"^    (?:readonly )?(\w+)\??[(:]", block("export interface ToolDefinition "), re.M))
    definition |= {"name", "description", "parameters"}  # from ToolSchema, which it extends
    result = set(re.findall(r"^    readonly (\w+)\??:", block("export interface ToolExecutionSuccess"), re.M))
    result |= set(re.findall(r"^    readonly (\w+)\??:", block("export interface ToolExecutionFailure"), re.M))
    execution = set(re.findall(r"^    readonly (\w+)\??:", block("export interface ToolExecutionInput"), re.M))
    execution |= set(re.findall(r"^    readonly (\w+)\??:", block("export interface ToolExecution "), re.M))
    run_context = set(re.findall(r"^    (\w+)\(", block("export interface ToolRunContext"), re.M))
    pre = set(re.findall(r"kind: '(\w+)'", block("export type PreToolDecision")))
    post = set(re.findall(r"kind: '(\w+)'", block("export type PostToolDecision")))
    assert events and methods and definition and result and execution and run_context and pre and post  # not vacuous
    missing = [e for e in events if table.kind_of(e) is None]
    missing += [f"ctx.tools.{m}" for m in sorted(methods) if table.kind_of(f"ctx.tools.{m}") is None]
    missing += [f"ToolDefinition.{m}" for m in sorted(definition) if table.kind_of(m, "ToolDefinition") is None]
    missing += [f"ToolExecutionResult.{m}" for m in sorted(result)
                if table.kind_of(m, "ToolExecutionResult") is None]
    missing += [f"ToolExecution.{m}" for m in sorted(execution) if table.kind_of(m, "ToolExecution") is None]
    missing += [f"ToolRunContext.{m}" for m in sorted(run_context) if table.kind_of(m, "ToolRunContext") is None]
    missing += [f"PreToolDecision.{k}" for k in sorted(pre) if table.kind_of(k, "PreToolDecision") is None]
    missing += [f"PostToolDecision.{k}" for k in sorted(post) if table.kind_of(k, "PostToolDecision") is None]
    assert missing == []


@pytest.mark.parametrize("old, new", [
    ("`ctx.approval` resolves asks", "`ctx.approval` resolves an `ask` returned through `ctx.tools.execute()`"),
    ("`ctx.approval` resolves asks", "`ctx.tools.execute()` resolves asks"),
    ("`ctx.approval` resolves asks", "`ctx.approval` resolves asks on `exec.signal`, `ctx.tools.guard()` and "
     "`ToolRunContext.concludeTurn()`"),
])
def test_real_rc8_names_on_the_pipeline_page_are_no_error(tmp_path, old, new):
    from dsh_conformance.tools.pipeline_page import PAGE, generate

    docs = tmp_path / "docs"
    docs.mkdir()
    for path, text in generate(docs).items():
        path.write_bytes(text.encode("utf-8"))
    page = docs / f"{PAGE}.md"
    page.write_bytes(page.read_bytes().replace(old.encode(), new.encode(), 1))
    errors = [str(f) for f in check_tree(tmp_path, CATALOGS) if f.severity == "error"]
    assert not [e for e in errors if "unknown name" in e or "the name table" in e], errors


# ================================================================== --as-of: the pairing rules of a tree's day

OLD_CONTRACT = """# Bilingual documentation

A pair is three sibling files; the record holds each side's git blob hash. The Chinese file
links back with `[English](foo.md) | 中文`. Heading depths and verbatim code blocks match.
The gate is `pnpm run verify-translation-pairing`.
"""
NEW_CONTRACT = OLD_CONTRACT + """An authored English file reciprocates with its Chinese link. Every relative link uses its
source side's target locale.
"""
GUIDE_EN = "# Guide\n\nSee [the other page](other.md). `tools/result` runs before `tools/post-execute`.\n"
GUIDE_ZH = "# 指南\n\n[English](guide.md) | 中文\n\n见[另一页](other.md)。`tools/result` 在 `tools/post-execute` 之前运行。\n"


def _git(repo: Path, *args: str) -> str:
    import subprocess

    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                           "-c", "commit.gpgsign=false", *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def history(tmp_path) -> tuple[Path, str, str]:
    """A repository whose docs break two pairing rules its tooling adds only in the second
    commit, and state a wrong order in both commits."""
    from dsh_conformance.tools.pairing import render_record
    from dsh_conformance.tools.pipeline_page import generate

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    docs = repo / "docs"
    (docs / "i18n").mkdir(parents=True)
    for path, text in generate(docs).items():
        path.write_bytes(text.encode("utf-8"))
    for name, text in (("other.md", "# Other\n\nEnglish | [中文](other.zh.md)\n\nText.\n"),
                       ("other.zh.md", "# 其他\n\n[English](other.md) | 中文\n\n文本。\n"),
                       ("guide.md", GUIDE_EN), ("guide.zh.md", GUIDE_ZH)):
        (docs / name).write_bytes(text.encode("utf-8"))
    for stem in ("other", "guide"):
        (docs / f"{stem}.i18n.yaml").write_text(render_record("# r", f"{stem}.md", (docs / f"{stem}.md").read_bytes(),
                                                              f"{stem}.zh.md", (docs / f"{stem}.zh.md").read_bytes()))
    (docs / "i18n/README.md").write_text(OLD_CONTRACT)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "old")
    old = _git(repo, "rev-parse", "HEAD")
    (docs / "i18n/README.md").write_text(NEW_CONTRACT)
    _git(repo, "commit", "-qam", "new pairing rules")
    return repo, old, _git(repo, "rev-parse", "HEAD")


def _as_of(repo: Path, commit: str, capsys) -> tuple[int, str]:
    from dsh_conformance.cli import main

    code = main(["docs", "check", "--root", str(repo), "--as-of", commit, "--max-per-file", "0"])
    return code, capsys.readouterr().out


def test_an_older_tree_is_judged_by_the_pairing_rules_of_its_day(history, capsys):
    repo, old, new = history
    code, out = _as_of(repo, old, capsys)
    assert code == 1
    assert "not in force: link-locale, regions, structure-links, structure-lists, structure-tables, switcher-en" in out
    assert "missing language switcher" not in out and "wrong locale" not in out
    # The pipeline facts are still held to the catalogs, in both languages.
    assert f"{repo}@{old[:10]}/docs/guide.md:3: error: “`tools/result` runs before `tools/post-execute`.” says" in out
    assert f"{repo}@{old[:10]}/docs/guide.zh.md:5: error:" in out
    code, out = _as_of(repo, new, capsys)
    assert code == 1
    assert f"{repo}@{new[:10]}/docs/guide.md:1: error: missing language switcher — no link back to guide.zh.md" in out
    assert f"{repo}@{new[:10]}/docs/guide.zh.md:5: error: link target \"other.md\" uses the wrong locale" in out


def test_as_of_needs_a_commit_of_a_repository(history, tmp_path, capsys):
    from dsh_conformance.cli import main

    repo, _, _ = history
    assert main(["docs", "check", "--root", str(repo), "--as-of", "no-such-commit"]) == 2
    assert "no-such-commit" in capsys.readouterr().err
    assert main(["docs", "check", "--root", str(tmp_path), "--as-of", "HEAD"]) == 2


def test_a_trees_gate_scripts_say_which_pairing_rules_it_enforces(tmp_path):
    # Upstream's gate of July 2026 reported no wrong locale and had no generated regions: its
    # messages are the evidence, before the contract's wording.
    from dsh_conformance.tools.pairing_rules import rules_of_tree

    (tmp_path / "scripts").mkdir()
    (tmp_path / "docs/i18n").mkdir(parents=True)
    (tmp_path / "docs/i18n/README.md").write_text(NEW_CONTRACT)
    (tmp_path / "scripts/verify-translation-pairing.ts").write_text(
        "fail(`incomplete pair — missing ${m}`); fail('malformed consistency record'); fail(`${s} is out of sync`);\n"
        "fail(`missing language switcher — no link to ${en}`); fail(`... no link back to ${zh}`);\n")
    (tmp_path / "scripts/translation-pairing.ts").write_text(
        "const FIELDS = ['heading (depth)', 'code block', 'table (row x column count)', "
        "'list (kind, start, item count)', 'link target'];\n")
    rules = rules_of_tree(tmp_path, "t")
    assert rules.in_force == {"pair-complete", "record", "switcher-zh", "switcher-en", "structure-headings",
                              "structure-code", "structure-tables", "structure-lists", "structure-links"}
    assert "gate scripts" in rules.source
    (tmp_path / "scripts/translation-links.ts").write_text("fail(`link target uses the wrong locale`);\n")
    assert "link-locale" in rules_of_tree(tmp_path, "t").in_force
    # Without scripts, the contract; without either, no pairing gate at all.
    for p in (tmp_path / "scripts").iterdir():
        p.unlink()
    assert rules_of_tree(tmp_path, "t").in_force >= {"switcher-en", "link-locale"}
    (tmp_path / "docs/i18n/README.md").unlink()
    assert rules_of_tree(tmp_path, "t").in_force == frozenset()
