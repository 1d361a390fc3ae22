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
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

from runner_core.bounded_cache import BoundedCache
from runner_core.secret_values import redact
from runner_core.workspace import create_run_dir, open_own, open_run_file

PROTOCOL_VERSION = "fcmp/1.0"
EVENTS_FILE = "events.jsonl"
STATE_CHANGED = "conversation.state.changed"
TAIL_BYTES = 64 * 1024  # the last line of the file is found within this much of its end
# an events file as this process left it (device, inode, size, mtime) -> its last seq: the
# next write of the same run reads no tail (a file another writer grew is read again)
_seq_after: BoundedCache[tuple[int, int, int, int], int] = BoundedCache(256)
# The envelope's seq, written before its data: a line outside a seq range is skipped unparsed.
_SEQ = re.compile(
    rb'^\{"protocol_version":"[^"]*","run_id":"[^"]*","request_id":"[^"]*","seq":(\d+),'
)

Publish = Callable[[str, list[str]], None]  # (run_id, event JSON lines in order)


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

    def emit(
        self,
        type_: str,
        data: dict[str, Any] | None = None,
        before_end: bool = False,
        once: Once | None = None,
    ) -> dict[str, Any] | None:
        """Append one event; None when the run has no directory (nothing to write into) or
        events are off, or, with `before_end`, when the log already ends with the run's
        terminal event, or, with `once`, when the log already has its like."""
        events = self.emit_many([(type_, data)], before_end, once)
        return events[0] if events else None

    def emit_many(
        self,
        items: Sequence[tuple[str, dict[str, Any] | None]],
        before_end: bool = False,
        once: Once | None = None,
    ) -> list[dict[str, Any]]:
        """Append events in order under one lock and one write, announced in one round trip
        (a chunk of CLI output often makes several). `before_end`: nothing is written after
        the terminal event (a stream closes there: a later event would never reach it).
        `once`: nothing is written when the log already has the event it names (checked under
        the lock, so two writers racing to write it write it once)."""
        if not items or not self.enabled or not self.path.parent.is_dir():
            return []
        fd = open_own(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if before_end and is_terminal(_last_event(fd) or {}):
                return []
            if once is not None and once.found(fd):
                return []
            seq = _seq_after.get(_state(fd))
            if seq is None:
                seq = _last_seq(fd)
            ts = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            events, lines = [], []
            for type_, data in items:
                seq += 1
                event = {
                    "protocol_version": PROTOCOL_VERSION,
                    "run_id": self.ref.run_id,
                    "request_id": self.ref.request_id,
                    "seq": seq,
                    "ts": ts,
                    "engine": self.ref.engine,
                    "type": type_,
                    "data": data or {},
                    "meta": {"attempt": self.ref.attempt},
                }
                events.append(event)
                lines.append(redact(json.dumps(event, ensure_ascii=False, separators=(",", ":"))))
            payload = "".join(line + "\n" for line in lines).encode("utf-8")
            if os.write(fd, payload) == len(payload):
                _seq_after.put(_state(fd), seq)
        finally:
            os.close(fd)  # releases the lock
        if self.publish is not None:
            self.publish(self.ref.run_id, lines)
        return events

    def state_changed(
        self,
        from_: str | None,
        to: str,
        trigger: str,
        pending_interaction_id: int | None = None,
        error: dict[str, Any] | None = None,
        terminal: bool = False,
        token_usage: dict[str, Any] | None = None,
        before_end: bool = False,
    ) -> dict[str, Any] | None:
        """`token_usage`: what the turn that just ended spent (tokens, cost), when it spent any.
        `before_end`: nothing is written once the run's terminal event is (a transition
        announced after its commit, which a racing end may have followed).

        A `terminal` event is always written: a run ended before any worker started it (a
        cancel while queued or waiting for its upload, an upload expiry, a queue timeout) has
        no directory yet, so it gets one here. Only the winner of the guarded UPDATE that ended
        the run calls this, and the claim refuses a run no longer queued, so no worker writes
        into it meanwhile."""
        if terminal and self.enabled and not self.path.parent.is_dir():
            create_run_dir(self.path.parent.parent, self.path.parent.name)
        data: dict[str, Any] = {
            "from": from_,
            "to": to,
            "trigger": trigger,
            "updated_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "pending_interaction_id": pending_interaction_id,
        }
        if terminal:
            data["terminal"] = {"status": to, "error": error}
        if token_usage:
            data["token_usage"] = token_usage
        return self.emit(STATE_CHANGED, data, before_end=before_end)


@dataclass(frozen=True)
class Once:
    """An event written at most once: none is written when the log has an event of `type_`
    whose data[`key`] is `value`, within its last `look_back` bytes (None: the whole log)."""

    type_: str
    key: str
    value: str
    look_back: int | None = TAIL_BYTES

    def found(self, fd: int) -> bool:
        size = os.fstat(fd).st_size
        start = 0 if self.look_back is None else max(0, size - self.look_back)
        blob = os.pread(fd, size - start, start)
        needle = json.dumps(self.value, ensure_ascii=False).encode("utf-8")
        if needle not in blob:  # the usual answer, without parsing a line
            return False
        for line in blob.splitlines():
            if needle not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut by the window
            data = event.get("data") if isinstance(event, dict) else None
            if event.get("type") == self.type_ and isinstance(data, dict):
                if data.get(self.key) == self.value:
                    return True
        return False


def _state(fd: int) -> tuple[int, int, int, int]:
    stat = os.fstat(fd)
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def _last_seq(fd: int) -> int:
    event = _last_event(fd)
    return int(event["seq"]) if event is not None else 0


def _last_event(fd: int) -> dict[str, Any] | None:
    """The last whole event of the file, looked for in its last TAIL_BYTES, then in a window
    four times larger while none is found there: an event longer than the window (a long final
    message) must not read as no event at all, or the next writer would number from 1 again."""
    size = os.fstat(fd).st_size
    window = TAIL_BYTES
    while size:
        start = max(0, size - window)
        lines = os.pread(fd, size - start, start).split(b"\n")
        for line in reversed(lines[1:] if start else lines):  # the first one the window cut
            try:
                event = json.loads(line)
                int(event["seq"])
                return event
            except (ValueError, KeyError, TypeError):
                continue  # damaged, or empty: look further back
        if not start:
            break
        window *= 4
    return None


def last_seq(run_dir: Path) -> int:
    """The seq of the run's last stored event (0: none yet), read from the file's tail."""
    fh = open_run_file(run_dir, EVENTS_FILE)  # never through a link the run planted
    if fh is None:
        return 0
    with fh:
        return _last_seq(fh.fileno())


def read_events(
    run_dir: Path,
    after_seq: int = 0,
    to_seq: int | None = None,
    from_ts: datetime | None = None,
    to_ts: datetime | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The stored events with `after_seq` < seq (<= to_seq), within [from_ts, to_ts] (aware
    datetimes; an event whose `ts` does not parse is outside any time range)."""
    return list(islice(iter_events(run_dir, after_seq, to_seq, from_ts, to_ts), limit))


def iter_events(
    run_dir: Path,
    after_seq: int = 0,
    to_seq: int | None = None,
    from_ts: datetime | None = None,
    to_ts: datetime | None = None,
) -> Iterator[dict[str, Any]]:
    """read_events one event at a time, read from the file as they are taken: a stream of a
    long run holds one event, not the whole log."""
    for raw in _whole_lines(run_dir):
        head = _SEQ.match(raw)
        if head is not None:  # a page of a long history parses only its own lines
            seq = int(head.group(1))
            if seq <= after_seq:
                continue
            if to_seq is not None and seq > to_seq:
                return  # seqs only grow down the file
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        seq = event.get("seq", 0)
        if seq <= after_seq or (to_seq is not None and seq > to_seq):
            continue
        if from_ts or to_ts:
            at = event_time(event)
            if at is None or (from_ts and at < from_ts) or (to_ts and at > to_ts):
                continue
        yield event


def first_seq(run_dir: Path) -> int:
    """The seq of the run's first stored event (0: none), read from the file's head."""
    return next((event["seq"] for event in iter_events(run_dir)), 0)


def event_time(event: dict[str, Any]) -> datetime | None:
    """The event's `ts` as an aware datetime (one without an offset is UTC); None when it
    has none that parses."""
    try:
        at = datetime.fromisoformat(str(event.get("ts", "")))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _whole_lines(run_dir: Path) -> Iterator[bytes]:
    fh = open_run_file(run_dir, EVENTS_FILE)  # never through a link the run planted
    if fh is None:
        return
    with fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                return
            yield raw


def is_terminal(event: dict[str, Any]) -> bool:
    return event.get("type") == STATE_CHANGED and "terminal" in (event.get("data") or {})
