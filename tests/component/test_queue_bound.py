"""QueueBound: an API process counts the queued runs at most once per FRESH_SEC while it is
under the bound, and counts again before any refusal."""

from __future__ import annotations

import pytest

from api.jobs import queue_bound
from api.jobs.queue_bound import FRESH_SEC, QueueBound


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def queued(monkeypatch):
    """The database's number of queued runs (`.value`) and how often it was counted."""
    state = type("Queued", (), {"value": 0, "counts": 0})()

    def count(_conn) -> int:
        state.counts += 1
        return state.value

    monkeypatch.setattr(queue_bound, "count_queued", count)
    return state


def test_under_the_bound_it_adds_its_own_runs_to_a_fresh_count(queued):
    clock = Clock()
    bound = QueueBound(clock)
    queued.value = 5
    for _ in range(4):
        assert bound.full(None, limit=10) is None
        bound.accepted()
        queued.value += 1
    assert queued.counts == 1  # one count for four POSTs
    clock.now += FRESH_SEC
    assert bound.full(None, limit=10) is None and queued.counts == 2  # stale: counted again


def test_a_refusal_is_always_from_a_new_count(queued):
    clock = Clock()
    bound = QueueBound(clock)
    queued.value = 8
    assert bound.full(None, limit=10) is None
    bound.accepted()
    bound.accepted()  # 8 + 2: the bound, as far as this process knows
    queued.value = 3  # meanwhile the workers took runs: no refusal on the old number
    assert bound.full(None, limit=10) is None and queued.counts == 2
    queued.value = 12
    clock.now += FRESH_SEC
    assert bound.full(None, limit=10) == 12 and queued.counts == 3
    assert bound.full(None, limit=10) == 12 and queued.counts == 4  # still refused: counted
