"""Fixtures shared by every tier (their logic is in tests.helpers)."""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers import copy_skills


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    return copy_skills(tmp_path / "skills")


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A flushed Redis database of this session's own for the test (released after)."""
    from tests.integration.services import redis_database  # only the tiers that ask need Redis

    with redis_database() as url:
        yield url


_tier_seconds: defaultdict[str, float] = defaultdict(float)
_tier_tests: defaultdict[str, set[str]] = defaultdict(set)
_started = time.monotonic()


def pytest_runtest_logreport(report) -> None:
    """Adds up each test's setup, call and teardown by tier (its folder under tests/)."""
    parts = report.nodeid.split("/")
    tier = parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0]
    _tier_seconds[tier] += report.duration
    _tier_tests[tier].add(report.nodeid)


def pytest_terminal_summary(terminalreporter) -> None:
    """One line per tier: its tests and their time (tests/README.md keeps the table)."""
    if not _tier_seconds:
        return
    wall = time.monotonic() - _started
    terminalreporter.section("time by tier")
    for tier, seconds in sorted(_tier_seconds.items(), key=lambda item: -item[1]):
        count = len(_tier_tests[tier])
        terminalreporter.write_line(f"{tier:12} {count:5d} tests {seconds / 60:6.1f} min")
    terminalreporter.write_line(
        f"{'all':12} {sum(map(len, _tier_tests.values())):5d} tests {wall / 60:6.1f} min (wall)"
    )


def pytest_sessionfinish(session, exitstatus) -> None:
    """A process a test left running (a worker, a server, a writer) is named and killed, so the
    suite always exits instead of waiting on it."""
    leftovers = psutil.Process().children(recursive=True)
    for proc in leftovers:
        try:
            print(
                f"\nkilling a process a test left running: {proc.pid} {proc.cmdline()[:3]}",
                file=sys.stderr,
            )
            proc.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(leftovers, timeout=10)
