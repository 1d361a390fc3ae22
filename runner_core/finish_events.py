""" "A run ended" notices over Redis pub/sub, so a client waiting on a job hears of it at once.

The worker publishes the run id after it records the outcome; each API process has one listener
thread that wakes the requests waiting on that run. The notice only shortens a wait: waiters
re-read the database at least every `RECHECK_SEC`, so a lost notice (broker restart, a run
ended by the API or the sweeper, a broker that is not Redis) costs latency, never a wrong answer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from runner_core.per_process import PerProcess

log = logging.getLogger(__name__)

CHANNEL = "skill-runner:run-finished"
RECHECK_SEC = 1.0  # a waiter re-reads the database at least this often
RECHECK_SEC_NO_LISTENER = 0.1


def redis_url(broker_url: str) -> str | None:
    """The redis-py URL of a Celery broker URL; None when the broker is not Redis."""
    if broker_url.startswith("redis+socket://"):
        return "unix://" + broker_url[len("redis+socket://") :]
    if broker_url.startswith(("redis://", "rediss://", "unix://")):
        return broker_url
    return None


class FinishPublisher:
    """Publishes run ids; one connection per process (connections do not cross a fork)."""

    def __init__(self, broker_url: str) -> None:
        self.url = redis_url(broker_url)
        self._client = PerProcess(self._connect)

    def publish(self, run_id: str) -> None:
        if self.url is None:
            return
        try:
            self._client.get().publish(CHANNEL, run_id)
        except Exception as exc:  # waiters fall back to re-reading the database
            log.debug("finish notice for run %s not sent: %s", run_id, exc)

    def _connect(self):
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=2, socket_connect_timeout=2)


class FinishWatcher:
    """One listener thread per process; `waiting(run_id)` yields an Event set when the run's
    notice arrives. At most `max_waiters` requests wait at once (each holds a server thread);
    `slot()` answers whether this one may."""

    def __init__(self, broker_url: str, max_waiters: int = 3) -> None:
        self.url = redis_url(broker_url)
        self._events: dict[str, list[threading.Event]] = {}
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max(1, max_waiters))
        self._listener = PerProcess(self._start_listener)
        self.subscribed = threading.Event()

    @property
    def recheck_sec(self) -> float:
        return RECHECK_SEC if self.subscribed.is_set() else RECHECK_SEC_NO_LISTENER

    @contextmanager
    def slot(self) -> Iterator[bool]:
        """True while this request holds one of the waiting slots."""
        got = self._slots.acquire(blocking=False)
        try:
            yield got
        finally:
            if got:
                self._slots.release()

    @contextmanager
    def waiting(self, run_id: str) -> Iterator[threading.Event]:
        """Register before reading the run's status, so a notice in between is not missed."""
        self._start()
        event = threading.Event()
        with self._lock:
            self._events.setdefault(run_id, []).append(event)
        try:
            yield event
        finally:
            with self._lock:
                events = self._events.get(run_id, [])
                if event in events:
                    events.remove(event)
                if not events:
                    self._events.pop(run_id, None)

    def _start(self) -> None:
        if self.url is None or self._listener.made():
            return
        self._listener.get()
        self.subscribed.wait(0.5)  # the first waiters should not miss an early notice

    def _start_listener(self) -> threading.Thread:
        self.subscribed.clear()
        thread = threading.Thread(target=self._listen, name="finish-watcher", daemon=True)
        thread.start()
        return thread

    def _listen(self) -> None:
        import redis

        assert self.url is not None  # the listener starts only with a Redis broker
        while True:
            try:
                client = redis.Redis.from_url(
                    self.url, socket_connect_timeout=2, health_check_interval=30
                )
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(CHANNEL)
                self.subscribed.set()
                for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._fire(message["data"].decode("utf-8", "replace"))
            except Exception as exc:
                self.subscribed.clear()
                log.debug("finish watcher reconnecting: %s", exc)
                time.sleep(1.0)

    def _fire(self, run_id: str) -> None:
        with self._lock:
            events = list(self._events.get(run_id, ()))
        for event in events:
            event.set()
