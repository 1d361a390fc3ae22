"""The queue bound (SKILL_RUNNER_QUEUE_MAX) without counting the whole queue on every POST.

Counting the queued runs reads one index entry per run, so with a backlog of thousands every
POST paid for all of them. Each API process now keeps its last count for FRESH_SEC and adds
the runs it accepted since. A POST that would be refused counts again first, so no run is
refused on a stale number; runs other processes accepted within FRESH_SEC may pass the bound
(docs/operating.md, "Limits").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sqlalchemy import Connection, func, select

from runner_core.statuses import RunStatus
from runner_core.store.models import Run

FRESH_SEC = 0.5

# The bound counts runs sent to the workers: jobs waiting for their upload are in no queue,
# and a client that never uploads must not fill it.
_QUEUED_COUNT = (
    select(func.count())
    .select_from(Run.__table__)
    .where(Run.__table__.c.status == RunStatus.QUEUED, Run.__table__.c.queued_at.is_not(None))
)


def count_queued(conn: Connection) -> int:
    return conn.execute(_QUEUED_COUNT).scalar_one()


class QueueBound:
    """One API process's view of how many runs are queued."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._counted: int | None = None
        self._counted_at = 0.0
        self._accepted = 0  # runs this process accepted since the count

    def full(self, conn: Connection, limit: int) -> int | None:
        """The number of queued runs when it is `limit` or more (then it was just counted),
        else None."""
        with self._lock:
            fresh = self._counted is not None and self._clock() - self._counted_at < FRESH_SEC
            if fresh and (self._counted or 0) + self._accepted < limit:
                return None
        queued = count_queued(conn)
        with self._lock:
            self._counted, self._counted_at, self._accepted = queued, self._clock(), 0
        return queued if queued >= limit else None

    def accepted(self) -> None:
        """A run of this process was committed as queued."""
        with self._lock:
            self._accepted += 1
