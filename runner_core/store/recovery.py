"""Recovery transitions: runs whose worker is gone, retries, waiting_user runs.

Every transition is a guarded UPDATE, so running the reconciliation twice (two workers
starting at once, a sweep racing a startup) changes nothing the second time.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, or_, select, update
from sqlalchemy.orm import Session

from runner_core.error_codes import ErrorCode
from runner_core.results import RunError
from runner_core.statuses import TERMINAL_STATUSES, RecoveryState, RunStatus
from runner_core.store.cancels import cancel_error_of
from runner_core.store.models import Run, utcnow


def reconcile_interrupted(
    session: Session,
    run_id: str,
    *,
    reaped: bool = True,
    reason: str = "orchestrator_restart_interrupted",
) -> bool:
    """running -> failed ORCHESTRATOR_RESTART_INTERRUPTED with the recovery fields, or
    canceled when a cancel was pending: CANCELED_BY_USER, or the reason its cancel request
    recorded (cancels.parent_ended). The pgid stays recorded when the group could not be reaped
    from here, so the reaper of its host can still find it."""
    now = utcnow()
    canceled = session.scalar(select(Run.cancel_requested_at).where(Run.id == run_id)) is not None
    if canceled:
        cause = cancel_error_of(session, run_id)
        status, error = (
            RunStatus.CANCELED,
            RunError(
                cause.code,
                f"{cause.message} (the worker running it stopped before it could end it)",
                cause.details,
            ).as_dict(),
        )
    else:
        status, error = (
            RunStatus.FAILED,
            RunError(
                ErrorCode.ORCHESTRATOR_RESTART_INTERRUPTED,
                "the worker running this run stopped (lease lost)",
            ).as_dict(),
        )
    values: dict[str, Any] = dict(
        status=status,
        finished_at=now,
        updated_at=now,
        error=error,
        error_code=error["code"],
        recovery_state=RecoveryState.FAILED_RECONCILED,
        recovered_at=now,
        recovery_reason=reason,
    )
    if reaped:
        values["pgid"] = None
    return _apply(session, run_id, (RunStatus.RUNNING,), values)


def requeue_interrupted(session: Session, run_id: str, *, reaped: bool = True) -> bool:
    """running -> queued again (the skill declares retries); the next claim is a new attempt."""
    now = utcnow()
    values: dict[str, Any] = dict(
        status=RunStatus.QUEUED,
        started_at=None,
        heartbeat_at=None,
        worker=None,
        dispatched_at=None,
        updated_at=now,
        recovered_at=now,
        recovery_reason="requeued_after_worker_lost",
    )
    if reaped:
        values["pgid"] = None
    return _apply(session, run_id, (RunStatus.RUNNING,), values)


def keep_waiting(session: Session, run_id: str) -> bool:
    """waiting_user with a session handle and a pending question stays waiting
    (recovered_waiting), once."""
    now = utcnow()
    result = session.execute(
        update(Run)
        .where(
            Run.id == run_id,
            Run.status == RunStatus.WAITING_USER,
            Run.session_handle.is_not(None),
            Run.pending_interaction_id.is_not(None),
            Run.recovery_state != RecoveryState.RECOVERED_WAITING,
        )
        .values(
            recovery_state=RecoveryState.RECOVERED_WAITING,
            recovered_at=now,
            updated_at=now,
            recovery_reason="resumable_waiting_preserved",
        )
    )
    session.commit()
    return cast(CursorResult, result).rowcount == 1


def fail_waiting(session: Session, run_id: str) -> bool:
    """waiting_user without a session handle or a pending question cannot resume: failed
    SESSION_RESUME_FAILED."""
    now = utcnow()
    error = RunError(
        ErrorCode.SESSION_RESUME_FAILED,
        "the run waited for a reply but has no engine session or question to resume",
    ).as_dict()
    result = session.execute(
        update(Run)
        .where(
            Run.id == run_id,
            Run.status == RunStatus.WAITING_USER,
            or_(Run.session_handle.is_(None), Run.pending_interaction_id.is_(None)),
        )
        .values(
            status=RunStatus.FAILED,
            finished_at=now,
            updated_at=now,
            error=error,
            error_code=error["code"],
            pending_interaction_id=None,
            recovery_state=RecoveryState.FAILED_RECONCILED,
            recovered_at=now,
            recovery_reason="session_handle_invalid",
        )
    )
    session.commit()
    return cast(CursorResult, result).rowcount == 1


def runs_in(session: Session, *statuses: str, limit: int = 1000) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.status.in_(statuses)).limit(limit)))


def ended_with_group(session: Session, host: str, limit: int = 500) -> list[Run]:
    """Ended runs that still record a process group on `host` (not reaped when reconciled)."""
    return list(
        session.scalars(
            select(Run)
            .where(
                Run.status.in_(TERMINAL_STATUSES),
                Run.pgid.is_not(None),
                Run.worker.like(host + ":%"),
            )
            .limit(limit)
        )
    )


def clear_pgid(session: Session, run_id: str) -> None:
    session.execute(
        update(Run).where(Run.id == run_id, Run.status != RunStatus.RUNNING).values(pgid=None)
    )
    session.commit()


def _apply(
    session: Session, run_id: str, statuses: tuple[str, ...], values: dict[str, Any]
) -> bool:
    result = session.execute(
        update(Run).where(Run.id == run_id, Run.status.in_(statuses)).values(**values)
    )
    session.commit()
    return cast(CursorResult, result).rowcount == 1
