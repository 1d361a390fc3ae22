"""Which task ids a Redis broker still holds (waiting or reserved), so the sweep re-sends only
lost messages, not runs still waiting behind a backlog.

The kombu Redis layout read here is not public API (no public call names the messages a queue
holds; counts alone cannot tell which run's message was lost): it is verified for the celery and
kombu pinned in pyproject.toml, checked by tests/integration/test_broker_view.py, and kept
behind SKILL_RUNNER_BROKER_VIEW for what it saves (bench/RESULTS.md, broker-view). Switched off,
and on other brokers, every stale run is re-sent (the claim guard drops the duplicates).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from kombu.transport.redis import Channel as RedisChannel

from runner_core.finish_events import redis_url

log = logging.getLogger(__name__)

# kombu's defaults for its Redis transport options of the same names (this project sets none)
UNACKED = RedisChannel.unacked_key  # reserved, not yet acknowledged messages
PRIORITY_SEP = RedisChannel.sep  # a queue's other priority levels: queue + SEP + level
PRIORITY_STEPS = tuple(step for step in RedisChannel.priority_steps if step)
READ_CAP = 10_000  # messages; a longer backlog is not read and counts as held in full


class BrokerView:
    """`holds(task_id)`: True when the broker has the message, False when it does not, None
    when this broker cannot tell (not Redis, or not reachable)."""

    def __init__(self, task_ids: set[str] | None, everything: bool = False) -> None:
        self.task_ids, self.everything = task_ids, everything

    def holds(self, task_id: str | None) -> bool | None:
        if self.everything:
            return True
        if self.task_ids is None:
            return None
        return task_id in self.task_ids


def read_broker(broker_url: str, queues: Iterable[str], enabled: bool = True) -> BrokerView:
    """Every task id waiting in `queues` or reserved by a worker, read in one pass; a view that
    tells nothing when not `enabled` (SKILL_RUNNER_BROKER_VIEW=0)."""
    url = redis_url(broker_url) if enabled else None
    if url is None:
        return BrokerView(None)
    import redis

    client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    try:
        keys = [
            key
            for queue in queues
            for key in (queue, *(f"{queue}{PRIORITY_SEP}{step}" for step in PRIORITY_STEPS))
        ]
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.llen(key)
        pipe.hlen(UNACKED)
        sizes = pipe.execute()
        if sum(sizes) > READ_CAP:
            log.info(
                "broker backlog of %d messages not read; stale runs are not re-sent "
                "while it is this long",
                sum(sizes),
            )
            return BrokerView(None, everything=True)
        pipe = client.pipeline(transaction=False)
        for key, size in zip(keys, sizes):
            if size:
                pipe.lrange(key, 0, -1)
        pipe.hvals(UNACKED)
        *lists, reserved = pipe.execute()
    except redis.RedisError as exc:
        log.warning("broker not readable (%s); stale runs are re-sent", exc)
        return BrokerView(None)
    finally:
        client.close()
    ids = {task_id(raw) for messages in lists for raw in messages}
    ids.update(task_id(raw, reserved=True) for raw in reserved)
    return BrokerView({tid for tid in ids if tid is not None})


def task_id(raw: bytes, reserved: bool = False) -> str | None:
    """The task id of a kombu message (a reserved one is [message, exchange, routing key])."""
    try:
        message = json.loads(raw)
        if reserved:
            message = message[0]
        return message["headers"]["id"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
