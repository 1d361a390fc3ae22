"""The chat channel of Skill-Runner's clients (`/chat`, `/chat/history`): the run's FCMP events
as the messages a person reads (the assistant's messages and questions, the user's replies,
state changes and warnings), projected from the same events.jsonl and stream as `/events`;
tool traffic and raw output are left out."""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from typing import Any

from runner_core.events import STATE_CHANGED, first_seq, last_seq
from runner_core.interaction import without_question
from runner_core.statuses import RunStatus

CLIENT_TYPES = {"user.input.required": "interaction.pending.created"}


def chat_message(event: dict[str, Any]) -> dict[str, Any] | None:
    """One FCMP event as a chat message {seq, ts, role, kind, text, type}, or None when a
    person would not read it."""
    data = event.get("data") or {}
    kind_of = event.get("type")
    role, kind, text = "assistant", "assistant_message", None
    if kind_of == "assistant.message":
        text = _readable(data.get("text"))
    elif kind_of == "assistant.message.final":
        kind, text = "assistant_final", _readable(data.get("text"))
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
        # Skill-Runner's names: the plugin refreshes its pending question on interaction.*
        "type": CLIENT_TYPES.get(str(kind_of), kind_of),
        "fcmp_type": kind_of,
        "attempt": (event.get("meta") or {}).get("attempt"),
    }


def _readable(text: Any) -> str | None:
    """An assistant message as Skill-Runner's chat shows it (its display text): without the
    `<ASK_USER_YAML>` block of a question, which the chat shows as the question's own message;
    None when nothing else is left."""
    return (without_question(text) or None) if isinstance(text, str) else None


def chat_frames(frames: Iterator[str]) -> Iterator[str]:
    """The `/events` SSE frames as `/chat` sends them: snapshot and heartbeat as they are, each
    chat_event projected to its message (or left out). While the run waits for a reply the
    stream ends at its next heartbeat, as Skill-Runner's does: its clients then reconnect from
    their cursor and read the run's state and pending question (a finished run's replay goes
    on past its earlier questions)."""
    waiting = False
    try:
        for frame in frames:
            if frame.startswith("event: heartbeat\n"):
                yield frame
                if waiting:
                    return
                continue
            if not frame.startswith("event: chat_event\n"):
                yield frame
                continue
            # the frame's own data field: the first at a line start (the event's JSON may
            # hold "data: " in its text, never a raw newline)
            head, _, data = frame.rstrip("\n").partition("\ndata: ")
            event = json.loads(data)
            message = chat_message(event)
            if message is not None:
                body = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
                yield f"{head}\ndata: {body}\n\n"
            waiting = (
                event.get("type") == STATE_CHANGED
                and (event.get("data") or {}).get("to") == RunStatus.WAITING_USER
            )
    finally:
        if isinstance(frames, Generator):
            frames.close()  # stops following the run's events


def chat_history(run_dir_events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in map(chat_message, run_dir_events) if m is not None]


def history_bounds(run_dir: Any) -> tuple[int, int]:
    """(cursor_floor, cursor_ceiling): the first and last seq the run's events hold (0, 0: none)."""
    return first_seq(run_dir), last_seq(run_dir)  # the file's head and tail, not all of it
