"""Find the JSON value in an engine's output text (the first step of the output chain).

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


def _integer(text: str) -> int | float:
    """An integer of more digits than Python converts (4300) is taken as out of range, an
    infinity that validation reports as no JSON number, rather than a crash of the run."""
    try:
        return int(text)
    except ValueError:
        return float(text)


_DECODER = json.JSONDecoder(parse_int=_integer)  # for values inside a text
_WHOLE = json.JSONDecoder(parse_int=_integer)  # for a text that is one value


def loads(text: str) -> Any:
    """json.loads with the integers above."""
    return _WHOLE.decode(text)


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
        found = decode_at(text, match.start())
        if found is None:
            pos = match.start() + 1
            continue
        value, pos = found
        yield value


# Windows of text a candidate is decoded in first. A decode that fails reports its position
# as a line and column counted from the start of the string it was given (JSONDecodeError),
# so failing candidates decoded in place cost O(their offset) each, quadratic over a long log
# with brackets on every line. In a window they cost
# O(window), and a value that does not fit (or may not) is decoded again in a larger one.
_WINDOWS = (4096, 65536, 1 << 20)
_MARGIN = 16  # a literal or an escape cut by the window's end fails within this of the end


def decode_at(text: str, start: int) -> tuple[Any, int] | None:
    """The JSON value that starts at `start` of `text` and the offset after it, or None."""
    for size in _WINDOWS:
        if start + size >= len(text):
            break
        window = text[start : start + size]
        try:
            value, used = _DECODER.raw_decode(window)
        except RecursionError:  # nested deeper than the decoder goes: not a value we can use
            return None
        except json.JSONDecodeError as exc:
            if exc.pos < size - _MARGIN and not exc.msg.startswith("Unterminated string"):
                return None  # failed inside the window: the whole text fails there too
            continue
        return value, start + used  # an object or array ends at its own closing bracket
    try:
        value, used = _DECODER.raw_decode(text[start:] if start else text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value, start + used


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
            yield Extracted(loads(source), how)
            continue
        except (json.JSONDecodeError, RecursionError):  # too deep is not a value either
            pass
        for value in iter_json_values(source):
            yield Extracted(value, "embedded")


def extract_json(text: str) -> Extracted | None:
    """Return the first JSON value in `text` (see `iter_extracted`), or None."""
    return next(iter_extracted(text), None)
