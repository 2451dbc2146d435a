"""Upstream's real findings: what `docs check` reports on upstream's docs tree at b150a551b8
(../shared/upstream/b150a551b8-full/docs) that is wrong there, each with its rule. The
README's docs-check section lists the same ones; every other error on that tree is a false
alarm (tests/test_docs_claims.py)."""

from __future__ import annotations

from typing import Any

PAGE = "tool-execution-pipeline"

# (file under docs/, line, the start of the message)
UPSTREAM_FINDINGS: list[tuple[str, int, str]] = [
    # P71 / spec section 4: hook-bridge listeners append these, not a tool body.
    (f"{PAGE}.md", 20, "node 'owned' calls `hook/invoked` tool-owned, but the catalogs say hook-bridge writes it"),
    (f"{PAGE}.md", 20, "node 'owned' calls `hook/result` tool-owned, but the catalogs say hook-bridge writes it"),
    # spec section 4: fs/observed is a live emit event, not a session-log event.
    (f"{PAGE}.md", 20, "node 'owned' groups `fs/observed` with session events, but it is a live event with mode emit"),
    # P124: "binding rejections" is the rejection of a program's tool binding, not "binding force".
    (f"{PAGE}.zh.md", 62, "“…的 `run_code` 传输及其序列化子调用都送入流水线；子调用携带父级 token、记录 `tool/code-dispatch`、将拒绝"
                          "呈现为具有约束力的驳回"),
]


def is_upstream_finding(f: Any) -> bool:
    """Whether a finding (of any copy of upstream's tree) is one of upstream's real findings."""
    path = f.file.as_posix()
    return any(path.endswith("/docs/" + name) and f.line == line and f.message.startswith(start)
               for name, line, start in UPSTREAM_FINDINGS)
