"""The tests' Redis database claims: two sessions on one server never hold the same number, a
number given back is flushed and free again, and a dead session's numbers free themselves."""

from __future__ import annotations

import time

import pytest
import redis

from tests.helpers import wait_for
from tests.integration.redis_databases import KEY_PREFIX, RedisDatabases
from tests.integration.services import REDIS_URL

pytestmark = pytest.mark.integration


def test_two_sessions_never_hold_the_same_number():
    first, second = RedisDatabases(REDIS_URL), RedisDatabases(REDIS_URL)
    taken = [first.claim(), second.claim(), first.claim(), second.claim()]
    try:
        assert len(set(taken)) == 4
        owners = redis.Redis.from_url(f"{REDIS_URL}/0").mget([f"{KEY_PREFIX}{n}" for n in taken])
        assert [o.decode() for o in owners] == [first.owner, second.owner] * 2
    finally:
        for number in taken[0::2]:
            first.release(number)
        for number in taken[1::2]:
            second.release(number)


def test_a_number_given_back_is_flushed_and_can_be_claimed_again():
    claims = RedisDatabases(REDIS_URL)
    with claims.database() as url:
        redis.Redis.from_url(url).set("left", "behind")
        number = int(url.rsplit("/", 1)[1])
    admin = redis.Redis.from_url(f"{REDIS_URL}/0")
    assert admin.get(f"{KEY_PREFIX}{number}") is None
    assert redis.Redis.from_url(url).dbsize() == 0
    other = RedisDatabases(REDIS_URL)
    again = other.claim()
    try:
        assert again <= number  # the lowest free number: this one, unless a lower one freed
    finally:
        other.release(again)


def test_a_claim_is_renewed_while_held_and_expires_when_its_session_dies():
    alive, dead = RedisDatabases(REDIS_URL, lease_sec=2), RedisDatabases(REDIS_URL, lease_sec=2)
    kept = alive.claim()
    lost = dead.claim()
    with dead._lock:  # as a session that stopped renewing
        dead.held.clear()
    admin = redis.Redis.from_url(f"{REDIS_URL}/0")
    try:
        time.sleep(3)  # longer than a lease
        assert admin.get(f"{KEY_PREFIX}{kept}") == alive.owner.encode()
        # expired: free, or already claimed by another session waiting for a number (the
        # suite's sessions run side by side); a renewal under way may hold it one lease more
        wait_for(lambda: admin.get(f"{KEY_PREFIX}{lost}") != dead.owner.encode(), 6, 0.1, "expiry")
    finally:
        alive.release(kept)
