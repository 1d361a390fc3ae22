"""N0 deterministic repair: syntax-only fixes that never guess what a field means."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from runner_core.output.parse import loads, strip_fences

BOM = "\ufeff"
_MAX_DECODE_DEPTH = 3  # "{\"a\": 1}" wrapped again is still plainly mechanical; deeper is noise

FIX_BOM = "stripped_bom"
FIX_FENCE = "stripped_code_fence"
FIX_TRAILING_COMMA = "removed_trailing_commas"
FIX_DOUBLE_ENCODED = "decoded_double_encoded_json"
FIX_LATER_VALUE = "skipped_earlier_json_values"


@dataclass(frozen=True)
class RepairedText:
    """A text after the N0 text fixes, with the names of the fixes that changed it."""

    text: str
    fixes: list[str] = field(default_factory=list)


def remove_trailing_commas(text: str) -> str:
    """Drop commas that directly precede `}` or `]`, leaving string contents untouched."""
    out: list[str] = []
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "," and _next_significant(text, index + 1) in ("}", "]"):
            continue
        out.append(char)
    return "".join(out)


def _next_significant(text: str, start: int) -> str:
    for char in text[start:]:
        if not char.isspace():
            return char
    return ""


def repair_text(text: str) -> RepairedText:
    """Apply the N0 text fixes: strip a leading BOM and code fences, trim, drop trailing commas."""
    fixes: list[str] = []
    trimmed = text.strip()
    if trimmed.startswith(BOM):
        trimmed = trimmed[len(BOM) :].strip()
        fixes.append(FIX_BOM)
    unfenced = strip_fences(trimmed)
    if unfenced != trimmed:
        fixes.append(FIX_FENCE)
    without_commas = remove_trailing_commas(unfenced)
    if without_commas != unfenced:
        fixes.append(FIX_TRAILING_COMMA)
    return RepairedText(without_commas, fixes)


def decode_nested_json(value: Any) -> Any | None:
    """Return the object or array that a JSON string value encodes, or None if it encodes none.

    Agents sometimes print `json.dumps(json.dumps(obj))`; the outer layer is pure syntax.
    """
    decoded = value
    for _ in range(_MAX_DECODE_DEPTH):
        if not isinstance(decoded, str):
            break
        inner = strip_fences(decoded.strip().removeprefix(BOM))
        try:
            decoded = loads(remove_trailing_commas(inner))
        except (json.JSONDecodeError, RecursionError):
            return None
    return decoded if isinstance(decoded, (dict, list)) and decoded is not value else None
