"""A run's events for clients: the SSE stream (snapshot, chat_event, heartbeat) and the stored
history. The stream replays events.jsonl after the cursor, then follows Redis pub/sub, filling
any gap from the file, and closes after the terminal event."""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner_core.event_bus import EventHub
from runner_core.events import is_terminal, iter_events, read_events

HEARTBEAT_SEC = 5.0
WAIT_SLICE_SEC = 1.0  # how long one wait for a published event lasts
END_GRACE_SEC = 1.0  # a run found ended: how long its terminal event may still take


def frame(event: str, data: Any, event_id: int | None = None) -> str:
    head = f"event: {event}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return head + "data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n\n"


def stream(
    run_dir: Path,
    run_id: str,
    hub: EventHub,
    cursor: int,
    snapshot: Callable[[], dict[str, Any]],
    ended: Callable[[], bool],
    heartbeat_sec: float = HEARTBEAT_SEC,
    allowed: Callable[[], bool] = lambda: True,
) -> Iterator[str]:
    """The SSE frames of one subscriber from `cursor` on (events with seq > cursor); the
    stream ends at a heartbeat once `allowed()` says its caller is signed in no more."""
    with hub.follow(run_id) as inbox:  # following before the replay: no gap
        first = snapshot()
        yield frame("snapshot", {**first, "cursor": cursor})
        last = cursor
        for event in iter_events(run_dir, after_seq=last):  # read as sent, not held whole
            yield frame("chat_event", event, event["seq"])
            last = event["seq"]
            if is_terminal(event):
                return
        next_beat = time.monotonic() + heartbeat_sec
        if ended():  # ended before this replay: its terminal event may be a moment behind
            _wait(inbox, END_GRACE_SEC)
            yield from _rest(run_dir, last)
            return
        while True:
            got = _wait(inbox, min(WAIT_SLICE_SEC, max(0.0, next_beat - time.monotonic())))
            if got is not None:
                seq, line = got
                if seq == last + 1:  # the usual case: passed on as published, not re-encoded
                    yield f"event: chat_event\nid: {seq}\ndata: {line}\n\n"
                    last = seq
                    if '"terminal":' in line and is_terminal(json.loads(line)):
                        return
                    continue
                if seq <= last:
                    continue
            fresh: list[dict[str, Any]] = []
            if got is not None:  # a message was missed: the file has it
                fresh = read_events(run_dir, after_seq=last)
            if time.monotonic() >= next_beat:
                if not allowed():  # a removed token or a logout: its reconnect gets the 401
                    return
                yield frame("heartbeat", {"ts": datetime.now(UTC).isoformat()})
                next_beat = time.monotonic() + heartbeat_sec
                fresh = fresh or read_events(run_dir, after_seq=last)
                if not fresh and ended():  # ended without a terminal event (e.g. never ran)
                    yield from _rest(run_dir, last)
                    return
            for event in fresh:
                if event["seq"] <= last:
                    continue
                yield frame("chat_event", event, event["seq"])
                last = event["seq"]
                if is_terminal(event):
                    return


def _wait(inbox: queue.Queue, timeout: float) -> tuple[int, str] | None:
    try:
        return inbox.get(timeout=timeout)
    except queue.Empty:
        return None


def _rest(run_dir: Path, last: int) -> Iterator[str]:
    for event in iter_events(run_dir, after_seq=last):
        yield frame("chat_event", event, event["seq"])


def history(run_dir: Path, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Stored events by seq range and/or time range (aware datetimes)."""
    return read_events(
        run_dir,
        after_seq=max(0, (args.get("from_seq") or 1) - 1),
        to_seq=args.get("to_seq"),
        from_ts=args.get("from_ts"),
        to_ts=args.get("to_ts"),
        limit=args.get("limit"),
    )
