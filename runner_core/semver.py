"""Semantic versions (semver.org): the one check and ordering of a skill's and an engine's
version, so a skill.json, a runner.json and an engine upgrade accept the same strings."""

from __future__ import annotations

import re

MAX_VERSION_CHARS = 64  # the database's version columns
# semver.org's own expression: digits and dots, an optional -pre-release and +build of
# [0-9A-Za-z-] parts; nothing npm could read as a path, URL, tag range or flag
SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


def is_semver(text: object) -> bool:
    """True for a string such as 1.2.0, 1.2.0-rc.1 or 1.2.0+build.5 (at most 64 characters)."""
    return isinstance(text, str) and len(text) <= MAX_VERSION_CHARS and bool(SEMVER.fullmatch(text))


def semver_key(text: str | None) -> tuple[tuple[int, int, int], tuple] | None:
    """A key ordering versions by semver precedence (the build is ignored), or None when `text`
    is no semver."""
    match = SEMVER.fullmatch(text or "")
    if match is None:
        return None
    core = (int(match[1]), int(match[2]), int(match[3]))
    if match[4] is None:
        return core, (1,)  # a release ranks above its pre-releases
    # numeric identifiers rank below alphanumeric ones; a shorter prefix ranks lower
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in match[4].split("."))
    return core, (0, parts)
