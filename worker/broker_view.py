"""Which task messages a Redis broker still holds, so the sweep re-sends only lost ones.

A queued run whose message is older than the grace period is either lost (Redis restarted
with the queue in memory) or simply still waiting behind a backlog. Re-sending both kinds
filled a backlog with duplicates: every run waiting longer than the grace was sent again on
every pass (10 runs waiting 30 s behind one worker made 45 messages). On Redis the queues are
lists and the messages workers have reserved sit in kombu's `unacked` hash, so one pass can
read every task id the broker holds. Other brokers cannot be read this way: there every stale
run is re-sent as before (the claim guard drops the duplicates).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from runner_core.finish_events import redis_url

log = logging.getLogger(__name__)

UNACKED = "unacked"  # kombu's Redis transport: reserved, not yet acknowledged messages
PRIORITY_SEP = "\x06\x16"  # kombu's key of a queue's other priority levels: queue + SEP + level
PRIORITY_STEPS = (3, 6, 9)
READ_CAP = 10_000  # messages (~8 MB, ~80 ms to parse); a longer backlog is not read: all count as held


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


def read_broker(broker_url: str, queues: Iterable[str]) -> BrokerView:
    """Every task id waiting in `queues` or reserved by a worker, read in one pass."""
    url = redis_url(broker_url)
    if url is None:
        return BrokerView(None)
    import redis
    client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    try:
        keys = [key for queue in queues
                for key in (queue, *(f"{queue}{PRIORITY_SEP}{step}" for step in PRIORITY_STEPS))]
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.llen(key)
        pipe.hlen(UNACKED)
        sizes = pipe.execute()
        if sum(sizes) > READ_CAP:
            log.info("broker backlog of %d messages not read; stale runs are not re-sent "
                     "while it is this long", sum(sizes))
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
    ids.discard(None)
    return BrokerView(ids)


def task_id(raw: bytes, reserved: bool = False) -> str | None:
    """The task id of a kombu message (a reserved one is [message, exchange, routing key])."""
    try:
        message = json.loads(raw)
        if reserved:
            message = message[0]
        return message["headers"]["id"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
