"""Live delivery of run events across processes: Redis pub/sub on the broker's Redis (the
embedded one on the default). A message is a hint that a new line is in events.jsonl; readers
fill any gap from the file, so a lost message costs latency, never an event."""

from __future__ import annotations

import logging
from typing import Any

from runner_core.finish_events import redis_url
from runner_core.per_process import PerProcess

log = logging.getLogger(__name__)
CHANNEL_PREFIX = "skill-runner:events:"


def channel(run_id: str) -> str:
    return CHANNEL_PREFIX + run_id


class EventPublisher:
    """Publishes event lines; one connection per process (connections do not cross a fork)."""

    def __init__(self, broker_url: str) -> None:
        self.url = redis_url(broker_url)
        self._client = PerProcess(self._connect)

    def __call__(self, run_id: str, line: str) -> None:
        if self.url is None:
            return
        try:
            self._client.get().publish(channel(run_id), line)
        except Exception as exc:  # readers fill the gap from the file
            log.debug("event of run %s not published: %s", run_id, exc)

    def _connect(self):
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=2, socket_connect_timeout=2)


class Subscription:
    """One reader's subscription to a run's events (`with Subscription(url, run_id) as s:`)."""

    def __init__(self, broker_url: str, run_id: str) -> None:
        self.url, self.run_id = redis_url(broker_url), run_id
        self._client: Any = None
        self._pubsub: Any = None

    def __enter__(self) -> Subscription:
        if self.url is not None:
            import redis

            try:
                self._client = redis.Redis.from_url(self.url, socket_connect_timeout=2)
                self._pubsub = self._client.pubsub(ignore_subscribe_messages=True)
                self._pubsub.subscribe(channel(self.run_id))
            except Exception as exc:  # the reader re-reads the file on every heartbeat
                log.warning("no live events for run %s: %s", self.run_id, exc)
                self._pubsub = None
        return self

    def next(self, timeout: float) -> str | None:
        """The next event line published within `timeout` seconds, else None."""
        if self._pubsub is None:
            import time

            time.sleep(timeout)
            return None
        try:
            message = self._pubsub.get_message(timeout=timeout)
        except Exception as exc:
            log.debug("event subscription of run %s failed: %s", self.run_id, exc)
            self._pubsub = None
            return None
        if message is None or message.get("type") != "message":
            return None
        data = message["data"]
        return data.decode("utf-8") if isinstance(data, bytes) else str(data)

    def __exit__(self, *exc_info: Any) -> None:
        for closable in (self._pubsub, self._client):
            try:
                if closable is not None:
                    closable.close()
            except Exception:
                pass
