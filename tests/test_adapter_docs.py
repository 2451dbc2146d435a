"""A port author's questions answered in the docs (issue 44, item 2): every seam of the JS
kit's binding and every World field a binding uses is named in the kit's README or in
docs/writing-an-adapter.md. Both lists are read from the code (the skeleton's exports; the
World's members that the real binding, its helpers and the toy binding use), not written by
hand; and the refused-write texts the page shows are the kit's."""

from __future__ import annotations

import re

import pytest

from dsh_conformance.kit import engine_texts
from dsh_conformance.tools.port_questions import refusal_rows

from .conftest import ROOT

pytestmark = pytest.mark.rules("P24")

ADAPTER = ROOT / "tools" / "dsh-adapter"
BINDINGS = [ADAPTER / "binding.mjs", *sorted((ADAPTER / "lib").glob("*.mjs")), ROOT / "tests" / "fakes" / "kit_toy_binding.mjs"]


def docs() -> str:
    return ((ADAPTER / "kit" / "README.md").read_text(encoding="utf-8")
            + (ROOT / "docs" / "writing-an-adapter.md").read_text(encoding="utf-8"))


def seams() -> set[str]:
    text = (ADAPTER / "kit" / "skeleton" / "binding.mjs").read_text(encoding="utf-8")
    return set(re.findall(r"^export (?:async )?function (\w+)", text, re.M))


def world_members() -> set[str]:
    text = (ADAPTER / "kit" / "world.mjs").read_text(encoding="utf-8")
    fields = set(re.findall(r"^\s+this\.(\w+)\s*=", text, re.M))
    methods = set(re.findall(r"^  (?:async |get )?(\w+)\(", text, re.M)) - {"constructor", "if", "for", "switch"}
    return fields | methods


def used_by_bindings() -> set[str]:
    used = set()
    for path in BINDINGS:
        used |= set(re.findall(r"\bw\.(\w+)", path.read_text(encoding="utf-8")))
    return used & world_members()


def test_the_lists_are_read_from_the_code():
    assert {"open", "prepare", "register", "execute", "runLoop", "release", "dispatchIntent"} <= seams()
    assert {"recordResult", "inputs", "classifying", "signalNames", "within"} <= used_by_bindings()
    assert "host" not in used_by_bindings()  # the DSH binding's own state, not the World's


def test_the_docs_name_every_seam():
    text = docs()
    missing = sorted(s for s in seams() if not re.search(rf"`{s}\(", text))
    assert not missing, f"tools/dsh-adapter/kit/README.md: describe the seams {missing}"


def test_the_docs_name_every_world_field_a_binding_uses():
    text = docs()
    missing = sorted(m for m in used_by_bindings() if not re.search(rf"`w\.{m}\b", text))
    assert not missing, f"tools/dsh-adapter/kit/README.md, The World a seam is handed: describe {missing}"


def test_the_port_questions_are_answered_from_the_code():
    page = (ROOT / "docs" / "writing-an-adapter.md").read_text(encoding="utf-8")
    for _, message in refusal_rows():
        assert f"`{message}`" in page
    assert engine_texts.frozen_add("agent").replace("agent", "K") in page
    for said in ("adding `agent` or `parent`", "deadline:<call>:<n>", "w.inputs.set(subCallId, input)",
                 "w.classifying", "w.recordResult(callId, result)", "section 1.3", "{agent, seq, type, data, sourceEventSeqs, at}",
                 engine_texts.nullish_read("null", "type")):
        assert said in page, said
