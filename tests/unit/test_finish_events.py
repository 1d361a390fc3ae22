from __future__ import annotations

import pytest

from runner_core.finish_events import (
    RECHECK_SEC,
    RECHECK_SEC_NO_LISTENER,
    FinishWatcher,
    redis_url,
)


@pytest.mark.parametrize(
    "broker, expected",
    [
        ("redis+socket:///srv/data/broker/redis.sock", "unix:///srv/data/broker/redis.sock"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("rediss://cache:6380/1", "rediss://cache:6380/1"),
        ("amqp://guest@localhost//", None),
    ],
)
def test_broker_urls_map_to_redis_py_urls(broker, expected):
    assert redis_url(broker) == expected


def test_waiting_slots_are_bounded_and_given_back():
    watcher = FinishWatcher("amqp://localhost//", max_waiters=1)
    with watcher.slot() as first:
        with watcher.slot() as second:
            assert first is True and second is False  # the second request answers at once
    with watcher.slot() as again:
        assert again is True


def test_without_a_redis_broker_waiters_recheck_often_and_unregister():
    watcher = FinishWatcher("amqp://localhost//")
    assert watcher.recheck_sec == RECHECK_SEC_NO_LISTENER < RECHECK_SEC
    with watcher.waiting("run-1") as ended:
        watcher._fire("run-1")
        assert ended.is_set()
    assert watcher._events == {}
