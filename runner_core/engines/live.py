"""The engine CLIs' own streamed events, translated into FCMP events as they are printed:
agent messages and tool calls, per output line (codex --json, claude/qwen stream-json, gemini
stream-json, opencode and kilo --format json). A line that is not one of them translates to nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Translated = list[tuple[str, dict[str, Any]]]
TEXT_CAP = 4000  # characters of a message or a tool's output carried in an event


def _cap(text: Any) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    return text if len(text) <= TEXT_CAP else text[:TEXT_CAP] + "…"


def codex(event: dict[str, Any]) -> Translated:
    item = event.get("item") or {}
    kind, typ = item.get("type"), event.get("type")
    if kind == "agent_message" and typ == "item.completed":
        return [("assistant.message", {"text": _cap(item.get("text", ""))})]
    if kind == "command_execution" and typ == "item.started":
        return [("tool.call", {"tool": "shell", "input": _cap(item.get("command", ""))})]
    if kind == "command_execution" and typ == "item.completed":
        data = {"tool": "shell", "exit_code": item.get("exit_code")}
        return [("tool.result", {**data, "output": _cap(item.get("aggregated_output", ""))})]
    return []


def claude_like(event: dict[str, Any]) -> Translated:
    """claude and qwen stream-json: assistant content blocks and user tool results."""
    message = event.get("message") or {}
    out: Translated = []
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        if event.get("type") == "assistant" and block.get("type") == "text":
            out.append(("assistant.message", {"text": _cap(block.get("text", ""))}))
        elif event.get("type") == "assistant" and block.get("type") == "tool_use":
            out.append(
                ("tool.call", {"tool": block.get("name"), "input": _cap(block.get("input", {}))})
            )
        elif event.get("type") == "user" and block.get("type") == "tool_result":
            out.append(("tool.result", {"output": _cap(block.get("content", ""))}))
    return out


def gemini(event: dict[str, Any]) -> Translated:
    typ = event.get("type")
    if typ == "message" and event.get("role") == "assistant" and not event.get("delta"):
        return [("assistant.message", {"text": _cap(event.get("content", ""))})]
    if typ == "tool_use":
        data = {"tool": event.get("tool_name"), "input": _cap(event.get("parameters", {}))}
        return [("tool.call", data)]
    if typ == "tool_result":
        return [
            (
                "tool.result",
                {"status": event.get("status"), "output": _cap(event.get("output", ""))},
            )
        ]
    return []


def opencode(event: dict[str, Any]) -> Translated:
    part = event.get("part") or {}
    typ = event.get("type")
    if typ == "text" and part.get("text"):
        return [("assistant.message", {"text": _cap(part["text"])})]
    if typ == "tool_use":
        state = part.get("state") or {}
        call = {"tool": part.get("tool"), "input": _cap(state.get("input", {}))}
        result = {"tool": part.get("tool"), "output": _cap(state.get("output", ""))}
        return [("tool.call", call), ("tool.result", result)]
    return []


TRANSLATORS: dict[str, Callable[[dict[str, Any]], Translated]] = {
    "codex": codex,
    "claude": claude_like,
    "qwen": claude_like,
    "gemini": gemini,
    "opencode": opencode,
    "kilo": opencode,  # an opencode fork: the same events
}


def translate_line(engine: str | None, line: str) -> Translated:
    """The FCMP events one printed line stands for ([] for anything else)."""
    translate = TRANSLATORS.get(engine or "")
    line = line.strip()
    if translate is None or not line.startswith("{"):
        return []
    try:
        event = json.loads(line)
    except ValueError:
        return []
    return translate(event) if isinstance(event, dict) else []
