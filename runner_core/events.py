"""A run's FCMP event log: `events.jsonl` in its directory, in order, one envelope per line.

The file is the truth; Redis pub/sub (runner_core.event_bus) only tells live readers that a new
line exists. Every append takes the file's lock and numbers the event after the last line on
disk, so the worker running a turn and the API (a reply, a cancel) never reuse a seq, across
turns and restarts alike.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner_core.secret_values import redact

PROTOCOL_VERSION = "fcmp/1.0"
EVENTS_FILE = "events.jsonl"
STATE_CHANGED = "conversation.state.changed"
TAIL_BYTES = 64 * 1024  # the last line of the file is found within this much of its end

Publish = Callable[[str, str], None]  # (run_id, the event's JSON line)


@dataclass(frozen=True)
class RunRef:
    """Who the events are about (the envelope's fixed fields)."""

    run_id: str
    request_id: str
    engine: str | None
    attempt: int = 0


class EventLog:
    """Appends events to one run's events.jsonl and announces each one."""

    def __init__(
        self, run_dir: Path, ref: RunRef, publish: Publish | None = None, enabled: bool = True
    ) -> None:
        self.path = Path(run_dir) / EVENTS_FILE
        self.ref, self.publish, self.enabled = ref, publish, enabled

    def emit(self, type_: str, data: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Append one event; None when the run has no directory (nothing to write into) or
        events are off."""
        if not self.enabled or not self.path.parent.is_dir():
            return None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            event = {
                "protocol_version": PROTOCOL_VERSION,
                "run_id": self.ref.run_id,
                "request_id": self.ref.request_id,
                "seq": _last_seq(fd) + 1,
                "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "engine": self.ref.engine,
                "type": type_,
                "data": data or {},
                "meta": {"attempt": self.ref.attempt},
            }
            line = redact(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)  # releases the lock
        if self.publish is not None:
            self.publish(self.ref.run_id, line)
        return event

    def state_changed(
        self,
        from_: str | None,
        to: str,
        trigger: str,
        pending_interaction_id: int | None = None,
        error: dict[str, Any] | None = None,
        terminal: bool = False,
    ) -> dict[str, Any] | None:
        data: dict[str, Any] = {
            "from": from_,
            "to": to,
            "trigger": trigger,
            "updated_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "pending_interaction_id": pending_interaction_id,
        }
        if terminal:
            data["terminal"] = {"status": to, "error": error}
        return self.emit(STATE_CHANGED, data)


def _last_seq(fd: int) -> int:
    size = os.fstat(fd).st_size
    if size == 0:
        return 0
    start = max(0, size - TAIL_BYTES)
    tail = os.pread(fd, size - start, start).decode("utf-8", errors="replace")
    for line in reversed(tail.splitlines()):
        try:
            return int(json.loads(line)["seq"])
        except (ValueError, KeyError, TypeError):
            continue  # a line cut by the window, or damaged: look further back
    return 0


def read_events(
    run_dir: Path,
    after_seq: int = 0,
    to_seq: int | None = None,
    from_ts: str | None = None,
    to_ts: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The stored events with `after_seq` < seq (<= to_seq), within [from_ts, to_ts]."""
    found = []
    for event in iter_events(Path(run_dir) / EVENTS_FILE):
        seq = event.get("seq", 0)
        if seq <= after_seq or (to_seq is not None and seq > to_seq):
            continue
        ts = str(event.get("ts", ""))
        if (from_ts and ts < from_ts) or (to_ts and ts > to_ts):
            continue
        found.append(event)
        if limit is not None and len(found) >= limit:
            break
    return found


def iter_events(path: Path) -> Iterator[dict[str, Any]]:
    """Every whole event line of a file (a line still being written is left for later)."""
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    return
                try:
                    yield json.loads(raw)
                except ValueError:
                    continue
    except FileNotFoundError:
        return


def is_terminal(event: dict[str, Any]) -> bool:
    return event.get("type") == STATE_CHANGED and "terminal" in (event.get("data") or {})
