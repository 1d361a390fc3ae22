"""Run state transitions. Each is one guarded UPDATE, so racing processes cannot double-apply."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import cache
from typing import Any, cast

from sqlalchemy import (
    Connection,
    CursorResult,
    DateTime,
    Row,
    Table,
    bindparam,
    func,
    literal,
    select,
    update,
)
from sqlalchemy.orm import Session

from runner_core.error_codes import ErrorCode
from runner_core.settings import engine_key
from runner_core.statuses import ACTIVE_STATUSES, IDLE_STATUSES, RunStatus
from runner_core.store.models import Request, Run, utcnow

CLAIMED, LIMITED, SKIPPED = "claimed", "limited", "skipped"
# Postgres advisory lock that serialises limited claims across every worker (any constant).
CLAIM_LOCK_KEY = 0x5C1A1117


_runs, _requests = cast(Table, Run.__table__), cast(Table, Request.__table__)


def _claim_statement(*limit_guards):
    """queued -> running for one run id, returning the whole row and the JSON body of its
    request (`request_payload`: what the run's input.json records) in one round trip."""
    c = _runs.c
    payload = (
        select(_requests.c.payload)
        .where(_requests.c.id == c.request_id)
        .scalar_subquery()
        .label("request_payload")
    )
    return (
        update(_runs)
        .where(
            c.id == bindparam("run_id_"),
            c.status == RunStatus.QUEUED,
            c.cancel_requested_at.is_(None),
            *limit_guards,
        )
        .values(
            status=RunStatus.RUNNING,
            started_at=bindparam("now_", type_=c.started_at.type),
            heartbeat_at=bindparam("now_"),
            updated_at=bindparam("now_"),
            worker=bindparam("worker_", type_=c.worker.type),
            pgid=None,
            celery_task_id=bindparam("task_id_", type_=c.celery_task_id.type),
            attempt=c.attempt + 1,
        )
        .returning(*c, payload)
    )


_CLAIM = _claim_statement()  # built once: no per-run statement construction or cache key


def claim_run(
    session: Session | Connection,
    run_id: str,
    worker: str,
    task_id: str | None,
    max_running: int = 0,
    engine_limits: Mapping[str, int] | None = None,
) -> tuple[str, Row | None]:
    """queued -> running when still queued, not canceled and below the running limits.

    Returns (CLAIMED, the claimed run's row: every column as an attribute, read-only, plus
    `request_payload`),
    (LIMITED, None) when the run stays
    queued to be retried later, or (SKIPPED, None) when someone else has it or it ended.
    `engine_limits` maps an engine key ('script' for script runs) to its maximum.
    The limits are checked inside the UPDATE itself; on Postgres a transaction-scoped
    advisory lock makes concurrent limited claims take turns, so the count a claim sees includes
    every claim committed before it (SQLite writers are serialised by the database lock)."""
    statement, limited = _CLAIM, False
    if max_running > 0 or engine_limits:
        statement, limited = _limited_claim(session, run_id, max_running, engine_limits or {})
    now = utcnow()  # after the lock: a claim that waited for it starts when it got it
    row = session.execute(
        statement, {"run_id_": run_id, "now_": now, "worker_": worker, "task_id_": task_id}
    ).first()
    session.commit()
    if row is not None:
        return CLAIMED, row
    if not limited:
        return SKIPPED, None
    state = session.execute(
        select(_runs.c.status, _runs.c.cancel_requested_at).where(_runs.c.id == run_id)
    ).first()
    still_queued = (
        state is not None and state.status == RunStatus.QUEUED and state.cancel_requested_at is None
    )
    return (LIMITED if still_queued else SKIPPED), None


def _limited_claim(
    session: Session | Connection, run_id: str, max_running: int, engine_limits: Mapping[str, int]
):
    """The claim with running-limit guards (and the Postgres advisory lock taken)."""
    key = engine_key(session.scalar(select(_runs.c.engine).where(_runs.c.id == run_id)))
    engine_limit = engine_limits.get(key, 0)
    if max_running <= 0 and engine_limit <= 0:
        return _CLAIM, False
    dialect = session.dialect if isinstance(session, Connection) else session.get_bind().dialect
    if dialect.name == "postgresql":
        session.execute(select(func.pg_advisory_xact_lock(CLAIM_LOCK_KEY)))
    other = _runs.alias("other")
    running = select(func.count()).select_from(other).where(other.c.status == RunStatus.RUNNING)
    guards = []
    if max_running > 0:
        guards.append(running.scalar_subquery() < max_running)
    if engine_limit > 0:
        same_engine = running.where(func.coalesce(other.c.engine, "script") == key)
        guards.append(same_engine.scalar_subquery() < engine_limit)
    return _claim_statement(*guards), True


_FINISH_OPTIONAL = ("warnings", "timings", "session_handle", "token_usage")


@cache
def _finish_statement(optional: tuple[str, ...]):
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
    return (
        update(_runs)
        .where(c.id == bindparam("run_id_"), c.status == RunStatus.RUNNING)
        .values(**values)
    )


def finish_run(
    session: Session | Connection,
    run_id: str,
    status: str,
    *,
    error: dict[str, Any] | None = None,
    warnings: list[Any] | None = None,
    timings: dict[str, Any] | None = None,
    session_handle: str | None = None,
    token_usage: dict[str, int] | None = None,
) -> bool:
    """running -> terminal status. False when the run was no longer running."""
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
    result = session.execute(_finish_statement(optional), params)
    session.commit()
    return cast(CursorResult, result).rowcount == 1


def cancel_queued(session: Session, run_id: str) -> bool:
    """queued -> canceled (CANCELED_BY_USER)."""
    return _cancel_idle(session, run_id, (RunStatus.QUEUED,))


def cancel_idle(session: Session, run_id: str) -> bool:
    """queued or waiting_user (no process runs for either) -> canceled (CANCELED_BY_USER)."""
    return _cancel_idle(session, run_id, IDLE_STATUSES)


def _cancel_idle(session: Session, run_id: str, statuses: tuple[str, ...]) -> bool:
    now = utcnow()
    result = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status.in_(statuses))
        .values(
            status=RunStatus.CANCELED,
            finished_at=now,
            updated_at=now,
            error_code=ErrorCode.CANCELED_BY_USER,
            error={"code": ErrorCode.CANCELED_BY_USER, "message": "canceled by user"},
        )
    )
    session.commit()
    return cast(CursorResult, result).rowcount == 1


