"""The states a run and a skill install go through, spelled as the API and the database spell
them. Each is a StrEnum, so a member is the plain string in JSON, SQL binds and comparisons."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """A run's status: queued -> running (<-> waiting_user) -> succeeded, failed or canceled."""

    QUEUED = "queued"
    RUNNING = "running"
    WAITING_USER = "waiting_user"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"


# A run in one of these may still change; one in TERMINAL_STATUSES never does.
ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_USER)
TERMINAL_STATUSES = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELED)
# A cancel ends these at once: no process is running for them.
IDLE_STATUSES = (RunStatus.QUEUED, RunStatus.WAITING_USER)


class InstallStatus(StrEnum):
    """A skill package install (POST /v1/skill-packages)."""

    INSTALLING = "installing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class UpgradeStatus(StrEnum):
    """An engine upgrade (POST /v1/engines/{engine}/upgrade): queued -> running -> succeeded or
    failed (a queued one fails at once when runs of its engine hold the CLI)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


# An upgrade in one of these holds its engine: no second one starts meanwhile.
ACTIVE_UPGRADE_STATUSES = (UpgradeStatus.QUEUED, UpgradeStatus.RUNNING)


class RecoveryState(StrEnum):
    """What recovery after a worker's death did to a run (`recovery_state`)."""

    NONE = "none"
    FAILED_RECONCILED = "failed_reconciled"  # its worker died: the run was failed
    RECOVERED_WAITING = "recovered_waiting"  # waiting_user with a session: it keeps waiting


__all__ = [
    "ACTIVE_STATUSES",
    "ACTIVE_UPGRADE_STATUSES",
    "IDLE_STATUSES",
    "TERMINAL_STATUSES",
    "UpgradeStatus",
    "InstallStatus",
    "RecoveryState",
    "RunStatus",
]
