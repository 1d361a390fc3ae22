"""The output schema a request carries, wherever its CLI put it, and the model's sloppiness.

How each CLI sends a native output schema (observed on the wire):

- codex ``--output-schema``: Responses ``text.format = {type: "json_schema", strict, schema}``;
  the provider then decodes only text matching the schema.
- claude ``--json-schema``: a tool ``StructuredOutput`` whose ``input_schema`` is the schema;
  the CLI asks again once when the model answers text instead.
- qwen ``--json-schema``: a tool ``structured_output`` whose ``parameters`` are the schema; the
  CLI fails the turn when the model answers text instead.

Chat Completions ``response_format`` and Anthropic ``output_format`` json_schema are read too.
"""

from __future__ import annotations

import math
import threading
from typing import Any

SCHEMA_TOOLS: tuple[str, ...] = ("StructuredOutput", "structured_output")


def format_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The schema a request's response format enforces at decoding time (None: none)."""
    text_format = (body.get("text") or {}).get("format") or {}  # Responses
    if text_format.get("type") == "json_schema":
        return text_format.get("schema") or {}
    response_format = body.get("response_format") or {}  # Chat Completions
    if response_format.get("type") == "json_schema":
        return (response_format.get("json_schema") or {}).get("schema") or {}
    output_format = body.get("output_format") or {}  # Anthropic
    if output_format.get("type") == "json_schema":
        return output_format.get("schema") or {}
    return None


def schema_tool(tools: dict[str, dict[str, Any]]) -> str | None:
    """The name of the synthetic tool a CLI offers for the final structured answer."""
    return next((name for name in SCHEMA_TOOLS if name in tools), None)


def schema_accepted(result_text: str, is_error: bool) -> bool:
    """True when a schema tool's result says the CLI took the answer ("Structured output
    provided successfully" / "accepted"); a rejected one is answered again."""
    return not is_error and "structured output" in result_text.lower()


def sent_schema(body: Any) -> dict[str, Any] | None:
    """The output schema a recorded request body carries (response format, else the schema
    tool's arguments schema); None when it carries none."""
    if not isinstance(body, dict):
        return None
    found = format_schema(body)
    if found is not None:
        return found
    for tool in body.get("tools") or []:
        fn = tool.get("function") or {}
        name = tool.get("name") or fn.get("name")
        if name in SCHEMA_TOOLS:
            return tool.get("input_schema") or fn.get("parameters") or tool.get("parameters")
    return None


class OffSchemaDraws:
    """Which final answers go off schema at a rate: the k-th (from 0) does when
    floor((k+1) * rate) > floor(k * rate), so any N answers hold floor(N * rate) of them,
    evenly spread, the same on every run. One per server, shared by its requests."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def next_is_off(self, rate: float) -> bool:
        """Draw for the next final answer."""
        with self._lock:
            k = self.count
            self.count += 1
        return math.floor(round((k + 1) * rate, 9)) > math.floor(round(k * rate, 9))
