"""Which bilingual pairing rules a docs tree's own tooling enforces (tools/data/pairing-rules.yaml),
and a tree as it was at a commit.

``docs check --as-of COMMIT`` takes the tree of COMMIT from the repository's history, reads the
pairing rules in force there from that tree's own tooling (its gate script, its pairing
contract in docs/i18n/README.md) and checks the pairs by those rules only: an older tree is
judged by the rules of its day, not by rules added later. The pipeline facts (orders, claims,
names, the glossary, the pipeline page against the flow model) are still held to the
reference catalogs.
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from dsh_conformance.resources import TOOLS

RULES_FILE = TOOLS / "data" / "pairing-rules.yaml"


class PairingRulesError(ValueError):
    """The rules file does not load, or the commit cannot be read."""


@dataclass(frozen=True)
class PairingRules:
    """The pairing rules in force (their ids), and where that was read."""
    in_force: frozenset[str]
    source: str

    def has(self, rule: str) -> bool:
        return rule in self.in_force


def _load(path: Path = RULES_FILE) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise PairingRulesError(f"{path}: cannot read: {e}") from None
    if not isinstance(data.get("rules"), dict) or not isinstance(data.get("scripts"), list):
        raise PairingRulesError(f"{path}: expected `scripts`, `contract`, `gate` and `rules`")
    return data


def all_rules() -> PairingRules:
    """Today's rules: every rule of the file (what ``docs check`` applies without --as-of)."""
    return PairingRules(frozenset(_load()["rules"]), "every pairing rule (today's)")


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def rules_of_tree(repo_root: Path, label: str) -> PairingRules:
    """The rules the tree at ``repo_root`` (a repository's root: docs/ and scripts/) enforces:
    read from its gate scripts when it has them, else from its pairing contract."""
    data = _load()
    scripts = [t for p in data["scripts"] if (t := _read(repo_root / str(p))) is not None]
    if scripts:
        text, key, source = "\n".join(scripts), "script", "its gate scripts"
    else:
        contract = _read(repo_root / str(data["contract"]))
        if contract is None or not re.search(str(data["gate"]), contract):
            return PairingRules(frozenset(), f"{label}: no pairing gate in the tree's tooling")
        text, key, source = contract, "contract", f"its pairing contract ({data['contract']})"
    in_force = frozenset(rule for rule, entry in data["rules"].items()
                         if entry.get(key) and re.search(str(entry[key]), text, re.I))
    return PairingRules(in_force, f"{label}: the pairing rules {source} enforce")


def describe(rules: PairingRules) -> str:
    data = _load()["rules"]
    off = sorted(set(data) - rules.in_force)
    return f"{rules.source}; not in force: {', '.join(off) if off else 'none'}"


def tree_at(repo: Path, commit: str, into: Path) -> tuple[Path, str]:
    """The repository's ``docs/`` and ``scripts/`` as of ``commit``, written under ``into``;
    returns that root and the commit's full hash."""
    def git(*args: str) -> bytes:
        try:
            done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as e:
            raise PairingRulesError(f"--as-of needs git: {e}") from None
        if done.returncode != 0:
            raise PairingRulesError(f"{repo}: git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    full = git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}").decode().strip()
    if git("rev-parse", "--is-bare-repository").decode().strip() == "true":
        prefix = ""  # a bare repository (a mirror): its tree is the repository's root
    else:
        top = Path(git("rev-parse", "--show-toplevel").decode().strip())
        prefix = repo.resolve().relative_to(top.resolve()).as_posix() if repo.resolve() != top.resolve() else ""
    wanted = [p for p in ("docs", "scripts") if git("ls-tree", "--name-only", full, "--", f"{prefix}/{p}"
                                                     if prefix else p).strip()]
    if "docs" not in wanted:
        raise PairingRulesError(f"{repo}: commit {commit} has no docs/ directory")
    archive = git("archive", "--format=tar", full, "--", *[f"{prefix}/{p}" if prefix else p for p in wanted])
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return (into / prefix if prefix else into), full
