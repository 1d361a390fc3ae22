"""The run event log: numbering, batching, announcing, reading back."""

from __future__ import annotations

import json
from pathlib import Path

from runner_core import events as events_module
from runner_core.bounded_cache import BoundedCache
from runner_core.events import STATE_CHANGED, EventLog, Once, RunRef, is_terminal, read_events

REPO = Path(__file__).resolve().parents[2]
REF = RunRef("run-1", "req-1", "codex", attempt=2)


def _seqs(run_dir: Path) -> list[int]:
    return [event["seq"] for event in read_events(run_dir)]


def test_emit_numbers_from_one_and_fills_the_envelope(tmp_path):
    log = EventLog(tmp_path, REF)
    first = log.emit("raw.stdout", {"text": "a"})
    second = log.emit("assistant.message.final", {"text": "b"})
    assert first is not None and second is not None
    assert (first["seq"], second["seq"]) == (1, 2)
    stored = read_events(tmp_path)
    assert stored == [first, second]
    assert stored[0]["protocol_version"] == "fcmp/1.0"
    assert stored[0]["request_id"] == "req-1"
    assert stored[0]["meta"] == {"attempt": 2}


def test_emit_many_writes_in_order_and_announces_once(tmp_path):
    calls: list[tuple[str, list[str]]] = []
    log = EventLog(tmp_path, REF, publish=lambda run_id, lines: calls.append((run_id, lines)))
    log.emit("raw.stdout", {"text": "before"})
    events = log.emit_many([("raw.stdout", {"text": "x"}), ("tool.call", {"name": "sh"})])
    assert [e["seq"] for e in events] == [2, 3]
    assert [e["type"] for e in read_events(tmp_path)] == ["raw.stdout", "raw.stdout", "tool.call"]
    assert len(calls) == 2 and calls[1][0] == "run-1"
    assert [json.loads(line)["seq"] for line in calls[1][1]] == [2, 3]


def test_a_new_log_on_the_same_file_continues_the_numbering(tmp_path):
    EventLog(tmp_path, REF).emit_many([("a", None), ("b", None)])
    again = EventLog(tmp_path, RunRef("run-1", "req-1", "codex", attempt=3)).emit("c")
    assert again is not None and again["seq"] == 3


def test_a_damaged_last_line_does_not_restart_the_numbering(tmp_path):
    EventLog(tmp_path, REF).emit_many([("a", None), ("b", None)])
    with (tmp_path / "events.jsonl").open("a") as fh:
        fh.write('{"seq": 9, "cut in the mid\n')
    assert EventLog(tmp_path, REF).emit("c")["seq"] == 3


def test_an_event_longer_than_the_tail_does_not_restart_the_numbering(tmp_path, monkeypatch):
    """Another process writing after a long last event (a final message of 100 KB, then the
    sweep's terminal event for the run whose worker died) numbered from 1 again: two events
    with one seq, and a stream resumed past it never got the terminal one."""
    log = EventLog(tmp_path, REF)
    log.emit("a")
    log.emit("assistant.message.final", {"text": "x" * (3 * events_module.TAIL_BYTES)})
    monkeypatch.setattr(events_module, "_seq_after", BoundedCache(4))  # another process
    end = log.state_changed("running", "failed", "reconciled", terminal=True)
    assert end is not None and end["seq"] == 3
    assert log.emit("late", before_end=True) is None  # the end is seen past the long line too
    assert _seqs(tmp_path) == [1, 2, 3]


def test_a_last_event_holding_a_unicode_line_separator_is_read_whole(tmp_path, monkeypatch):
    """U+2028 and U+0085 stay raw in the JSON (ensure_ascii=False) but split a decoded line:
    the last event read as damaged and the next writer reused its seq (text pasted from a PDF
    holds them)."""
    log = EventLog(tmp_path, REF)
    log.emit("a")
    log.emit("interaction.reply.accepted", {"response": "one\u2028two\x85three"})
    monkeypatch.setattr(events_module, "_seq_after", BoundedCache(4))  # another process
    assert log.emit("b")["seq"] == 3
    assert _seqs(tmp_path) == [1, 2, 3]


