"""`last_seq`: the seq of a run's last stored event, read from the end of events.jsonl (the run
page pages its history back from there); `read_events` by seq range, which skips the lines
outside the range unparsed."""

from __future__ import annotations

import json

from runner_core.events import EVENTS_FILE, TAIL_BYTES, EventLog, RunRef, last_seq, read_events


def test_last_seq_of_a_run_without_events_is_0(tmp_path):
    assert last_seq(tmp_path) == 0
    (tmp_path / EVENTS_FILE).write_text("")
    assert last_seq(tmp_path) == 0


def test_last_seq_reads_the_tail_of_a_long_file(tmp_path):
    log = EventLog(tmp_path, RunRef("run-1", "req-1", None))
    for i in range(40):
        log.emit("assistant.message", {"text": f"{i} " + "x" * 4000})
    assert (tmp_path / EVENTS_FILE).stat().st_size > TAIL_BYTES
    assert last_seq(tmp_path) == 40
    with (tmp_path / EVENTS_FILE).open("a") as out:
        out.write('{"seq": 41, "type": "assistant.mess')  # a line still being written
    assert last_seq(tmp_path) == 40


def test_a_seq_range_reads_only_its_events(tmp_path):
    log = EventLog(tmp_path, RunRef("run-1", "req-1", "codex"))
    for i in range(30):
        log.emit("assistant.message", {"text": f"m{i}", "seq": 999})  # a seq inside data too
    with (tmp_path / EVENTS_FILE).open("a") as out:  # a line in another layout is parsed
        out.write(json.dumps({"seq": 31, "type": "x", "data": {}}, indent=None) + "\n")
    assert [e["seq"] for e in read_events(tmp_path, after_seq=10, to_seq=20)] == list(range(11, 21))
    assert [e["data"]["text"] for e in read_events(tmp_path, 28, to_seq=29)] == ["m28"]
    assert [e["seq"] for e in read_events(tmp_path, after_seq=29)] == [30, 31]
    assert [e["seq"] for e in read_events(tmp_path, after_seq=5, limit=2)] == [6, 7]
    assert len(read_events(tmp_path)) == 31
