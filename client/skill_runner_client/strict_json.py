"""JSON as the standard has it: Python's json module also reads NaN, Infinity and -Infinity,
which are not JSON (the service's schemas and other parsers refuse them); here they do not parse,
so `-p text=NaN` stays the string it was typed as."""

from __future__ import annotations

import json
from typing import Any


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str | bytes) -> Any:
    """json.loads without NaN, Infinity and -Infinity: ValueError for them."""
    return json.loads(text, parse_constant=_refuse)
