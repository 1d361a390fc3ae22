"""Fixtures shared by every tier (their logic is in tests.helpers)."""

from __future__ import annotations

import sys
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
