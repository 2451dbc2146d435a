"""The observation catalog, rendered: ``catalogs/observations.catalog.json`` and ``docs/observations.md``.

Both come from the oracle's own table (``conformance.contract``), with each entry's profiles
taken from the rule index (the profiles whose rules fix the observation). ``catalogs
generate`` writes them; ``catalogs check`` keeps them fresh.
"""

from __future__ import annotations

import json
from typing import Any

from dsh_conformance.spec import rules as rule_index
from dsh_conformance.spec import contract

FILE = "observations.catalog.json"
PAGE = "observations.md"
FORMAT = "dsh-conformance/observations/v1"

COMPARISON = (
    "Every portable observation is compared, call by call, under the profile set a case is scored for (the "
    "profiles of the rules it cites, and core). A verdict for a profile set depends only on its rules (spec "
    "section 2): each part listed in `parts` is fixed only by its rules, and is masked when none of their "
    "profiles is checked (a result's parts wherever a result appears in a value). Under core that is every "
    "failure message and `Error: ...` text, a non-string message's type, `error.info`, P92's key presence, "
    "the approval request, and a record's root id and signal; reference compares texts exactly (tails the spec leaves open by prefix); code-mode "
    "compares Code Mode's own texts. An entry's `fields` names the parts inside its value, with their rules "
    "and profiles; a divergence only in one part is blamed on that part's rules.")


def _profiles(rules: tuple[str, ...]) -> list[str]:
    known = rule_index.rules()
    order = {p: n for n, p in enumerate(rule_index.PROFILES)}
    return sorted({known[r].profile for r in rules if r in known}, key=lambda p: order.get(p, 99))


