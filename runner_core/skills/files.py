"""Reading a skill's own files (SKILL.md, runner.json, the schemas, skill.json): whatever is
wrong with one (unreadable, not UTF-8, not JSON) is one message naming the file, never an
exception the loader lets through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class SkillFileError(ValueError):
    """A skill file that cannot be used; the message names the file and the problem."""


def read_text(path: Path, rel: str) -> str:
    """The UTF-8 text of `path` (`rel` names it in the message)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SkillFileError(f"{rel}: cannot be read ({exc.strerror or exc})") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillFileError(
            f"{rel}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from exc


def read_json(path: Path, rel: str) -> Any:
    """The JSON value in `path`."""
    text = read_text(path, rel)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SkillFileError(f"{rel}: invalid JSON ({exc})") from exc
