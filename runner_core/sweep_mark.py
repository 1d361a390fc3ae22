"""When the sweep last ran, kept in the broker: what /healthz reports as `sweep`.

The sweep runs wherever a worker serves the `maintenance` queue and beat sends it (or the
one-process service's own thread), every SKILL_RUNNER_SWEEP_INTERVAL_SEC. A sweep long past
says that no worker or no beat runs, while the API alone still answers and takes jobs that
would stay queued. Without a Redis broker there is nothing to read: unknown.
"""

from __future__ import annotations

import time
from typing import cast

import redis

from runner_core.finish_events import redis_url
from runner_core.per_process import PerProcess

LAST_SWEEP = "skill-runner:sweep:last"  # epoch seconds of the last sweep that ended
KEEP_SEC = 7 * 24 * 3600  # a mark nobody renews is dropped after a week


class SweepMark:
    """Writes (the sweep) and reads (the API) the last sweep's time; never raises."""

    def __init__(self, broker_url: str) -> None:
        self.url = redis_url(broker_url)
        self._client: PerProcess[redis.Redis | None] = PerProcess(self._connect)

    def _connect(self) -> redis.Redis | None:
        if self.url is None:
            return None
        return redis.Redis.from_url(self.url, socket_timeout=1, socket_connect_timeout=1)

    def swept(self, now: float | None = None) -> None:
        client = self._client.get()
        if client is None:
            return
        try:
            client.set(LAST_SWEEP, time.time() if now is None else now, ex=KEEP_SEC)
        except redis.RedisError:
            pass

    def seconds_since(self, now: float | None = None) -> float | None:
        """Seconds since the last sweep ended; None when unknown (none recorded, no Redis
        broker, the broker not answering)."""
        client = self._client.get()
        if client is None:
            return None
        try:
            value = cast(bytes | None, client.get(LAST_SWEEP))
        except redis.RedisError:
            return None
        if value is None:
            return None
        try:
            last = float(value)
        except ValueError:
            return None
        return max(0.0, (time.time() if now is None else now) - last)


_marks: dict[str, SweepMark] = {}


def mark_of(broker_url: str) -> SweepMark:
    """One mark (and broker connection per process) per broker."""
    if broker_url not in _marks:
        _marks[broker_url] = SweepMark(broker_url)
    return _marks[broker_url]
