"""Find the JSON value in an engine's output text (spec S1).

Agents wrap their JSON in Markdown fences and prose. We look inside JSON-tagged (or untagged)
fenced blocks first, then at the whole text, and otherwise take the first object or array that
`json.JSONDecoder.raw_decode` accepts, so braces inside JSON strings never confuse the scan.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_DECODER = json.JSONDecoder()
_OPENER = re.compile(r"[\[{]")
# A fence runs from a ``` line to the next ``` line; an unclosed fence (truncated output) runs
# to the end of the text.
_FENCED_BLOCK = re.compile(
    r"^[ \t]*```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
_FENCE_LINE = re.compile(r"^[ \t]*```[\w+.-]*[ \t]*$\n?", re.MULTILINE)
_JSON_FENCE_LANGS = frozenset({"", "json", "jsonc", "json5"})


@dataclass(frozen=True)
class Extracted:
    """One JSON value found in a text, and how it was found."""

    value: Any
    how: str  # "fenced_block" | "whole_text" | "embedded"


def strip_fences(text: str) -> str:
    """Remove Markdown code-fence markers and trim; everything between them is kept."""
    text = _FENCE_LINE.sub("", text).strip()
    # A fence on the same line as the JSON (```json {"a": 1}```) has no fence line to remove.
    if text.startswith("```"):
        text = re.sub(r"^```[\w+.-]*", "", text, count=1)
    if text.endswith("```"):
        text = text[:-3]
    return text.strip()


def fenced_blocks(text: str) -> list[str]:
    """Return the trimmed contents of fenced blocks tagged as JSON or untagged, in order."""
    return [
        match.group(2).strip()
        for match in _FENCED_BLOCK.finditer(text)
        if match.group(1).lower() in _JSON_FENCE_LANGS
    ]


def iter_json_values(text: str) -> Iterator[Any]:
    """Yield each top-level JSON object or array embedded in `text`, left to right."""
    pos = 0
    while match := _OPENER.search(text, pos):
        try:
            value, end = _DECODER.raw_decode(text, match.start())
        except json.JSONDecodeError:
            pos = match.start() + 1
            continue
        yield value
        pos = end


def iter_extracted(text: str) -> Iterator[Extracted]:
    """Yield every JSON value candidate in `text`, the most likely first.

    Fenced JSON blocks come before the unfenced text, so a ```python block's lists never win
    over the ```json block that follows. A text (or block) that is JSON as a whole yields that
    value, which may be a scalar such as a double-encoded string.
    """
    sources = [(block, "fenced_block") for block in fenced_blocks(text)]
    sources.append((strip_fences(text), "whole_text"))
    for source, how in sources:
        try:
            yield Extracted(json.loads(source), how)
            continue
        except json.JSONDecodeError:
            pass
        for value in iter_json_values(source):
            yield Extracted(value, "embedded")


def extract_json(text: str) -> Extracted | None:
    """Return the first JSON value in `text` (see `iter_extracted`), or None."""
    return next(iter_extracted(text), None)
