"""The claim: queued -> running in one guarded UPDATE, within the deployment's running limits.

A redelivered or duplicated message finds the run no longer queued and does nothing; the
limits are counted inside the same UPDATE, so no two workers can both take the last slot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from sqlalchemy import Connection, Row, Table, bindparam, func, select, update
from sqlalchemy.orm import Session

from runner_core.settings import engine_key
from runner_core.statuses import RunStatus
from runner_core.store.models import Request, Run, utcnow

_runs, _requests = cast(Table, Run.__table__), cast(Table, Request.__table__)

CLAIMED, LIMITED, SKIPPED = "claimed", "limited", "skipped"
# Postgres advisory lock that serialises limited claims across every worker (any constant).
CLAIM_LOCK_KEY = 0x5C1A1117


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