def test_the_next_write_of_a_run_reads_no_tail_unless_another_writer_grew_the_file(
    tmp_path, monkeypatch
):
    reads: list[int] = []
    real = events_module._last_seq
    monkeypatch.setattr(events_module, "_last_seq", lambda fd: reads.append(fd) or real(fd))
    log = EventLog(tmp_path, REF)
    log.emit("a")
    log.emit_many([("b", None), ("c", None)])
    assert EventLog(tmp_path, REF).emit("d")["seq"] == 4  # a new log of the same process
    assert len(reads) == 1  # only the first write looked at the file
    with (tmp_path / "events.jsonl").open("a") as fh:  # another process's event
        fh.write(json.dumps({"seq": 7, "type": "x"}) + "\n")
    assert log.emit("e")["seq"] == 8 and len(reads) == 2
    (tmp_path / "events.jsonl").unlink()  # a new file (the run's directory was reset)
    assert log.emit("f")["seq"] == 1 and _seqs(tmp_path) == [1]


def test_off_or_without_a_directory_nothing_is_written(tmp_path):
    published: list = []
    assert EventLog(tmp_path, REF, lambda *a: published.append(a), enabled=False).emit("a") is None
    assert (
        EventLog(tmp_path / "gone", REF, lambda *a: published.append(a)).emit_many([("a", None)])
        == []
    )
    assert published == [] and not (tmp_path / "events.jsonl").exists()


def test_read_events_filters_by_seq_and_terminal_is_recognised(tmp_path):
    log = EventLog(tmp_path, REF)
    log.emit("raw.stdout")
    log.state_changed("running", "succeeded", "finished", terminal=True)
    assert [e["seq"] for e in read_events(tmp_path, after_seq=1)] == [2]
    assert [e["seq"] for e in read_events(tmp_path, to_seq=1)] == [1]
    last = read_events(tmp_path)[-1]
    assert is_terminal(last) and last["data"]["terminal"] == {"status": "succeeded", "error": None}


def test_an_event_written_before_end_is_dropped_once_the_terminal_event_is_written(tmp_path):
    log = EventLog(tmp_path, REF)
    assert log.emit("step.ended", {"step": "a"}, before_end=True) is not None
    log.state_changed("running", "failed", "composite_finished", terminal=True)
    assert log.emit("step.ended", {"step": "b"}, before_end=True) is None
    assert log.emit_many([("step.ended", {"step": "b"})], before_end=True) == []
    assert [e["type"] for e in read_events(tmp_path)] == ["step.ended", STATE_CHANGED]


def test_an_event_written_once_is_not_written_again_by_a_second_writer(tmp_path):
    # a composite child's step.ended: its own advance and its parent's end may both write it
    first, second = EventLog(tmp_path, REF), EventLog(tmp_path, REF)
    once = Once("step.ended", "request_id", "req-a")
    assert first.emit("step.ended", {"request_id": "req-a"}, once=once) is not None
    assert second.emit("step.ended", {"request_id": "req-a", "status": "x"}, once=once) is None
    assert second.emit("step.started", {"request_id": "req-a"}) is not None  # another type
    other = Once("step.ended", "request_id", "req-b")
    assert second.emit("step.ended", {"request_id": "req-b"}, once=other) is not None
    assert [(e["type"], e["data"]["request_id"]) for e in read_events(tmp_path)] == [
        ("step.ended", "req-a"),
        ("step.started", "req-a"),
        ("step.ended", "req-b"),
    ]


def test_once_looks_at_the_logs_tail_unless_told_to_read_it_whole(tmp_path):
    log = EventLog(tmp_path, REF)
    log.emit("step.ended", {"request_id": "req-a"})
    log.emit("raw.stdout", {"text": "x" * 2000})
    tail_only = Once("step.ended", "request_id", "req-a", 500)
    assert log.emit("step.ended", {"request_id": "req-a"}, once=tail_only) is not None
    log.emit("raw.stdout", {"text": "x" * 2000})
    whole = Once("step.ended", "request_id", "req-a", None)
    assert log.emit("step.ended", {"request_id": "req-a"}, once=whole) is None
    # a value inside other data is not the event's key
    log.emit("raw.stdout", {"text": '"req-c"'})
    assert log.emit("step.ended", {}, once=Once("step.ended", "request_id", "req-c")) is not None
