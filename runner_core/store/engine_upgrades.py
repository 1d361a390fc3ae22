"""Engine upgrade records: each state change is one guarded UPDATE whose row count says who won,
and the unique `active_engine` lets only one upgrade of an engine be queued or running."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Row, Table, exists, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from runner_core.error_codes import ErrorCode
from runner_core.statuses import ACTIVE_UPGRADE_STATUSES, RunStatus, UpgradeStatus
from runner_core.store.models import EngineUpgrade, Run, utcnow

_upgrades, _runs = cast(Table, EngineUpgrade.__table__), cast(Table, Run.__table__)

STARTED, BUSY, GONE = "started", "busy", "gone"
# runs in these hold the CLI: an upgrade does not start under them (queued ones may wait)
HOLDING_STATUSES = (RunStatus.RUNNING, RunStatus.WAITING_USER)


def active_runs(conn: Connection, engine: str, statuses: tuple[str, ...]) -> int:
    """How many runs of `engine` are in `statuses`."""
    query = select(func.count()).where(_runs.c.engine == engine, _runs.c.status.in_(statuses))
    return conn.scalar(query) or 0


def create(
    conn: Connection,
    *,
    upgrade_id: str,
    engine: str,
    version: str,
    requested_by: str | None,
    log_path: str,
) -> bool:
    """Record a queued upgrade and commit; False (nothing written) when one of `engine` is
    already queued or running."""
    try:
        conn.execute(
            insert(_upgrades),
            {
                "id": upgrade_id,
                "engine": engine,
                "version_requested": version,
                "status": UpgradeStatus.QUEUED,
                "active_engine": engine,
                "requested_by": requested_by,
                "log_path": log_path,
                "created_at": utcnow(),
            },
        )
        conn.commit()
    except IntegrityError:
        conn.rollback()
        return False
    return True


def expire_lost(conn: Connection, engine: str, created_before: datetime) -> int:
    """Fail the queued or running upgrade of `engine` created before `created_before` (its
    message or worker was lost: nothing ends it otherwise); returns how many."""
    done = conn.execute(
        update(_upgrades)
        .where(
            _upgrades.c.engine == engine,
            _upgrades.c.status.in_(ACTIVE_UPGRADE_STATUSES),
            _upgrades.c.created_at < created_before,
        )
        .values(
            status=UpgradeStatus.FAILED,
            active_engine=None,
            ended_at=utcnow(),
            error={
                "code": ErrorCode.ENGINE_UPGRADE_FAILED,
                "message": "lost: no worker ended it within its time limit",
            },
        )
    )
    conn.commit()
    return done.rowcount


def start(conn: Connection, upgrade_id: str) -> str:
    """queued -> running unless a run of its engine is running or waiting for a reply (BUSY:
    it stays queued for the caller to fail); GONE when it is no longer queued."""
    engine = select(_upgrades.c.engine).where(_upgrades.c.id == upgrade_id).scalar_subquery()
    holding = exists().where(_runs.c.engine == engine, _runs.c.status.in_(HOLDING_STATUSES))
    done = conn.execute(
        update(_upgrades)
        .where(
            _upgrades.c.id == upgrade_id,
            _upgrades.c.status == UpgradeStatus.QUEUED,
            ~holding,
        )
        .values(status=UpgradeStatus.RUNNING, started_at=utcnow())
    )
    conn.commit()
    if done.rowcount == 1:
        return STARTED
    status = conn.scalar(select(_upgrades.c.status).where(_upgrades.c.id == upgrade_id))
    return BUSY if status == UpgradeStatus.QUEUED else GONE


def finish(
    conn: Connection,
    upgrade_id: str,
    status: UpgradeStatus,
    *,
    version_installed: str | None = None,
    error: dict[str, Any] | None = None,
) -> bool:
    """End a queued or running upgrade (its engine is free again); False when it had ended."""
    done = conn.execute(
        update(_upgrades)
        .where(_upgrades.c.id == upgrade_id, _upgrades.c.status.in_(ACTIVE_UPGRADE_STATUSES))
        .values(
            status=status,
            active_engine=None,
            ended_at=utcnow(),
            version_installed=version_installed,
            error=error,
        )
    )
    conn.commit()
    return done.rowcount == 1


def get(conn: Connection, upgrade_id: str) -> Row | None:
    return conn.execute(select(_upgrades).where(_upgrades.c.id == upgrade_id)).first()


def latest(conn: Connection, engine: str) -> Row | None:
    """The newest upgrade of `engine`, or None."""
    query = (
        select(_upgrades)
        .where(_upgrades.c.engine == engine)
        .order_by(_upgrades.c.created_at.desc(), _upgrades.c.id.desc())
        .limit(1)
    )
    return conn.execute(query).first()


def latest_statuses(conn: Connection) -> dict[str, str]:
    """engine -> the status of its newest upgrade (engines never upgraded are left out)."""
    newest = (
        select(_upgrades.c.engine, func.max(_upgrades.c.created_at).label("at"))
        .group_by(_upgrades.c.engine)
        .subquery()
    )
    query = select(_upgrades.c.engine, _upgrades.c.status).join(
        newest,
        (newest.c.engine == _upgrades.c.engine) & (newest.c.at == _upgrades.c.created_at),
    )
    return {row.engine: row.status for row in conn.execute(query)}