def _fields(fields: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    return {k: {"rules": list(v), "profiles": _profiles(v)} for k, v in fields.items()}


def _step(s: contract.Step, stages: list[str]) -> dict[str, Any]:
    return {"what": s.what, "stages": stages, "value": s.value, "rules": list(s.rules),
            "profiles": _profiles(s.rules), "meaning": s.meaning, "fields": _fields(s.fields)}


def build() -> dict[str, Any]:
    """The catalog as a JSON document."""
    stages = [p.stage for p in contract.PARTICIPANTS]
    steps = []
    for s in contract.STEPS:
        at = [st for st in stages if contract.step(st, s.what) is s]
        steps.append(_step(s, at))
    return {
        "$format": FORMAT,
        "comparison": COMPARISON,
        "parts": [{"name": p.name, "rules": list(p.rules), "profiles": _profiles(p.rules), "meaning": p.meaning,
                   "blamed": p.blamed}
                  for p in contract.PARTS],
        "probes": [{"stage": p.stage, "what": p.what, "who": None, "value": p.value, "rules": list(p.rules),
                    "profiles": _profiles(p.rules), "meaning": p.meaning,
                    "fields": _fields(p.fields)} for p in contract.PROBES],
        "participants": [{"stage": k.stage, "who": k.who, "runs": k.runs, "rules": list(k.rules),
                          "profiles": _profiles(k.rules), "meaning": k.meaning,
                          "steps": [s.what for s in contract.steps_at(k.stage)]} for k in contract.PARTICIPANTS],
        "steps": steps,
        "programSteps": [_step(s, ["program"]) for s in contract.PROGRAM_STEPS],
        "oracleOnly": [{"stage": st, "what": w} for st, whats in contract.ORACLE_ONLY.items() for w in whats]
        + [{"stage": "execute", "what": w, "who": who} for who in sorted(contract.BUILTIN_PARTICIPANTS)
           for w in ("call", "return")],
        "$defs": contract.value_defs(),
    }


def _schema_text(schema: dict[str, Any]) -> str:
    """A value schema in one short line for the page (the JSON file has it in full)."""
    if schema == contract.NOTHING:
        return "`null`"
    ref = schema.get("$ref")
    if ref:
        return f"`{ref.rsplit('/', 1)[-1]}`"
    if "anyOf" in schema and "properties" not in schema:
        return " or ".join(_schema_text(s) for s in schema["anyOf"])
    if schema.get("type") == "object" and "properties" in schema:
        req = set(schema.get("required", []))
        parts = [f"{k}{'' if k in req else '?'}: {_field(v)}" for k, v in schema["properties"].items()]
        return "`{" + ", ".join(parts) + "}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    return f"`{schema.get('type', 'any')}`"


def _field(v: dict[str, Any]) -> str:
    if "const" in v:
        return json.dumps(v["const"])
    if "enum" in v:
        return "|".join(json.dumps(x) for x in v["enum"])
    if "$ref" in v:
        return v["$ref"].rsplit("/", 1)[-1]
    if v.get("type") == "object" and "properties" in v:
        return "{" + ", ".join(v["properties"]) + "}"
    if v.get("type") == "array":
        return "array"
    return str(v.get("type", "JsValue"))


def _cell(s: str) -> str:
    return s.replace("|", "\\|") if "\\|" not in s else s


def render_page(doc: dict[str, Any]) -> str:
    """``docs/observations.md``: the catalog for a reader."""
    out = [
        "<!-- generated by `dsh-conformance catalogs generate` from conformance/spec/contract.py; do not edit -->",
        "# The observation catalog: what an implementation reports",
        "",
        "A trace (`catalogs/trace.schema.json`) lists observations `{call, stage, what, who, value, rules}`. "
        "An implementation under test reports the **probe** observations below (`who: null`: a stage boundary "
        "as a probe installed outermost on the stage's seam sees it) and every observation of a **scripted "
        "participant** (`who`: the participant's name, as its kind below says). `rules` is informative: the "
        "comparison ignores what an implementation sends there. The machine-readable catalog, with each "
        f"value's full JSON Schema, is `catalogs/{FILE}`; the trace and answer schemas hold observations to it "
        "(`run --validate` reports one outside it as `invalid`, with its JSON path).",
        "",
        COMPARISON,
        "",
        "## Probe observations (`who: null`)",
        "",
        "| stage | what | value | rules | profiles | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for p in doc["probes"]:
        out.append(f"| `{p['stage']}` | `{p['what']}` | {_cell(_schema_text(p['value']))} | {', '.join(p['rules'])} | "
                   f"{', '.join(p['profiles'])} | {p['meaning']} |")
    out += ["", "## Parts only some rules fix", "",
            "Masked when no profile of their rules is checked; a divergence in one part alone is blamed on its "
            "rules. A result's parts are masked wherever a result appears (a probe's value, an `observe` of a "
            "result, a wrapper's value, a final result, a loop's `tool/result`).", "",
            "| part | rules | profiles | meaning |", "|---|---|---|---|"]
    out += [f"| {p['name']} | {', '.join(p['rules'])} | {', '.join(p['profiles'])} | {_cell(p['meaning'])} |"
            for p in doc["parts"]]
    out += ["",
            "## Scripted participants", "",
            "A participant observation's `stage` says which kind of participant made it, and `who` names it. "
            "Asynchronous participants (waterfall listeners, bodies, the approval service) are async functions: "
            "a promise they return is awaited before `return` is observed (a rejection is observed as `throw`). "
            "Synchronous ones (guards, finalizers, renderers, observers, classifiers, getters) return as they "
            "are: a promise returned is the value.", "",
            "| stage | who | runs | steps observed | rules | meaning |", "|---|---|---|---|---|---|"]
    for k in doc["participants"]:
        out.append(f"| `{k['stage']}` | {_cell(k['who'])} | {k['runs']} | {', '.join(f'`{s}`' for s in k['steps'])} | "
                   f"{', '.join(k['rules'])} | {k['meaning']} |")
    out += ["", "## Participant observations by `what`", "",
            "Each invocation is observed as `call`, then one observation per step that makes one, then `return` "
            "or `throw`. Steps that change nothing observable by themselves (`set-signal`, `sleep`, `keep`, "
            "`next`, `await-signal`, `gate`, `return-kept`) make no observation of their own; `abort` does. "
            "An observation witnesses its own rules and those of its participant's kind. The scenario fixes "
            "each participant's steps, so a step's observation left out (while the participant's next one is "
            "there) is a contract error, not a pipeline rule's failure.", "",
            "| what | stages | value | rules | meaning |", "|---|---|---|---|---|"]
    for s in doc["steps"] + doc["programSteps"]:
        stages = "any participant's" if len(s["stages"]) > 3 else ", ".join(f"`{x}`" for x in s["stages"])
        out.append(f"| `{s['what']}` | {stages} | {_cell(_schema_text(s['value']))} | {', '.join(s['rules']) or '-'} | "
                   f"{s['meaning']} |")
    out += ["", "## The oracle's own observations", "",
            "The oracle also records its reasoning (entry, routes, checkpoints, materialization, ...). An "
            "implementation never has to send these; comparisons ignore them; any other `who: null` pair is "
            "outside the contract.", "",
            ", ".join(f"`{o['stage']} {o['what']}`" + (f" (who `{o['who']}`)" if o.get("who") else "")
                      for o in doc["oracleOnly"]), ""]
    return "\n".join(out)


def files() -> dict[str, str]:
    doc = build()
    return {FILE: json.dumps(doc, ensure_ascii=False, indent=1) + "\n", PAGE: render_page(doc)}
