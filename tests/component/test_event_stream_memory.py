"""What one event stream holds in memory: a subscriber that does not read, and the replay of a
long run's log, cost a bounded amount, and the stream still sends every event once, in order."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from api.jobs import events as streams
from api.jobs.chat import history_bounds
from runner_core import event_bus
from runner_core.event_bus import EventHub, channel
from runner_core.events import EventLog, RunRef

REF = RunRef("run-1", "req-1", "codex")


def _frames(run_dir: Path, hub: EventHub, cursor: int = 0):
    return streams.stream(
        run_dir,
        REF.run_id,
        hub,
        cursor,
        snapshot=lambda: {"status": "running", "pending": None},
        ended=lambda: False,
        heartbeat_sec=0.2,
    )


def _published(hub: EventHub, events: list[dict]) -> None:
    """As the hub's listener hands Redis messages over."""
    for event in events:
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        hub._deliver(channel(REF.run_id).encode(), line.encode())


def test_a_subscriber_that_does_not_read_holds_a_bounded_inbox_and_misses_nothing(
    tmp_path, monkeypatch
):
    """Every published event was queued for every subscriber however long it did not read:
    a stalled client of a chatty run held the run's whole output in the API's memory."""
    monkeypatch.setattr(event_bus, "INBOX_MAX", 5, raising=False)
    log = EventLog(tmp_path, REF)
    log.emit_many([("raw.stdout", {"text": f"early {n}"}) for n in range(10)])
    hub = EventHub("memory://")  # no Redis: the test hands the messages over
    frames = _frames(tmp_path, hub)
    assert next(frames).startswith("event: snapshot")  # following the run from here
    _published(hub, log.emit_many([("raw.stdout", {"text": f"late {n}"}) for n in range(30)]))
    (inbox,) = hub._queues[REF.run_id]
    assert inbox.qsize() == 5
    _published(hub, [log.state_changed("running", "succeeded", "done", terminal=True)])
    sent = [json.loads(f.split("data: ", 1)[1]) for f in frames if "chat_event" in f]
    assert [e["seq"] for e in sent] == list(range(1, 42))
    assert sent[-1]["data"]["terminal"]["status"] == "succeeded"


def test_the_replay_and_the_bounds_of_a_long_log_read_it_as_they_go(tmp_path):
    """The replay parsed the whole events.jsonl into a list before it sent its first event, and
    the history's bounds parsed all of it for two numbers: each subscriber of a long run held
    its whole log in memory."""
    log = EventLog(tmp_path, REF)
    text = "x" * 2000
    for _ in range(10):
        log.emit_many([("raw.stdout", {"text": text}) for _n in range(500)])
    assert (tmp_path / "events.jsonl").stat().st_size > 10_000_000
    tracemalloc.start()
    try:
        frames = _frames(tmp_path, EventHub("memory://"), cursor=2)
        taken = [next(frames) for _ in range(3)]
        assert (history_bounds(tmp_path)) == (1, 5000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        frames.close()
    assert "id: 3\n" in taken[1] and "id: 4\n" in taken[2]
    assert peak < 1_000_000, peak
