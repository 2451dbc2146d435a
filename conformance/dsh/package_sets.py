"""Which versions of the other ``@deepseek-ai`` packages go with a version of ``dsh-tools``.

The adapter drives a set of packages (the names of ``tools/dsh-adapter/package.json``). The
DSH packages are released in lockstep, one version number for all, but the registry does not
hold every package at every version: ``dsh-agent-loop`` has 0.1.0-rc.6 and rc.8 and no rc.7;
``dsh-tool-call-timeout-policy`` has no 0.1.0 release before rc.8; nothing of the agent
exists at 0.0.1. So for a version V of ``dsh-tools`` each lockstep package is taken at the
newest version of V's release line (same major.minor.patch) that is not later than V, and is
left out of the set when there is none. The packages that are not released in lockstep
(cordis, cosmokit, schemastery) are taken in the range ``dsh-tools`` V itself declares, as
npm would resolve them; one it does not declare comes in through whoever depends on it.

An old set can break the peer ranges its packages declare (``dsh-tools`` 0.0.1-rc.1 wants
``dsh-agent`` ^0.0.1-rc.1, which was never published): the installer then asks npm for
peer-dependency leniency and says so (``conformance.adapter_install``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

TOOLS = "@deepseek-ai/dsh-tools"

_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


class NotPublished(ValueError):
    """The registry has no such version of dsh-tools."""

    def __init__(self, version: str, published: list[str]) -> None:
        super().__init__(f"@deepseek-ai/dsh-tools {version} is not published; the registry has "
                         + (", ".join(published) or "no version"))
        self.version, self.published = version, published


def semver_key(version: str) -> tuple[Any, ...]:
    """SemVer 2.0 precedence (section 11), as npm orders versions: a release after its
    prereleases, numeric identifiers numerically and before alphanumeric ones."""
    m = _SEMVER.match(version)
    if m is None:
        raise ValueError(f"not a semantic version: {version!r}")
    core = tuple(int(g) for g in m.group(1, 2, 3))
    pre = m.group(4)
    if pre is None:
        return (*core, 1, ())
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (*core, 0, ids)


def release_line(version: str) -> tuple[int, ...]:
    return tuple(semver_key(version)[:3])


def lockstep_version(target: str, published: list[str]) -> str | None:
    """The newest published version on ``target``'s release line not later than it."""
    line, key = release_line(target), semver_key(target)
    candidates = [v for v in published if _SEMVER.match(v) and release_line(v) == line and semver_key(v) <= key]
    return max(candidates, key=semver_key) if candidates else None


@dataclass
class PackageSet:
    """A resolved set: exact versions of the lockstep packages, ranges for the others, and
    the packages left out with the reason."""

    tools: str
    dependencies: dict[str, str] = field(default_factory=dict)
    absent: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"dshTools": self.tools, "absent": dict(self.absent)}


def resolve(version: str, pinned: Mapping[str, str], versions_of: Callable[[str], list[str]],
            manifest_of: Callable[[str, str], dict[str, Any]]) -> PackageSet:
    """The package set for ``dsh-tools`` ``version``. ``pinned`` is the adapter's own set
    (name -> version, for the release the adapter pins); ``versions_of(name)`` lists a
    package's published versions; ``manifest_of(name, version)`` is its package.json.
    Raises NotPublished when ``version`` is not a published dsh-tools version."""
    published = versions_of(TOOLS)
    if version not in published:
        raise NotPublished(version, sorted(published, key=semver_key))
    release = pinned[TOOLS]
    out = PackageSet(version)
    manifest = manifest_of(TOOLS, version)
    declared = {**(manifest.get("dependencies") or {}), **(manifest.get("peerDependencies") or {})}
    for name in sorted(pinned):
        if pinned[name] != release:  # not released in lockstep: the range dsh-tools declares
            if name in declared:
                out.dependencies[name] = declared[name]
            continue
        if name == TOOLS:
            out.dependencies[name] = version
            continue
        versions = versions_of(name)
        chosen = lockstep_version(version, versions)
        if chosen is None:
            line = ".".join(map(str, release_line(version)))
            out.absent[name] = (f"no release of the {line} line at or before {version} "
                                f"(published: {', '.join(sorted(versions, key=semver_key)) or 'none'})")
        else:
            out.dependencies[name] = chosen
    return out


_COMPARATOR = re.compile(r"^(\^|~|>=|<=|>|<|=)?v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?(-[0-9A-Za-z.-]+)?$")


def satisfies(version: str, spec: str) -> bool:
    """Whether ``version`` is in the npm range ``spec`` (as ``engines`` ranges are written:
    ``||`` of space-separated comparators ``^ ~ >= <= > < =`` and x-ranges; no hyphen ranges).
    Prerelease versions compare by precedence only."""
    key = semver_key(version)[:3]
    return any(all(_holds(key, c) for c in part.split()) for part in spec.split("||") if part.strip())


def _holds(key: tuple[Any, ...], comparator: str) -> bool:
    m = _COMPARATOR.match(comparator.strip())
    if m is None:
        raise ValueError(f"not an npm range comparator: {comparator!r}")
    op, parts = m.group(1) or "", [g for g in m.group(2, 3, 4)]
    given = [int(p) for p in parts if p is not None and p.isdigit()]
    wild = len(given) < 3
    low = tuple(given + [0] * (3 - len(given)))
    if op in ("", "=") and wild:
        return key[:len(given)] == tuple(given)
    if op in ("", "="):
        return key == low
    if op == "^":
        first = next((i for i, v in enumerate(given) if v != 0), len(given) - 1 if given else 0)
        high = list(given[:first + 1])
        high[-1] += 1
        return low <= key < tuple(high + [0] * (3 - len(high)))
    if op == "~":
        cut = given[:2] if len(given) >= 2 else given[:1]
        high = list(cut)
        high[-1] += 1
        return low <= key < tuple(high + [0] * (3 - len(high)))
    return {">=": key >= low, "<=": key <= low if not wild else key[:len(given)] <= tuple(given),
            ">": key > low if not wild else key[:len(given)] > tuple(given), "<": key < low}[op]


__all__ = ["NotPublished", "PackageSet", "TOOLS", "lockstep_version", "release_line", "resolve", "satisfies",
           "semver_key"]
