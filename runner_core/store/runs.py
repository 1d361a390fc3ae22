"""Run state transitions. Each is one guarded UPDATE, so racing processes cannot double-apply."""

from __future__ import annotations

from datetime import timedelta
from functools import cache
from typing import Any, cast

from sqlalchemy import (
    Connection,
    CursorResult,
    DateTime,
    Table,
    bindparam,
    func,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session

from runner_core.error_codes import ErrorCode
from runner_core.results import RunError
from runner_core.statuses import RunStatus
from runner_core.store.models import Run, utcnow

_runs = cast(Table, Run.__table__)

_FINISH_OPTIONAL = ("warnings", "timings", "session_handle", "token_usage")


@cache
def _finish_statement(optional: tuple[str, ...], of_attempt: bool = False):
    c = _runs.c
    values = dict(
        status=bindparam("status_", type_=c.status.type),
        finished_at=bindparam("now_", type_=c.finished_at.type),
        updated_at=bindparam("now_"),
        pgid=None,
        error=bindparam("error_", type_=c.error.type),
        error_code=bindparam("error_code_", type_=c.error_code.type),
    )
    values.update({name: bindparam(f"{name}_", type_=c[name].type) for name in optional})
    return update(_runs).where(*_running(of_attempt)).values(**values)


def _running(of_attempt: bool) -> list:
    """The run, while running; with `of_attempt`, only while it is still that claim's (a run
    requeued after its lease expired and claimed again belongs to the new attempt)."""
    c = _runs.c
    where = [c.id == bindparam("run_id_"), c.status == RunStatus.RUNNING]
    if of_attempt:
        where.append(c.attempt == bindparam("attempt_", type_=c.attempt.type))
    return where


def finish_run(
    session: Session | Connection,
    run_id: str,
    status: str,
    *,
    error: dict[str, Any] | None = None,
    warnings: list[Any] | None = None,
    timings: dict[str, Any] | None = None,
    session_handle: str | None = None,
    token_usage: dict[str, Any] | None = None,
    attempt: int | None = None,
    commit: bool = True,
) -> bool:
    """running -> terminal status. False when the run was no longer running, or, with
    `attempt`, no longer that attempt's: a stale worker never records over a newer claim.
    `commit=False` leaves the transaction open for the caller's next statement."""
    given = {
        "warnings": warnings,
        "timings": timings,
        "session_handle": session_handle,
        "token_usage": token_usage,
    }
    optional = tuple(name for name in _FINISH_OPTIONAL if given[name] is not None)
    params = {
        "run_id_": run_id,
        "status_": status,
        "now_": utcnow(),
        "error_": error,
        "error_code_": (error or {}).get("code"),
    }
    params.update({f"{name}_": given[name] for name in optional})
    if attempt is not None:
        params["attempt_"] = attempt
    result = session.execute(_finish_statement(optional, attempt is not None), params)
    if commit:
        session.commit()
    return cast(CursorResult, result).rowcount == 1


def ran_skill(
    session: Session | Connection,
    run_id: str,
    attempt: int,
    skill_version: str | None,
    cache_key: str | None,
) -> bool:
    """Record the skill version a claimed run actually runs and the cache key of those files
    (an install between the run's creation and its start changes both); only while the run
    is still that attempt's."""
    result = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status == RunStatus.RUNNING, Run.attempt == attempt)
        .values(skill_version=skill_version, cache_key=cache_key, updated_at=utcnow())
    )
    session.commit()
    return cast(CursorResult, result).rowcount == 1


def requeue_failed(session: Session, run_id: str) -> bool:
    """running -> queued again after a failed attempt (a skill.json `retry`), unless a cancel
    was asked for; the next claim is a new attempt."""
    now = utcnow()
    result = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status == RunStatus.RUNNING, Run.cancel_requested_at.is_(None))
        .values(
            status=RunStatus.QUEUED,
            started_at=None,
            heartbeat_at=None,
            worker=None,
            pgid=None,
            updated_at=now,
            recovery_reason="retry_after_failure",
        )
    )
    session.commit()
    return cast(CursorResult, result).rowcount == 1


@cache
def _beat_statement(with_pgid: bool, of_attempt: bool):
    statement = (
        update(_runs)
        .where(*_running(of_attempt))
        .values(heartbeat_at=bindparam("now_", type_=_runs.c.heartbeat_at.type))
        .returning(_runs.c.cancel_requested_at)
    )
    if with_pgid:
        statement = statement.values(pgid=bindparam("pgid_", type_=_runs.c.pgid.type))
    return statement


def beat(
    session: Session | Connection, run_id: str, pgid: int | None = None, attempt: int | None = None
) -> bool:
    """Refresh the lease (and record the process group); True when the process must stop:
    a cancel was requested, or the run is no longer running (its lease was reconciled) or, with
    `attempt`, no longer this attempt's (requeued and claimed again)."""
    params: dict[str, Any] = {"run_id_": run_id, "now_": utcnow()}
    if pgid is not None:
        params["pgid_"] = pgid
    if attempt is not None:
        params["attempt_"] = attempt
    row = session.execute(_beat_statement(pgid is not None, attempt is not None), params).first()
    session.commit()
    return row is None or row.cancel_requested_at is not None


