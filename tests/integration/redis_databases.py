"""Redis database numbers claimed per use, so that two test sessions can share one Redis server.

A test (or a module's stack) that needs a broker claims a free database number of the server:
`SET skill-runner-tests:db:<n> <owner> NX EX <lease>` in database 0. While the claim is held a
thread of the session renews its lease; when the block ends the number is flushed and released.
A session that dies stops renewing, and its numbers are free again after one lease.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

KEY_PREFIX = "skill-runner-tests:db:"
LEASE_SEC = 60  # renewed every sixth of it
CLAIM_TIMEOUT_SEC = 300  # every number held by other sessions: wait for one this long

# renew / release a claim only while it is still this session's
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
_RELEASE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)


class RedisDatabases:
    """The database numbers of the Redis server at `server_url` that this session holds."""

    def __init__(self, server_url: str, lease_sec: float = LEASE_SEC) -> None:
        self.server_url = server_url.rstrip("/")
        self.lease_sec = lease_sec
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.held: set[int] = set()
        self._lock = threading.Lock()
        self._renewer: threading.Thread | None = None

    def _admin(self) -> redis.Redis:
        return redis.Redis.from_url(f"{self.server_url}/0", socket_timeout=2)

    def _numbers(self, admin: redis.Redis) -> range:
        try:
            count = int(admin.config_get("databases").get("databases", 16))
        except redis.ResponseError:  # CONFIG refused (a managed server): Redis's default
            count = 16
        return range(1, count)  # 0 holds the claims

    def claim(self) -> int:
        """A free database number, flushed, held until `release`; fails the test when Redis
        does not answer or no number frees up within CLAIM_TIMEOUT_SEC."""
        try:
            admin = self._admin()
            numbers = self._numbers(admin)
            end = time.monotonic() + CLAIM_TIMEOUT_SEC
            while True:
                for number in numbers:
                    if admin.set(
                        f"{KEY_PREFIX}{number}", self.owner, nx=True, px=int(self.lease_sec * 1000)
                    ):
                        with self._lock:
                            self.held.add(number)
                        self._start_renewing()
                        redis.Redis.from_url(f"{self.server_url}/{number}").flushdb()
                        return number
                if time.monotonic() > end:
                    pytest.fail(
                        f"no free database on the Redis server at {self.server_url} within "
                        f"{CLAIM_TIMEOUT_SEC} s: other sessions hold all {len(numbers)}"
                    )
                time.sleep(0.5)
        except redis.RedisError as exc:
            pytest.fail(
                f"these tests need Redis at {self.server_url} ({exc}); tests/run.sh starts it"
            )

    def release(self, number: int) -> None:
        """Flush database `number` and give it back."""
        with self._lock:
            self.held.discard(number)
        try:
            redis.Redis.from_url(f"{self.server_url}/{number}", socket_timeout=2).flushdb()
            self._admin().eval(_RELEASE, 1, f"{KEY_PREFIX}{number}", self.owner)
        except redis.RedisError:
            pass  # the lease runs out by itself

    def _start_renewing(self) -> None:
        with self._lock:
            if self._renewer is None:
                self._renewer = threading.Thread(
                    target=self._renew_forever, name="redis-db-claims", daemon=True
                )
                self._renewer.start()

    def _renew_forever(self) -> None:
        while True:
            time.sleep(self.lease_sec / 6)
            with self._lock:
                held = sorted(self.held)
            try:
                admin = self._admin()
                for number in held:
                    admin.eval(
                        _RENEW, 1, f"{KEY_PREFIX}{number}", self.owner, int(self.lease_sec * 1000)
                    )
            except redis.RedisError:
                continue  # Redis away for a moment: try again at the next round

    @contextmanager
    def database(self) -> Iterator[str]:
        """The URL of a claimed, flushed database for the block."""
        number = self.claim()
        try:
            yield f"{self.server_url}/{number}"
        finally:
            self.release(number)
