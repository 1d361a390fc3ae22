"""What the management API adds to a job's reads: its conversation state, its file tree and one
file's preview (the run directory as runner_core.run_files shows it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from api import context
from api.errors import ApiError
from api.jobs.rows import JobRow
from runner_core import run_files
from runner_core.error_codes import ErrorCode
from runner_core.statuses import RunStatus
from runner_core.store import interactions


def conversation_state(job: JobRow) -> dict[str, Any]:
    """RunConversationState: the job's status document and `poll_logs`, true while its logs
    still grow (queued or running); a waiting run asks for pending/reply instead."""
    return {
        **{name: getattr(job, name) for name in _STATE_FIELDS},
        "waiting_for_upload": job.waiting_for_upload,
        "poll_logs": job.status in (RunStatus.QUEUED, RunStatus.RUNNING),
        "turn_ended_at": turn_ended_at(job),
    }


def turn_ended_at(job: JobRow) -> datetime | None:
    """When the ended run's last turn ended: when it asked the question the run then waited
    on (a run canceled, decided or timed out while waiting ends later, the wait not being the
    turn's), else when the run finished. None while the run has not ended."""
    if job.finished_at is None or job.started_at is None:
        return None
    if job.interaction_count:
        with context.connect() as conn:
            asked = interactions.last_asked_at(conn, job.run_id)
        if asked is not None and _utc(job.started_at) <= _utc(asked) <= _utc(job.finished_at):
            # as the run's own times are (SQLite hands back naive UTC ones)
            return _utc(asked).replace(tzinfo=job.finished_at.tzinfo and UTC)
    return job.finished_at


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


_STATE_FIELDS = (
    "request_id",
    "run_id",
    "status",
    "skill_id",
    "engine",
    "model",
    "created_at",
    "updated_at",
    "started_at",
    "finished_at",
    "pending_interaction_id",
    "interaction_count",
    "auto_decision_count",
    "last_auto_decision_at",
    "recovery_state",
    "recovered_at",
    "recovery_reason",
    "warnings",
    "error",
    "token_usage",
    "request_kind",
    "parent_request_id",
    "step_name",
)


def files_body(job: JobRow) -> dict[str, Any]:
    entries, truncated = run_files.tree(context.settings().runs_dir / job.run_id)
    return {
        "request_id": job.request_id,
        "status": job.status,
        "entries": [e.__dict__ for e in entries],
        "truncated": truncated,
    }


def preview_body(job: JobRow, path: str) -> dict[str, Any]:
    """One file's preview; 403 RUN_FILE_REFUSED for a path the tree would not show, 404
    RUN_FILE_NOT_FOUND when there is no file there."""
    run_dir = context.settings().runs_dir / job.run_id
    try:
        target = run_files.resolve(run_dir, path)
    except run_files.FileRefused as exc:
        raise ApiError(
            403,
            ErrorCode.RUN_FILE_REFUSED,
            str(exc),
            {"path": path, "reason": exc.reason},
            job.request_id,
        ) from exc
    if not target.is_file():
        raise ApiError(
            404,
            ErrorCode.RUN_FILE_NOT_FOUND,
            f"no file at '{path}' in the run",
            {"path": path},
            job.request_id,
        )
    return {"request_id": job.request_id, **run_files.preview(target, path)}
