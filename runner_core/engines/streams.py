"""Reading what an engine CLI printed: captured streams, JSON lines, JSON answers and token
counts. Shared by the adapters; each one knows its own event layout."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class UsageKeys:
    """Where a CLI's usage record keeps each count. Normalized, input counts cached input and
    output counts reasoning (OpenAI's convention): a CLI that reports them beside each other
    lists several keys to add up."""

    input: tuple[str, ...] = ("input_tokens",)
    output: tuple[str, ...] = ("output_tokens",)
    cached: str | None = None
    reasoning: str | None = None
    cost: str | None = None  # USD, where the CLI prices the run itself


def token_counts(
    usage: Mapping[str, Any] | None, keys: UsageKeys = UsageKeys()
) -> dict[str, Any] | None:
    """``{input_tokens, output_tokens[, cached_input_tokens, reasoning_tokens, cost_usd]}``
    from a CLI's own usage record; None when it reports neither input nor output."""
    if not isinstance(usage, Mapping):
        return None
    if not any(_is_count(usage.get(key)) for key in (*keys.input, *keys.output)):
        return None
    counts: dict[str, Any] = {
        "input_tokens": sum(_count(usage.get(key)) for key in keys.input),
        "output_tokens": sum(_count(usage.get(key)) for key in keys.output),
    }
    for name, key in (("cached_input_tokens", keys.cached), ("reasoning_tokens", keys.reasoning)):
        if key is not None and _is_count(usage.get(key)):
            counts[name] = _count(usage.get(key))
    if keys.cost is not None and _is_count(usage.get(keys.cost)):
        counts["cost_usd"] = round(float(usage[keys.cost]), 6)
    return counts


def _count(value: Any) -> int:
    return int(value) if _is_count(value) else 0


def _is_count(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
