"""Run state transitions. Each is one guarded UPDATE, so racing processes cannot double-apply."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from runner_core.store.models import ACTIVE_STATUSES, Run, utcnow


def claim_run(session: Session, run_id: str, worker: str, task_id: str | None) -> bool:
    """queued -> running, only if still queued and not canceled. False: someone else has it."""
    now = utcnow()
    result = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status == "queued", Run.cancel_requested_at.is_(None))
        .values(status="running", started_at=now, heartbeat_at=now, worker=worker,
                celery_task_id=task_id, attempt=Run.attempt + 1, updated_at=now))
    session.commit()
    return result.rowcount == 1


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
    now = utcnow()
    result = session.execute(
        update(Run).where(Run.id == run_id, Run.status == "queued")
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
    """Refresh the lease; returns True when a cancel was requested."""
    values: dict[str, Any] = dict(heartbeat_at=utcnow())
    if pgid is not None:
        values["pgid"] = pgid
    session.execute(update(Run).where(Run.id == run_id, Run.status == "running").values(**values))
    session.commit()
    flag = session.execute(select(Run.cancel_requested_at).where(Run.id == run_id)).scalar()
    return flag is not None


def mark_enqueued(session: Session, run_id: str, task_id: str) -> None:
    session.execute(update(Run).where(Run.id == run_id)
                    .values(queued_at=utcnow(), celery_task_id=task_id))
    session.commit()


def stale_queued(session: Session, grace: timedelta) -> list[Run]:
    """Queued runs submitted longer than `grace` ago that no worker has claimed."""
    cutoff = utcnow() - grace
    return list(session.scalars(select(Run).where(
        Run.status == "queued", Run.needs_upload.is_(False),
        Run.cancel_requested_at.is_(None),
        (Run.queued_at.is_(None)) | (Run.queued_at < cutoff)).limit(500)))


def expired_leases(session: Session, lease: timedelta) -> list[Run]:
    """Running runs whose heartbeat is older than `lease`."""
    cutoff: datetime = utcnow() - lease
    return list(session.scalars(select(Run).where(Run.status == "running",
                                                  Run.heartbeat_at < cutoff).limit(500)))


def reconcile_interrupted(session: Session, run_id: str) -> bool:
    """running -> failed ORCHESTRATOR_RESTART_INTERRUPTED, with the recovery fields (seed §6)."""
    now = utcnow()
    error = {"code": "ORCHESTRATOR_RESTART_INTERRUPTED",
             "message": "the worker running this run stopped (its lease expired)"}
    result = session.execute(
        update(Run).where(Run.id == run_id, Run.status == "running")
        .values(status="failed", finished_at=now, updated_at=now, pgid=None, error=error,
                error_code=error["code"], recovery_state="failed_reconciled", recovered_at=now,
                recovery_reason="orchestrator_restart_interrupted"))
    session.commit()
    return result.rowcount == 1