def request_cancel(session: Session, run_id: str) -> bool:
    """Set the cancel flag on an active run. False when the run is already terminal."""
    now = utcnow()
    result = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status.in_(ACTIVE_STATUSES))
        .values(cancel_requested_at=now, updated_at=now)
    )
    session.commit()
    return cast(CursorResult, result).rowcount == 1


_BEAT = (
    update(_runs)
    .where(_runs.c.id == bindparam("run_id_"), _runs.c.status == RunStatus.RUNNING)
    .values(heartbeat_at=bindparam("now_", type_=_runs.c.heartbeat_at.type))
    .returning(_runs.c.cancel_requested_at)
)
_BEAT_PGID = _BEAT.values(pgid=bindparam("pgid_", type_=_runs.c.pgid.type))


def beat(session: Session | Connection, run_id: str, pgid: int | None = None) -> bool:
    """Refresh the lease (and record the process group); True when the process must stop:
    a cancel was requested, or the run is no longer running (its lease was reconciled)."""
    params: dict[str, Any] = {"run_id_": run_id, "now_": utcnow()}
    if pgid is not None:
        params["pgid_"] = pgid
    row = session.execute(_BEAT if pgid is None else _BEAT_PGID, params).first()
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


def expire_uploads(session: Session, waited: timedelta) -> list[str]:
    """Runs still waiting for their input upload after `waited` -> failed (UPLOAD_TIMEOUT): a
    client that never uploads must not hold a job open forever. Returns the ids ended."""
    now = utcnow()
    waiting = (Run.status == RunStatus.QUEUED, Run.needs_upload.is_(True))
    ids = list(
        session.scalars(select(Run.id).where(*waiting, Run.created_at < now - waited).limit(500))
    )
    error = {
        "code": ErrorCode.UPLOAD_TIMEOUT,
        "message": f"no input upload arrived within "
        f"{waited.total_seconds():g} s; create the job again",
    }
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


def expired_leases(session: Session, lease: timedelta) -> list[Run]:
    """Running runs whose heartbeat is older than `lease`."""
    cutoff: datetime = utcnow() - lease
    return list(
        session.scalars(
            select(Run).where(Run.status == RunStatus.RUNNING, Run.heartbeat_at < cutoff).limit(500)
        )
    )
