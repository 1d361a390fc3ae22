"""The engine upgrade task: start the recorded upgrade unless runs of its engine hold the CLI,
npm-install the version (runner_core.engines.upgrade), record how it ended."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from runner_core.engines import get_adapter
from runner_core.engines.upgrade import InstallOutcome, engines_prefix, install_version
from runner_core.error_codes import ErrorCode
from runner_core.queues import UPGRADE_ENGINE
from runner_core.statuses import UpgradeStatus
from runner_core.store import engine_upgrades
from worker import context
from worker.context import connect

log = logging.getLogger(__name__)


@shared_task(name=UPGRADE_ENGINE)
def upgrade_engine(upgrade_id: str) -> str:
    """Run one recorded upgrade; a redelivered message finds it no longer queued and stops."""
    with connect() as conn:
        started = engine_upgrades.start(conn, upgrade_id)
        row = engine_upgrades.get(conn, upgrade_id)
    if started == engine_upgrades.GONE or row is None:
        return "skipped"
    if started == engine_upgrades.BUSY:
        message = f"a run of {row.engine} was running when the upgrade was to start; ask again"
        return _record(upgrade_id, InstallOutcome(None, ErrorCode.ENGINE_BUSY, message))
    return _record(upgrade_id, _install(row))


def _install(row) -> InstallOutcome:
    settings = context.settings()
    binary = get_adapter(row.engine).binary
    prefix, why_not = engines_prefix(binary)
    if prefix is None:
        return InstallOutcome(None, ErrorCode.ENGINE_NOT_UPGRADABLE, why_not)
    log.info("engine upgrade %s: %s %s into %s", row.id, row.engine, row.version_requested, prefix)
    try:
        return install_version(
            row.engine,
            binary,
            row.version_requested,
            prefix,
            settings.data_dir / row.log_path,
            settings.engine_upgrade_timeout_sec,
        )
    except SoftTimeLimitExceeded:  # npm's group was killed on the way out
        return InstallOutcome(None, ErrorCode.TIMEOUT, "the task's soft time limit was reached")
    except Exception as exc:  # recorded, not left running until it expires
        log.exception("engine upgrade %s failed", row.id)
        return InstallOutcome(None, ErrorCode.ENGINE_UPGRADE_FAILED, f"{type(exc).__name__}: {exc}")


def _record(upgrade_id: str, outcome: InstallOutcome) -> str:
    status = UpgradeStatus.SUCCEEDED if outcome.succeeded else UpgradeStatus.FAILED
    with connect() as conn:
        engine_upgrades.finish(
            conn,
            upgrade_id,
            status,
            version_installed=outcome.version_installed,
            error=outcome.error(),
        )
    log.info("engine upgrade %s: %s %s", upgrade_id, status, outcome.message or "")
    return status
