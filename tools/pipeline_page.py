"""The pipeline doc page, English and Chinese, and its pairing record.

Both sides come from two sources of ours: the flow model (the Mermaid block) and the
bilingual prose source ``tools/data/tool-execution-pipeline.prose.yaml`` (header, title,
the Chinese switcher, the paragraphs and the footer). Rendering is pure: the same sources
give the same bytes. Given upstream's two header comments instead of ours, the same
renderer gives upstream's two files byte for byte (tests/test_docs_generate.py).

Layout of a side, as upstream's generator writes it: the header comment, a blank line,
``# title``, a blank line, [the switcher and a blank line, Chinese side only], the intro
paragraph, the ``mermaid`` fence, the closing paragraph, the footer; blocks are separated by
one blank line and the file ends with exactly one newline.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from dsh_conformance.resources import DOCS as OUR_DOCS
from dsh_conformance.resources import TOOLS

from .flow_model import FLOW_FILE, FlowModel, load_flow_model
from .mermaid_flow import render_mermaid
from .pairing import render_record

PROSE_FILE = TOOLS / "data" / "tool-execution-pipeline.prose.yaml"
DOCS = OUR_DOCS if OUR_DOCS is not None else Path("docs")  # installed: the working directory's docs/
PAGE = "tool-execution-pipeline"


@dataclass(frozen=True)
class Side:
    header: str
    title: str
    intro: str
    closing: str
    footer: str
    switcher: str | None = None


@dataclass(frozen=True)
class Prose:
    en: Side
    zh: Side
    record_comment: str


class ProseError(ValueError):
    pass


def load_prose(path: Path = PROSE_FILE) -> Prose:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        en, zh = data["en"], data["zh"]
        fields = ("header", "title", "intro", "closing", "footer")
        return Prose(en=Side(**{k: en[k] for k in fields}),
                     zh=Side(**{k: zh[k] for k in fields}, switcher=zh["switcher"]),
                     record_comment=data["record"]["comment"])
    except (OSError, yaml.YAMLError, KeyError, TypeError) as e:
        raise ProseError(f"{path}: not a bilingual prose source: {e}") from None


def render_side(side: Side, mermaid: str, header: str | None = None) -> str:
    """One language's page. ``header`` replaces the source's header (e.g. upstream's)."""
    blocks = [header if header is not None else side.header, f"# {side.title}"]
    if side.switcher is not None:
        blocks.append(side.switcher)
    blocks += [side.intro, f"```mermaid\n{mermaid}\n```", side.closing, side.footer]
    return "\n\n".join(blocks) + "\n"


@dataclass(frozen=True)
class Pages:
    en: str
    zh: str
    record: str


def render_pages(model: FlowModel, prose: Prose, en_header: str | None = None,
                 zh_header: str | None = None, record_comment: str | None = None) -> Pages:
    mermaid = render_mermaid(model)
    en = render_side(prose.en, mermaid, en_header)
    zh = render_side(prose.zh, mermaid, zh_header)
    record = render_record(prose.record_comment if record_comment is None else record_comment,
                           f"{PAGE}.md", en.encode("utf-8"), f"{PAGE}.zh.md", zh.encode("utf-8"))
    return Pages(en, zh, record)


def generate(docs: Path = DOCS, flow: Path = FLOW_FILE, prose: Path = PROSE_FILE) -> dict[Path, str]:
    """Every generated doc file and its text."""
    pages = render_pages(load_flow_model(flow), load_prose(prose))
    return {docs / f"{PAGE}.md": pages.en, docs / f"{PAGE}.zh.md": pages.zh,
            docs / f"{PAGE}.i18n.yaml": pages.record}
