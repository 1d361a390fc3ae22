"""Claude Code's ``stream-json`` output, which Qwen Code prints too.

Events: ``system{subtype:init, session_id}``, ``assistant{message.content[text|tool_use]}``,
``user{message.content[tool_result]}`` and a final ``result{subtype, is_error, result,
session_id, usage}`` (with ``structured_output`` / ``structured_result`` under
``--json-schema``, which is then the answer). Resumed turns append to the same log, so only the events from the last
``init`` on are read. Each CLI types its own errors from what is collected here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# where a result event holds the --json-schema answer: claude, qwen
STRUCTURED_KEYS = ("structured_output", "structured_result")

# A tool_result block -> the fields it adds to its tool call (each CLI's own names).
ToolResultFields = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Stream:
    """The last invocation of a Claude-style stream, collected."""

    events: list[dict[str, Any]]
    init: dict[str, Any] = field(default_factory=dict)  # the ``system/init`` event
    result: dict[str, Any] | None = None  # the final ``result`` event
    session_id: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    # the result's structured answer as JSON, else its text, else the last assistant text
    text: str | None = None

    @property
    def usage(self) -> dict[str, Any]:
        """The ``result`` event's usage ({} without one)."""
        return dict((self.result or {}).get("usage") or {})

    def message_usage(self, final: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """The usage of the invocation's answers added up, for a stream cut short before its
        ``result``: one count per message id (a message split over several events repeats its
        usage). `final`: message id -> the usage logged once that message was done, preferred
        to the stream's (claude streams the counts as the answer started)."""
        by_id: dict[str, Mapping[str, Any]] = {}
        for event in self.events:
            message = event.get("message") or {}
            if event.get("type") == "assistant" and isinstance(message.get("usage"), dict):
                key = str(message.get("id") or len(by_id))
                by_id[key] = (final or {}).get(key) or message["usage"]
        total: dict[str, Any] = {}
        for usage in by_id.values():
            for name, value in usage.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    total[name] = total.get(name, 0) + value
        return total


def read_stream(events: list[dict[str, Any]], tool_result: ToolResultFields) -> Stream:
    """Collect session, tool calls, answer text and the result event of the last invocation."""
    stream = Stream(events=last_invocation(events))
    calls: dict[str, dict[str, Any]] = {}
    last_text: str | None = None
    for event in stream.events:
        kind = event.get("type")
        stream.session_id = event.get("session_id") or stream.session_id
        if kind == "system" and event.get("subtype") == "init":
            stream.init = event
        elif kind == "assistant":
            last_text = _collect_assistant(event, calls) or last_text
        elif kind == "user":
            _collect_results(event, calls, tool_result)
        elif kind == "result":
            stream.result = event
    stream.tool_calls = list(calls.values())
    result = stream.result or {}
    answer = result.get("result")
    stream.text = answer if isinstance(answer, str) else last_text
    for key in STRUCTURED_KEYS:  # the answer the CLI's --json-schema tool accepted
        if result.get(key) is not None:
            stream.text = json.dumps(result[key], ensure_ascii=False)
            break
    return stream


def last_invocation(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events from the last ``system/init`` on (all of them when there is none)."""
    starts = [
        i for i, e in enumerate(events) if e.get("type") == "system" and e.get("subtype") == "init"
    ]
    return events[starts[-1] :] if starts else events


def _collect_assistant(event: dict[str, Any], calls: dict[str, dict[str, Any]]) -> str | None:
    """Record tool_use blocks; return the message's text, if any."""
    texts: list[str] = []
    for block in (event.get("message") or {}).get("content") or []:
        if block.get("type") == "tool_use":
            calls[block.get("id", str(len(calls)))] = {
                "id": block.get("id"),
                "name": block.get("name"),
                "input": block.get("input"),
            }
        elif block.get("type") == "text":
            texts.append(block.get("text", ""))
    return "".join(texts) or None


def _collect_results(
    event: dict[str, Any], calls: dict[str, dict[str, Any]], tool_result: ToolResultFields
) -> None:
    content = (event.get("message") or {}).get("content")
    for block in content if isinstance(content, list) else []:
        call = calls.get(block.get("tool_use_id", ""))
        if block.get("type") == "tool_result" and call is not None:
            call.update(tool_result(block))
