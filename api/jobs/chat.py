"""The chat channel of Skill-Runner's clients (`/chat`, `/chat/history`): the run's FCMP events
as the messages a person reads (the assistant's messages and questions, the user's replies,
state changes and warnings), projected from the same events.jsonl and stream as `/events`;
tool traffic and raw output are left out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from runner_core.events import read_events


def chat_message(event: dict[str, Any]) -> dict[str, Any] | None:
    """One FCMP event as a chat message {seq, ts, role, kind, text, type}, or None when a
    person would not read it."""
    data = event.get("data") or {}
    kind_of = event.get("type")
    role, kind, text = "assistant", "assistant_message", None
    if kind_of == "assistant.message":
        text = data.get("text")
    elif kind_of == "assistant.message.final":
        kind, text = "assistant_final", data.get("text")
    elif kind_of == "user.input.required":
        text = data.get("prompt")
    elif kind_of == "tool.call":
        kind, text = "assistant_process", f"tool: {data.get('tool') or 'call'}"
    elif kind_of == "interaction.reply.accepted":
        response = data.get("response")
        role, kind = "user", "interaction_reply"
        text = response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)
    elif kind_of == "conversation.state.changed":
        role, kind = "system", "orchestration_notice"
        text = f"{data.get('from') or '-'} -> {data.get('to')}"
        error = (data.get("terminal") or {}).get("error") or {}
        if error:
            text += f": {error.get('code')} {error.get('message') or ''}".rstrip()
    elif kind_of in ("diagnostic.warning", "interaction.auto_decide.timeout"):
        role, kind = "system", "orchestration_notice"
        text = data.get("message") or kind_of
    if not text:
        return None
    return {
        "seq": event.get("seq"),
        "ts": event.get("ts"),
        "role": role,
        "kind": kind,
        "text": text,
        "type": kind_of,
        "attempt": (event.get("meta") or {}).get("attempt"),
    }


def chat_frames(frames: Iterator[str]) -> Iterator[str]:
    """The `/events` SSE frames as `/chat` sends them: snapshot and heartbeat as they are, each
    chat_event projected to its message (or left out)."""
    for frame in frames:
        if not frame.startswith("event: chat_event\n"):
            yield frame
            continue
        head, _, data = frame.rstrip("\n").rpartition("data: ")
        message = chat_message(json.loads(data))
        if message is not None:
            body = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
            yield f"{head}data: {body}\n\n"


def chat_history(run_dir_events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in map(chat_message, run_dir_events) if m is not None]


def history_bounds(run_dir: Any) -> tuple[int, int]:
    """(cursor_floor, cursor_ceiling): the first and last seq the run's events hold (0, 0: none)."""
    every = read_events(run_dir, after_seq=0)
    return (every[0]["seq"], every[-1]["seq"]) if every else (0, 0)
