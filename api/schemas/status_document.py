"""The JobStatus document of a JobRow, written directly for pages of jobs.

Dumping a page through marshmallow cost about 0.12 ms a row, most of a list request; this
builds the same dict in a tenth of that. tests/component/test_status_document.py pins it to
`JobStatus().dump()` field by field, and fails when the schema gains a field this does not write.
"""

from __future__ import annotations

from typing import Any

from api.jobs import workspace as run_files
from api.jobs.rows import JobRow
from api.schemas.output_fields import iso
from runner_core.workspace_reuse import result_json_file


def status_document(job: JobRow) -> dict[str, Any]:
    """What `JobStatus().dump(job)` returns."""
    workspace = run_files.workspace_dir(job.run_id)
    return {
        "request_id": _text(job.request_id),
        "run_id": _text(job.run_id),
        "status": _text(job.status),
        "skill_id": _text(job.skill_id),
        "skill_version": _text(job.skill_version),
        "engine": _text(job.engine),
        "model": _text(job.model),
        "cache_hit": job.cache_hit,
        "created_at": iso(job.created_at),
        "updated_at": iso(job.updated_at),
        "queued_at": iso(job.queued_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
        "worker": _text(job.worker),
        "attempt": _integer(job.attempt),
        "waiting_for_upload": job.waiting_for_upload,
        "pending_interaction_id": _integer(job.pending_interaction_id),
        "interaction_count": _integer(job.interaction_count),
        "recovery_state": _text(job.recovery_state),
        "recovered_at": iso(job.recovered_at),
        "recovery_reason": _text(job.recovery_reason),
        "auto_decision_count": _integer(job.auto_decision_count),
        "last_auto_decision_at": iso(job.last_auto_decision_at),
        "warnings": [] if job.warnings is None else list(job.warnings),
        "error": None if job.error is None else dict(job.error),
        "request_kind": _text(job.request_kind),
        "token_usage": None if job.token_usage is None else dict(job.token_usage),
        "parent_request_id": _text(job.parent_request_id),
        "step_name": _text(job.step_name),
        "workspace_dir": workspace,
        "workspaceDir": workspace,
        "resultJsonPath": None if workspace is None else result_json_file(workspace, job.skill_id),
    }


def _text(value: Any) -> str | None:
    """As marshmallow's String writes it."""
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _integer(value: Any) -> int | None:
    return None if value is None else int(value)
