"""Reading a skill's own files (SKILL.md, runner.json, the schemas, skill.json): whatever is
wrong with one (unreadable, not UTF-8, not JSON, nested too deeply) is one message naming the
file, never an exception the loader lets through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# How deep a skill's JSON may nest (objects and arrays). Checking and validating a schema
# recurse about 8 Python frames per level: 64 levels stay well inside the interpreter's limit.
MAX_JSON_DEPTH = 64
# How large a file the loader reads may be: a schema of 50 MB of `{},` takes over 1 GB once
# parsed, and a package (256 MiB, compressed 200 times) would hold five of them.
MAX_FILE_BYTES = 8 * 1024 * 1024


class SkillFileError(ValueError):
    """A skill file that cannot be used; the message names the file and the problem."""


def read_text(path: Path, rel: str) -> str:
    """The UTF-8 text of `path` (`rel` names it in the message)."""
    try:
        with path.open("rb") as src:
            data = src.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SkillFileError(f"{rel}: cannot be read ({exc.strerror or exc})") from exc
    if len(data) > MAX_FILE_BYTES:
        raise SkillFileError(f"{rel}: larger than the {MAX_FILE_BYTES} bytes a skill file may hold")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillFileError(
            f"{rel}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from exc


def read_json(path: Path, rel: str) -> Any:
    """The JSON value in `path`, nested at most MAX_JSON_DEPTH levels."""
    text = read_text(path, rel)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SkillFileError(f"{rel}: invalid JSON ({exc})") from exc
    except RecursionError as exc:  # deeper than the decoder goes
        raise SkillFileError(too_deep(rel)) from exc
    if json_depth(value) > MAX_JSON_DEPTH:
        raise SkillFileError(too_deep(rel))
    return value


def too_deep(rel: str) -> str:
    return f"{rel}: nested deeper than {MAX_JSON_DEPTH} levels"


def json_depth(value: Any) -> int:
    """How many objects and arrays deep `value` nests (a scalar is 0); without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            break  # deep enough to refuse: no need to walk the rest
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return deepest
