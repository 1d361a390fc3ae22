"""JobRow: a request joined with its run, as the status, result, logs and list reads select
it (one Core SELECT, no ORM objects); and what a run's status says to the client."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import ColumnElement, Row, select

from runner_core.statuses import RunStatus
from runner_core.store.models import Request, Run


class RunState(Protocol):
    """What both an ORM `Run` and a `JobRow` hold about where a run stands."""

    @property
    def status(self) -> str: ...

    @property
    def needs_upload(self) -> bool: ...


def waiting_for_upload(run: RunState) -> bool:
    """Still queued because its input zip has not come yet."""
    return bool(run.needs_upload) and run.status == RunStatus.QUEUED


@dataclass(frozen=True, slots=True)
class JobRow:
    """A request and its run's status fields (the runs' JSON inputs are not read)."""

    request_id: str
    request_kind: str
    cache_hit: bool
    created_at: datetime  # the request's: a cache hit's request is newer than its run
    run_id: str
    run_created_at: datetime
    status: str
    skill_id: str
    skill_version: str | None
    engine: str | None
    model: str | None
    updated_at: datetime
    queued_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    worker: str | None
    attempt: int
    needs_upload: bool
    pending_interaction_id: int | None
    interaction_count: int
    recovery_state: str
    recovered_at: datetime | None
    recovery_reason: str | None
    auto_decision_count: int
    last_auto_decision_at: datetime | None
    warnings: list[Any] | None
    error: dict[str, Any] | None
    token_usage: dict[str, Any] | None
    owner: str | None  # the request's token name (None: no tokens)
    # a composite's step: its parent's request and the step's name (None for any other run)
    parent_request_id: str | None = None
    step_name: str | None = None

    @property
    def waiting_for_upload(self) -> bool:
        return waiting_for_upload(self)

    @classmethod
    def from_row(cls, row: Row) -> JobRow:
        """A row selected with JOB_COLUMNS (same order as the fields)."""
        return cls(*row)


requests_table, runs_table = Request.__table__, Run.__table__
_parent_runs = Run.__table__.alias("parent_runs")
_SOURCES = {
    "parent_request_id": select(_parent_runs.c.request_id)
    .where(_parent_runs.c.id == runs_table.c.parent_run_id)
    .scalar_subquery(),
    "request_id": requests_table.c.id,
    "request_kind": requests_table.c.kind,
    "cache_hit": requests_table.c.cache_hit,
    "created_at": requests_table.c.created_at,
    "run_id": runs_table.c.id,
    "run_created_at": runs_table.c.created_at,
    "owner": requests_table.c.owner,
}
# JobRow's fields in order, each from its column (the rest are the run's of the same name)
JOB_COLUMNS: tuple[ColumnElement[Any], ...] = tuple(
    (_SOURCES[field.name] if field.name in _SOURCES else runs_table.c[field.name]).label(field.name)
    for field in dataclasses.fields(JobRow)
)
