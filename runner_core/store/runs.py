"""Run state transitions. Each is one guarded UPDATE, so racing processes cannot double-apply."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import DateTime, func, literal, select, update
from sqlalchemy.orm import Session, aliased

from runner_core.settings import engine_key
from runner_core.store.models import ACTIVE_STATUSES, Run, utcnow

CLAIMED, LIMITED, SKIPPED = "claimed", "limited", "skipped"
# Postgres advisory lock that serialises limited claims across every worker (any constant).
CLAIM_LOCK_KEY = 0x5C1A1117


def claim_run(session: Session, run_id: str, worker: str, task_id: str | None,
              max_running: int = 0, engine_limits: Mapping[str, int] | None = None) -> str:
    """queued -> running when still queued, not canceled and below the running limits.

    Returns CLAIMED, LIMITED (still queued: retry later) or SKIPPED (someone else has it, or
    it ended). `engine_limits` maps an engine key ('script' for script runs) to its maximum.
    The limits are checked inside the UPDATE itself; on Postgres a transaction-scoped
    advisory lock makes concurrent limited claims take turns, so the count a claim sees includes
    every claim committed before it (SQLite writers are serialised by the database lock)."""
    guards = [Run.id == run_id, Run.status == "queued", Run.cancel_requested_at.is_(None)]
    key = engine_key(session.scalar(select(Run.engine).where(Run.id == run_id)))
    engine_limit = (engine_limits or {}).get(key, 0)
    if max_running > 0 or engine_limit > 0:
        if session.get_bind().dialect.name == "postgresql":
            session.execute(select(func.pg_advisory_xact_lock(CLAIM_LOCK_KEY)))
        other = aliased(Run)
        running = select(func.count()).select_from(other).where(other.status == "running")
        if max_running > 0:
            guards.append(running.scalar_subquery() < max_running)
        if engine_limit > 0:
            same_engine = running.where(func.coalesce(other.engine, "script") == key)
            guards.append(same_engine.scalar_subquery() < engine_limit)
    now = utcnow()  # after the lock: a claim that waited for it starts when it got it
    result = session.execute(
        update(Run).where(*guards)
        .values(status="running", started_at=now, heartbeat_at=now, worker=worker, pgid=None,
                celery_task_id=task_id, attempt=Run.attempt + 1, updated_at=now)
        .execution_options(synchronize_session=False))
    session.commit()
    if result.rowcount == 1:
        return CLAIMED
    row = session.execute(select(Run.status, Run.cancel_requested_at)
                          .where(Run.id == run_id)).first()
    limited = (max_running > 0 or engine_limit > 0) and row is not None \
        and row.status == "queued" and row.cancel_requested_at is None
    return LIMITED if limited else SKIPPED


def finish_run(session: Session, run_id: str, status: str, *, error: dict[str, Any] | None = None,
               warnings: list[Any] | None = None, timings: dict[str, Any] | None = None,
               session_handle: str | None = None) -> bool:
    """running -> terminal status. False when the run was no longer running."""
    now = utcnow()
    values: dict[str, Any] = dict(status=status, finished_at=now, updated_at=now, pgid=None,
                                  error=error, error_code=(error or {}).get("code"))
    if warnings is not None:
        values["warnings"] = warnings
    if timings is not None:
        values["timings"] = timings
    if session_handle is not None:
        values["session_handle"] = session_handle
    result = session.execute(
        update(Run).where(Run.id == run_id, Run.status == "running").values(**values))
    session.commit()
    return result.rowcount == 1


def cancel_queued(session: Session, run_id: str) -> bool:
    """queued -> canceled (CANCELED_BY_USER)."""
    return _cancel_idle(session, run_id, ("queued",))


def cancel_idle(session: Session, run_id: str) -> bool:
    """queued or waiting_user (no process runs for either) -> canceled (CANCELED_BY_USER)."""
    return _cancel_idle(session, run_id, ("queued", "waiting_user"))


def _cancel_idle(session: Session, run_id: str, statuses: tuple[str, ...]) -> bool:
    now = utcnow()
    result = session.execute(
        update(Run).where(Run.id == run_id, Run.status.in_(statuses))
        .values(status="canceled", finished_at=now, updated_at=now, error_code="CANCELED_BY_USER",
                error={"code": "CANCELED_BY_USER", "message": "canceled by user"}))
    session.commit()
    return result.rowcount == 1


def request_cancel(session: Session, run_id: str) -> bool:
    """Set the cancel flag on an active run. False when the run is already terminal."""
    now = utcnow()
    result = session.execute(
        update(Run).where(Run.id == run_id, Run.status.in_(ACTIVE_STATUSES))
        .values(cancel_requested_at=now, updated_at=now))
    session.commit()
    return result.rowcount == 1


def beat(session: Session, run_id: str, pgid: int | None = None) -> bool:
    """Refresh the lease (and record the process group); True when the process must stop:
    a cancel was requested, or the run is no longer running (its lease was reconciled)."""
    values: dict[str, Any] = dict(heartbeat_at=utcnow())
    if pgid is not None:
        values["pgid"] = pgid
    session.execute(update(Run).where(Run.id == run_id, Run.status == "running").values(**values))
    session.commit()
    row = session.execute(select(Run.status, Run.cancel_requested_at)
                          .where(Run.id == run_id)).first()
    return row is None or row.status != "running" or row.cancel_requested_at is not None


def mark_enqueued(session: Session, run_id: str, task_id: str) -> None:
    """A message was sent: queued_at keeps the first time, dispatched_at the latest."""
    now = utcnow()
    first = func.coalesce(Run.queued_at, literal(now, DateTime(timezone=True)))
    session.execute(update(Run).where(Run.id == run_id)
                    .values(queued_at=first, dispatched_at=now, celery_task_id=task_id))
    session.commit()


def touch_dispatched(session: Session, run_id: str) -> None:
    """A limited claim re-sent itself with a countdown: its message is alive, do not sweep it."""
    session.execute(update(Run).where(Run.id == run_id, Run.status == "queued")
                    .values(dispatched_at=utcnow()))
    session.commit()


def stale_queued(session: Session, grace: timedelta) -> list[Run]:
    """Queued runs whose last message is older than `grace` and that no worker has claimed."""
    cutoff = utcnow() - grace
    return list(session.scalars(select(Run).where(
        Run.status == "queued", Run.needs_upload.is_(False),
        Run.cancel_requested_at.is_(None),
        func.coalesce(Run.dispatched_at, Run.updated_at) < cutoff).limit(500)))


def expired_leases(session: Session, lease: timedelta) -> list[Run]:
    """Running runs whose heartbeat is older than `lease`."""
    cutoff: datetime = utcnow() - lease
    return list(session.scalars(select(Run).where(Run.status == "running",
                                                  Run.heartbeat_at < cutoff).limit(500)))
