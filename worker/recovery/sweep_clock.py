"""Whether the sweep may judge running runs' leases by their age, now.

A lease is judged by the time since the run's last heartbeat. While the database is away (a
restart, a failover) no run can beat, so once it answers again every live run's heartbeat is as
old as the outage, and the first sweep would take them all over before their workers could beat.
So a worker process that finds the database away notes it in the broker (a lease refresh or a
sweep that failed for it), and the next sweep that reaches the database gives every running run
one lease from then before judging leases by age again. A dead worker process on this host is
still judged at once (worker.recovery.sweep.worker_gone). Without a Redis broker leases are always
judged by age.
"""

from __future__ import annotations

import logging
import time
from typing import cast

import redis

from runner_core.finish_events import redis_url
from runner_core.per_process import PerProcess
from runner_core.settings import Settings

log = logging.getLogger(__name__)
DATABASE_AWAY = "skill-runner:database-away"  # set by whoever found the database away
JUDGE_FROM = "skill-runner:sweep:judge-leases-from"  # epoch seconds
AWAY_TTL_SEC = 24 * 3600  # a note nobody read (no sweep ran) is dropped after a day


class SweepClock:
    """The notes in the broker that hold lease judgments back after a database outage."""

    def __init__(self, settings: Settings) -> None:
        self.url = redis_url(settings.broker_url)
        self.lease_sec = settings.lease_sec
        self._client: PerProcess[redis.Redis | None] = PerProcess(self._connect)

    def _connect(self) -> redis.Redis | None:
        if self.url is None:
            return None
        return redis.Redis.from_url(self.url, socket_timeout=2, socket_connect_timeout=2)

    def database_away(self) -> None:
        """Note that this process found the database away (cheap; never raises)."""
        client = self._client.get()
        if client is None:
            return
        try:
            client.set(DATABASE_AWAY, time.time(), ex=AWAY_TTL_SEC)
        except redis.RedisError:
            pass

    def judge_leases(self, now: float | None = None) -> bool:
        """Call once a sweep has reached the database: may leases be judged by age now? True
        when the broker cannot tell (as without this clock)."""
        client = self._client.get()
        if client is None:
            return True
        now = time.time() if now is None else now
        try:
            away = cast(bytes | None, client.getdel(DATABASE_AWAY))
            if away is not None:
                client.set(JUDGE_FROM, now + self.lease_sec)
                log.info(
                    "the database was away (noted %.0f s ago): running runs get %s s to beat "
                    "again before their leases are judged",
                    now - float(away),
                    self.lease_sec,
                )
            judge_from = cast(bytes | None, client.get(JUDGE_FROM))
        except redis.RedisError as exc:
            log.warning("sweep clock unavailable (%s): leases judged by age", exc)
            return True
        return judge_from is None or now >= float(judge_from)


_clocks: dict[tuple[str | None, int], SweepClock] = {}


def clock_of(settings: Settings) -> SweepClock:
    """One clock (and broker connection per process) per broker and lease."""
    key = (settings.broker_url, settings.lease_sec)
    if key not in _clocks:
        _clocks[key] = SweepClock(settings)
    return _clocks[key]
