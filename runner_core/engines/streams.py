"""Reading what an engine CLI printed: captured streams, JSON lines, JSON answers and token
counts. Shared by the adapters; each one knows its own event layout."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard


def read_output(path: Path, start: int = 0) -> str:
    """A captured stream as text from byte `start` ('' when the file is missing)."""
    try:
        with Path(path).open("rb") as fh:
            fh.seek(start)
            return fh.read().decode("utf-8", errors="replace")
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


def token_counts(
    usage: Mapping[str, Any] | None,
    input_key: str = "input_tokens",
    output_key: str = "output_tokens",
) -> dict[str, int] | None:
    """``{"input_tokens": N, "output_tokens": M}`` from a CLI's own usage record, counted as
    the CLI counts them; None when it reports neither."""
    if not isinstance(usage, Mapping):
        return None
    counts = {
        name: usage.get(key)
        for name, key in (("input_tokens", input_key), ("output_tokens", output_key))
    }
    if not any(_is_count(value) for value in counts.values()):
        return None
    return {name: int(value) if _is_count(value) else 0 for name, value in counts.items()}


def _is_count(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
