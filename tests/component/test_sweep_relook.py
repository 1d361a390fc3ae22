"""The sweep looks for a stale run's message twice before sending it again: a worker records a
message it has just popped as reserved a moment later (worker.recovery.sweep)."""

from __future__ import annotations

from types import SimpleNamespace

from worker.recovery.broker_view import BrokerView
from worker.recovery.sweep import missing_from_broker


def runs(*task_ids: str) -> list:
    return [SimpleNamespace(celery_task_id=task_id) for task_id in task_ids]


def reader(*views: BrokerView):
    """A broker read that gives `views` in turn, counting the reads."""
    seen = list(views)
    calls = []

    def read() -> BrokerView:
        calls.append(1)
        return seen.pop(0)

    return read, calls


def test_a_message_reserved_between_two_looks_is_not_sent_again():
    read, calls = reader(BrokerView({"a"}), BrokerView({"a", "b"}))
    counts = {"still_queued": 0}
    assert missing_from_broker(runs("a", "b"), read, counts, relook_sec=0) == []
    assert counts["still_queued"] == 2 and len(calls) == 2


def test_a_message_missing_at_both_looks_is_lost():
    stale = runs("a", "b")
    read, calls = reader(BrokerView({"a"}), BrokerView({"a"}))
    counts = {"still_queued": 0}
    assert missing_from_broker(stale, read, counts, relook_sec=0) == [stale[1]]
    assert counts["still_queued"] == 1 and len(calls) == 2


def test_one_look_when_the_broker_holds_every_message_or_cannot_tell():
    for view, missing in ((BrokerView({"a", "b"}), 0), (BrokerView(None), 2)):
        read, calls = reader(view)
        assert len(missing_from_broker(runs("a", "b"), read, {"still_queued": 0})) == missing
        assert len(calls) == 1