def mark_enqueued(session: Session, run_id: str, task_id: str) -> None:
    """A message was sent: queued_at keeps the first time, dispatched_at the latest."""
    now = utcnow()
    first = func.coalesce(Run.queued_at, literal(now, DateTime(timezone=True)))
    session.execute(
        update(Run)
        .where(Run.id == run_id)
        .values(queued_at=first, dispatched_at=now, celery_task_id=task_id)
    )
    session.commit()


def touch_dispatched(session: Session | Connection, run_id: str) -> None:
    """A limited claim re-sent itself with a countdown: its message is alive, do not sweep it."""
    session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status == RunStatus.QUEUED)
        .values(dispatched_at=utcnow())
    )
    session.commit()


def stale_queued(session: Session, grace: timedelta) -> list[Run]:
    """Queued runs whose last message is older than `grace` and that no worker has claimed."""
    cutoff = utcnow() - grace
    return list(
        session.scalars(
            select(Run)
            .where(
                Run.status == RunStatus.QUEUED,
                Run.needs_upload.is_(False),
                Run.cancel_requested_at.is_(None),
                func.coalesce(Run.dispatched_at, Run.updated_at) < cutoff,
            )
            .limit(500)
        )
    )


def take_resend(session: Session, run_id: str, grace: timedelta) -> bool:
    """Mark a stale queued run as being sent again now; False when it no longer is stale (a
    concurrent sweep took it first, or a worker claimed it): only one sweep sends it."""
    now = utcnow()
    result = session.execute(
        update(Run)
        .where(
            Run.id == run_id,
            Run.status == RunStatus.QUEUED,
            func.coalesce(Run.dispatched_at, Run.updated_at) < now - grace,
        )
        .values(dispatched_at=now)
    )
    session.commit()
    return cast(CursorResult, result).rowcount == 1


def _long_queued(waited: timedelta) -> tuple:
    """Queued (not waiting for an upload) since before `waited` ago: first sent then, or made
    then when never sent."""
    since = func.coalesce(Run.queued_at, Run.created_at)
    return (Run.status == RunStatus.QUEUED, Run.needs_upload.is_(False), since < utcnow() - waited)


def long_queued(session: Session, waited: timedelta, limit: int = 500) -> list[Run]:
    """Runs still queued `waited` after they were first sent (resends keep that time)."""
    return list(session.scalars(select(Run).where(*_long_queued(waited)).limit(limit)))


def taken_since(session: Session, waited: timedelta, limit: int = 500) -> list[Run]:
    """Runs a worker claimed within `waited`, or running now: each one's queue is served."""
    since = utcnow() - waited
    return list(
        session.scalars(
            select(Run)
            .where(or_(Run.status == RunStatus.RUNNING, Run.started_at >= since))
            .order_by(Run.started_at.desc())
            .limit(limit)
        )
    )


def fail_queued(session: Session, run_id: str, error: dict[str, Any], waited: timedelta) -> bool:
    """queued -> failed with `error`, only while the run is still queued `waited` after it was
    first sent (a worker that claimed it meanwhile wins)."""
    now = utcnow()
    result = session.execute(
        update(Run)
        .where(Run.id == run_id, *_long_queued(waited))
        .values(
            status=RunStatus.FAILED,
            finished_at=now,
            updated_at=now,
            error=error,
            error_code=error.get("code"),
        )
    )
    session.commit()
    return cast(CursorResult, result).rowcount == 1


def fail_awaiting_upload(session: Session, run_id: str, error: RunError) -> bool:
    """A run still waiting for its input upload -> failed with `error` (its skill was
    uninstalled meanwhile: the run can never start). False when it no longer waits."""
    now = utcnow()
    result = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status == RunStatus.QUEUED, Run.needs_upload.is_(True))
        .values(
            status=RunStatus.FAILED,
            finished_at=now,
            updated_at=now,
            error_code=error.code,
            error=error.as_dict(),
        )
    )
    session.commit()
    return cast(CursorResult, result).rowcount == 1


def expire_uploads(session: Session, waited: timedelta) -> list[str]:
    """Runs still waiting for their input upload after `waited` -> failed (UPLOAD_TIMEOUT): a
    client that never uploads must not hold a job open forever. Returns the ids ended."""
    now = utcnow()
    waiting = (Run.status == RunStatus.QUEUED, Run.needs_upload.is_(True))
    ids = list(
        session.scalars(select(Run.id).where(*waiting, Run.created_at < now - waited).limit(500))
    )
    error = RunError(
        ErrorCode.UPLOAD_TIMEOUT,
        f"no input upload arrived within {waited.total_seconds():g} s; create the job again",
    ).as_dict()
    ended = [
        run_id
        for run_id in ids
        if cast(
            CursorResult,
            session.execute(
                update(Run)
                .where(Run.id == run_id, *waiting)
                .values(
                    status=RunStatus.FAILED,
                    finished_at=now,
                    updated_at=now,
                    error_code=ErrorCode.UPLOAD_TIMEOUT,
                    error=error,
                )
            ),
        ).rowcount
        == 1
    ]
    session.commit()
    return ended
