"""The token counts a CLI writes to its session log in the run's HOME after each model answer,
for a turn cut short (a timeout, a cancel, a kill, a crash) before the CLI printed its own total.

Each reader takes the CLI's HOME and the session its stdout named, and returns the usage of the
current invocation only (a resumed turn appends to the same log), {} when there is no log.
Symlinks are not followed: the run's folder is the agent's to write in.

- codex: ``sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``; each answer adds an
  ``event_msg`` ``token_count`` with the thread's running ``total_token_usage``; a turn starts
  with ``turn_context`` (and ``task_started``).
- claude: ``.claude/projects/<cwd>/<session id>.jsonl``; each ``assistant`` entry holds its
  message's final ``usage`` (stdout's stream events carry the counts as the answer started).
- gemini: ``.gemini/tmp/<project>/chats/session-<time>-<id prefix>.jsonl``; each ``gemini``
  message holds its ``tokens``, written again as the message grows (the last entry counts).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from runner_core.engines.streams import json_lines, read_output

_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def codex_turn_usage(home: Path, thread_id: str | None) -> dict[str, Any]:
    """The last turn's usage in codex's rollout of `thread_id`: the running total at its last
    answer less the total when the turn began."""
    before, total = _codex_totals(home, thread_id)
    return less(total, before)


def codex_total_before_turn(home: Path, thread_id: str | None) -> dict[str, Any]:
    """The thread's running total when its last turn began ({} for a first turn): what codex's
    `turn.completed` usage, the thread's total, holds of earlier turns."""
    return dict(_codex_totals(home, thread_id)[0])


def less(total: Mapping[str, Any], before: Mapping[str, Any]) -> dict[str, Any]:
    """`total`'s counts less `before`'s (a count `before` lacks is kept whole)."""
    return {
        key: value - before.get(key, 0)
        for key, value in total.items()
        if isinstance(value, int) and isinstance(before.get(key, 0), int)
    }


def _codex_totals(home: Path, thread_id: str | None) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(the running total when the last turn began, the running total at its last answer)."""
    log = _one_log(home / "sessions", f"rollout-*-{thread_id}.jsonl", thread_id)
    before: Mapping[str, Any] = {}
    total: Mapping[str, Any] = {}
    for entry in _entries(log):
        payload = entry.get("payload") or {}
        kind = payload.get("type") if isinstance(payload, dict) else None
        if entry.get("type") == "turn_context" or kind == "task_started":
            before = total
        elif kind == "token_count":
            info = payload.get("info") or {}
            total = info.get("total_token_usage") or total
    return before, total


def claude_message_usage(home: Path, session_id: str | None) -> dict[str, dict[str, Any]]:
    """message id -> its final usage, from claude's session log of `session_id`."""
    log = _one_log(home / ".claude" / "projects", f"*/{session_id}.jsonl", session_id)
    usage: dict[str, dict[str, Any]] = {}
    for entry in _entries(log):
        message = entry.get("message") or {}
        if entry.get("type") == "assistant" and isinstance(message, dict) and message.get("id"):
            if isinstance(message.get("usage"), dict):
                usage[str(message["id"])] = message["usage"]
    return usage


def gemini_usage(home: Path, session_id: str | None, since: str) -> dict[str, int]:
    """The model's tokens in gemini's chat log of `session_id`, of the messages written at or
    after `since` (the ISO time this invocation started)."""
    if not session_id or not _SESSION_ID.match(session_id):
        return {}
    pattern = f"*/chats/session-*-{session_id[:8]}.jsonl"
    tokens: dict[str, Mapping[str, Any]] = {}
    for log in _logs(home / ".gemini" / "tmp", pattern):
        entries = list(_entries(log))
        if not entries or entries[0].get("sessionId") != session_id:
            continue
        for message in _gemini_messages(entries):
            if str(message.get("timestamp", "")) >= since and message.get("id"):
                tokens[str(message["id"])] = message["tokens"]
    if not tokens:
        return {}
    # named as in gemini's stats, so one reading serves both (gemini.gemini_tokens)
    names = {
        "input": "input_tokens",
        "output": "output_tokens",
        "cached": "cached",
        "total": "total_tokens",
    }
    return {name: sum(_count(t.get(key)) for t in tokens.values()) for key, name in names.items()}


def _gemini_messages(entries: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The model's messages that carry tokens: logged one a line, or a whole list in `$set`."""
    for entry in entries:
        listed = (entry.get("$set") or {}).get("messages")
        for message in listed if isinstance(listed, list) else [entry]:
            if (
                isinstance(message, dict)
                and message.get("type") == "gemini"
                and isinstance(message.get("tokens"), dict)
            ):
                yield message


def _one_log(folder: Path, pattern: str, session_id: str | None) -> Path | None:
    """The one log `pattern` names for a well-formed `session_id` (the newest if several)."""
    if not session_id or not _SESSION_ID.match(session_id):
        return None
    logs = _logs(folder, pattern)
    return logs[-1] if logs else None


def _logs(folder: Path, pattern: str) -> list[Path]:
    """Regular files under `folder` matching `pattern` (any depth for codex's dated folders),
    oldest first, none reached through a symlink."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    found = [
        path
        for path in folder.rglob(pattern.rsplit("/", 1)[-1])
        if path.match(pattern) and path.is_file() and not _linked(path, folder)
    ]
    return sorted(found, key=lambda path: path.stat().st_mtime_ns)


def _linked(path: Path, root: Path) -> bool:
    """True when `path` or a folder between it and `root` is a symlink."""
    while path != root:
        if path.is_symlink():
            return True
        path = path.parent
    return False


def _entries(log: Path | None) -> Iterator[dict[str, Any]]:
    if log is None:
        return iter(())
    return iter(json_lines(read_output(log)))


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
