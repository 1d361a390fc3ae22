"""Reading what an engine CLI printed: captured streams, JSON lines and JSON answers.
Shared by the adapters; each one knows its own event layout."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_output(path: Path) -> str:
    """A captured stream as text ('' when the file is missing)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects among `text`'s lines; other lines (warnings, banners) are skipped."""
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def json_of_text(text: str | None) -> Any:
    """`text` parsed as JSON when it is JSON as a whole (a ```json fence is allowed), else None."""
    if not text:
        return None
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        return json.loads(body)
    except ValueError:
        return None

