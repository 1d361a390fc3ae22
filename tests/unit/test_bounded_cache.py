"""An LRU map of bounded size (runner_core.bounded_cache)."""

from __future__ import annotations

import pytest

from runner_core.bounded_cache import BoundedCache


def test_the_least_recently_used_entry_is_dropped_when_full():
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    assert len(cache) == 2


def test_putting_an_existing_key_replaces_it_without_evicting():
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    assert cache.get("a") == 10 and cache.get("b") == 2


def test_pop_and_clear():
    cache: BoundedCache[str, int] = BoundedCache(3)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.pop("a") == 1 and cache.pop("a") is None
    cache.clear()
    assert len(cache) == 0 and cache.get("b") is None


def test_a_size_below_one_is_refused():
    with pytest.raises(ValueError):
        BoundedCache(0)
