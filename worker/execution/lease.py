"""A running run's lease: a heartbeat for the whole task, and the watch of each process.

The watch's poll (every 0.5 s while a process runs) records the process group, refreshes the
heartbeat and reads the cancel flag. The heartbeat thread covers the phases with no process
(preparing inputs, indexing artifacts), so a long phase with no process never looks like a dead
worker.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.exc import OperationalError

from runner_core.per_process import PerProcess
from runner_core.runtime_options import RuntimeOptions
from runner_core.settings import Settings, run_timeout
from runner_core.store import runs as run_states
from runner_core.store.models import Run
from worker.execution.boxing import run_box
from worker.execution.supervisor import Watch

log = logging.getLogger(__name__)


def aware(value: datetime) -> datetime:
    """SQLite hands back naive datetimes that were stored as UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def beat_interval(settings: Settings) -> float:
    """How often a live run refreshes its lease (a third of it, at most every 2 s)."""
    return max(0.2, min(settings.lease_sec / 3.0, 2.0))


class Heartbeat:
    """Refresh `heartbeat_at` of `run_id` every `interval` seconds while the block runs.

    One daemon thread per process serves every heartbeat of that process, so a short run
    starts and joins no thread of its own. A beat racing the run's finish is harmless: the
    UPDATE only touches a run that is still running."""

    def __init__(
        self,
        connect: Callable,
        run_id: str,
        interval: float,
        attempt: int | None = None,
        away: Callable[[], None] | None = None,
    ) -> None:
        self.connect, self.run_id, self.interval = connect, run_id, interval
        self.attempt = attempt  # beats only while the run is still this claim's
        self.away = away  # told when the database does not answer (worker.recovery.sweep_clock)
        self.due = 0.0

    def __enter__(self) -> Heartbeat:
        _beater.get().add(self)
        return self

    def __exit__(self, *_exc) -> None:
        _beater.get().remove(self)

    def beat(self) -> None:
        try:
            with self.connect() as conn:
                run_states.beat(conn, self.run_id, attempt=self.attempt)
        except Exception as exc:  # a database hiccup must not end the run; the next beat retries
            log.warning("heartbeat of run %s failed", self.run_id, exc_info=True)
            if isinstance(exc, OperationalError) and self.away is not None:
                self.away()


class _Beater:
    """The per-process thread behind every Heartbeat.

    While no run is active the thread wakes every `idle_sec` (the last interval it served), so
    a run that starts only wakes it when its first beat falls before that: a short run costs no
    thread switch."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.active: set[Heartbeat] = set()
        self.idle_sec = 2.0
        self.wake_at = 0.0  # when the thread's current wait ends (0: it is not waiting)
        threading.Thread(target=self._loop, name="heartbeat", daemon=True).start()

    def add(self, heartbeat: Heartbeat) -> None:
        with self.cond:
            heartbeat.due = time.monotonic() + heartbeat.interval
            self.active.add(heartbeat)
            self.idle_sec = heartbeat.interval
            if heartbeat.due < self.wake_at:
                self.cond.notify()

    def remove(self, heartbeat: Heartbeat) -> None:
        with self.cond:
            self.active.discard(heartbeat)

    def _loop(self) -> None:
        while True:
            with self.cond:
                while True:
                    now = time.monotonic()
                    due = [hb for hb in self.active if hb.due <= now]
                    if due:
                        break
                    self.wake_at = min((hb.due for hb in self.active), default=now + self.idle_sec)
                    self.cond.wait(self.wake_at - now)
                self.wake_at = 0.0
                for heartbeat in due:
                    heartbeat.due = now + heartbeat.interval
            for heartbeat in due:
                heartbeat.beat()


_beater: PerProcess[_Beater] = PerProcess(_Beater)  # threads do not cross a fork


def make_watch(
    settings: Settings, connect: Callable, run: Run, pkg, database_away: Callable[[], None]
) -> Watch:
    """Deadline from the skill's automation.timeout_sec (or the default), capped by the server
    maximum and counted from the claim; the poll beats and stops the process on cancel, and
    says when the database is away (`database_away`: the sweep must not judge this lease at
    once)."""
    skill_timeout = (
        pkg.manifest.automation.timeout_sec if pkg is not None and pkg.manifest else None
    )
    requested = RuntimeOptions.from_dict(run.runtime_options).timeout_sec
    timeout = run_timeout(settings, skill_timeout, requested)
    started = aware(run.started_at).timestamp() if run.started_at else time.time()
    deadline = time.monotonic() + max(0.0, started + timeout - time.time())

    def poll(pgid: int) -> bool:
        try:
            with connect() as conn:
                return run_states.beat(conn, run.id, pgid, attempt=run.attempt)
        except OperationalError as exc:  # the database is away for a moment: keep running
            log.warning(
                "lease of run %s not refreshed: %s",
                run.id,
                exc.orig if exc.orig is not None else exc,
            )
            database_away()
            return False

    return Watch(
        deadline=deadline,
        poll=poll,
        grace_sec=settings.kill_grace_sec,
        max_output_bytes=settings.max_output_bytes,
        box=run_box(settings, settings.work_runs_dir / run.id, pkg),  # where it works
    )
