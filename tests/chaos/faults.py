"""The faults of the chaos test and what each one's timeline was.

Each fault is injected and cleared by one function; `Fault` records when, which runs were
running at that moment, and the requests the clients saw fail meanwhile. The recovery figures
are read afterwards from the run rows (`measure`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import psycopg

DISK_HOLD_SEC = 8.0  # how long the data disk stays full
POSTGRES_GAP_SEC = 8.0  # how long Postgres is down


@dataclass
class Fault:
    kind: str
    injected: float = 0.0
    cleared: float = 0.0
    running: list[str] = field(default_factory=list)  # run ids running when it was injected
    skipped: str | None = None  # why it was not injected
    recovery_sec: float | None = None  # cleared -> the first run started since it succeeded
    interrupted: int = 0  # runs ended or requeued by recovery because of it
    reconciled_sec: float | None = None  # injected -> the last of those recovered

    def row(self) -> str:
        if self.skipped:
            return f"{self.kind:17} skipped: {self.skipped}"
        rec = f"{self.recovery_sec:.1f}s" if self.recovery_sec is not None else "never"
        fixed = f", recovered by the sweep {self.reconciled_sec:.1f}s after the fault" if (
            self.reconciled_sec is not None
        ) else ""  # fmt: skip
        return (
            f"{self.kind:17} outage {self.cleared - self.injected:5.1f}s, then a new run "
            f"succeeded after {rec}; {len(self.running)} running at the fault, "
            f"{self.interrupted} interrupted{fixed}"
        )


def epoch(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def running_now(database_url: str) -> list[str]:
    with psycopg.connect(database_url, connect_timeout=5) as conn:
        return [r[0] for r in conn.execute("SELECT id FROM runs WHERE status = 'running'")]


def inject(fault: Fault, database_url: str, action: Callable[[], None]) -> None:
    """Run `action` (inject, wait, clear) and record its timeline."""
    fault.running = running_now(database_url)
    fault.injected = time.time()
    action()
    fault.cleared = time.time()


def measure(fault: Fault, database_url: str) -> None:
    """The fault's recovery figures, from the rows once every run has ended."""
    if fault.skipped:
        return
    with psycopg.connect(database_url) as conn:
        first = conn.execute(
            "SELECT min(finished_at) FROM runs WHERE status = 'succeeded' AND finished_at > %s "
            "AND started_at > %s",
            (datetime.fromtimestamp(fault.cleared).astimezone(),
             datetime.fromtimestamp(fault.injected).astimezone()),
        ).fetchone()  # fmt: skip
        recovered = conn.execute(
            "SELECT recovered_at FROM runs WHERE id = ANY(%s) AND recovered_at > %s",
            (fault.running, datetime.fromtimestamp(fault.injected).astimezone()),
        ).fetchall()
    first_at = epoch(first[0]) if first else None
    fault.recovery_sec = max(0.0, first_at - fault.cleared) if first_at is not None else None
    fault.interrupted = len(recovered)
    if recovered:
        fault.reconciled_sec = max(epoch(r[0]) or 0.0 for r in recovered) - fault.injected
