"""What POST and GET /v1/engines/{engine}/upgrade do apart from HTTP: refuse what cannot be
installed or would pull the CLI from under a run, record the upgrade, send it to a worker by
task name (the API never imports the worker), and show the newest one with its log's tail."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import Row

from api import auth, context
from api.catalog import info_or_404
from api.errors import ApiError
from runner_core.engines import RETIRED, get_adapter
from runner_core.engines.catalog import tested_versions, version_number
from runner_core.engines.packages import package_of
from runner_core.engines.upgrade import LATEST, engines_prefix, log_tail, version_error
from runner_core.error_codes import ErrorCode
from runner_core.settings import task_time_limits
from runner_core.statuses import ACTIVE_STATUSES, UpgradeStatus
from runner_core.store import engine_upgrades
from runner_core.store.models import utcnow

LOG_DIR = "engine-upgrades"  # under the data directory: <id>.log


def request_upgrade(engine: str, version: Any) -> dict[str, Any]:
    """Check, record and send one upgrade; its body (202) or an ApiError."""
    check_upgradable(engine, version)
    settings = context.settings()
    upgrade_id = str(uuid.uuid4())
    with context.connect() as conn:
        # a queued or running upgrade older than any could last lost its message or worker
        lost = settings.engine_upgrade_timeout_sec + settings.max_timeout_sec + 120
        engine_upgrades.expire_lost(conn, engine, utcnow() - timedelta(seconds=lost))
        active = engine_upgrades.active_runs(conn, engine, ACTIVE_STATUSES)
        if active:
            raise ApiError(
                409,
                ErrorCode.ENGINE_BUSY,
                f"{active} run(s) of {engine} are queued, running or waiting; upgrade when "
                "they have ended",
                {"engine": engine, "active_runs": active},
            )
        created = engine_upgrades.create(
            conn,
            upgrade_id=upgrade_id,
            engine=engine,
            version=version,
            requested_by=auth.owner(),
            log_path=f"{LOG_DIR}/{upgrade_id}.log",
        )
        if not created:
            raise ApiError(
                409,
                ErrorCode.ENGINE_UPGRADE_IN_PROGRESS,
                f"an upgrade of {engine} is already queued or running",
                {"engine": engine},
            )
        limits = task_time_limits(settings.engine_upgrade_timeout_sec)
        if context.queue().send_upgrade(upgrade_id, limits) is None:
            error = {"code": ErrorCode.ENGINE_UPGRADE_FAILED, "message": "the broker is down"}
            engine_upgrades.finish(conn, upgrade_id, UpgradeStatus.FAILED, error=error)
            raise ApiError(
                503,
                ErrorCode.ENGINE_UPGRADE_FAILED,
                "the upgrade could not be sent to a worker (the broker is down); ask again",
                {"engine": engine, "upgrade_id": upgrade_id},
            )
        row = engine_upgrades.get(conn, upgrade_id)
    assert row is not None
    return upgrade_body(row, with_log=False)


def check_upgradable(engine: str, version: Any) -> None:
    """404 unknown engine, 400 retired engine or a version npm could misread, 409 when this
    service does not install the engine's CLI itself."""
    info_or_404(engine)
    if engine in RETIRED:
        raise ApiError(
            400,
            ErrorCode.ENGINE_RETIRED,
            f"engine '{engine}' is retired: {RETIRED[engine]}",
            {"engine": engine, "reason": RETIRED[engine]},
        )
    problem = version_error(version)
    if problem is not None:
        raise ApiError(
            400,
            ErrorCode.ENGINE_VERSION_INVALID,
            problem,
            {"engine": engine, "version": version if isinstance(version, str) else None},
        )
    _prefix, why_not = engines_prefix(get_adapter(engine).binary)
    if package_of(engine) is None or why_not is not None:
        raise ApiError(
            409,
            ErrorCode.ENGINE_NOT_UPGRADABLE,
            why_not or f"{engine} has no npm package this service installs",
            {"engine": engine},
        )


def latest_upgrade(engine: str) -> dict[str, Any]:
    """The newest upgrade of `engine` with its log's tail; `status: idle` when none was asked."""
    info_or_404(engine)
    with context.connect() as conn:
        row = engine_upgrades.latest(conn, engine)
    if row is None:
        return {"engine": engine, "status": "idle", "upgrade_status": "idle"}
    return upgrade_body(row, with_log=True)


def upgrade_statuses() -> dict[str, str]:
    """engine -> its `upgrade_status`: its newest upgrade's status (idle: none)."""
    with context.connect() as conn:
        return engine_upgrades.latest_statuses(conn)


def upgrade_body(row: Row, *, with_log: bool) -> dict[str, Any]:
    """An upgrade as the API shows it: whether the version is tested (of the installed version
    once known, else of the one asked; `latest` is unknown until installed), and a warning
    when it is not."""
    version = row.version_installed or row.version_requested
    tested = version != LATEST and version_number(version) in tested_versions(row.engine)
    body: dict[str, Any] = {
        "upgrade_id": row.id,
        "engine": row.engine,
        "version": row.version_requested,
        "version_requested": row.version_requested,
        "version_installed": row.version_installed,
        "status": row.status,
        "upgrade_status": row.status,
        "requested_by": row.requested_by,
        "error": row.error,
        "log_path": row.log_path,
        "created_at": row.created_at,
        "started_at": row.started_at,
        "ended_at": row.ended_at,
        "tested": tested,
        "tested_versions": tested_versions(row.engine),
        "warnings": [] if tested else [_untested(row.engine, version)],
    }
    if with_log:
        body["log_tail"] = log_tail(context.settings().data_dir / row.log_path)
    return body


def _untested(engine: str, version: str) -> dict[str, str]:
    if version == LATEST:
        message = (
            f"'latest' of {engine} is only known once installed; the engine tests "
            f"(docs/engine-matrix.md) passed on {', '.join(tested_versions(engine)) or 'none'}"
        )
    else:
        message = (
            f"{engine} {version} is not in the tested matrix (docs/engine-matrix.md): the "
            "engine tests have not passed on it"
        )
    return {"code": ErrorCode.ENGINE_VERSION_UNTESTED, "message": message}
