"""Creating runs: a queued run's row and the row of the request that asked for it, written
together and the same way by the API (a job, a one-off run) and the worker (a composite's step)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, insert

from runner_core.statuses import RunStatus
from runner_core.store.callbacks import PENDING
from runner_core.store.models import Request, Run, utcnow

_INSERT_RUN = insert(cast(Table, Run.__table__))
_INSERT_REQUEST = insert(cast(Table, Request.__table__))


@dataclass(frozen=True, slots=True)
class Dispatch:
    """What sending a run needs, stamped on its row in the commit that accepts it (so
    sending costs no second write; a send that fails is re-sent by the sweeper)."""

    task_id: str
    queued_at: datetime
    dispatched_at: datetime

    @classmethod
    def stamp(cls, queued_at: datetime | None = None) -> Dispatch:
        """A new task id, sent now; a run keeps its first queued_at."""
        now = utcnow()
        return cls(str(uuid.uuid4()), queued_at or now, now)

    def columns(self) -> dict[str, Any]:
        return {
            "celery_task_id": self.task_id,
            "queued_at": self.queued_at,
            "dispatched_at": self.dispatched_at,
        }


@dataclass(frozen=True, slots=True)
class NewRun:
    """A queued run and its request, not yet written. `payload` is the request as the client
    (or the composite) asked it; `dispatch` None: the run waits for its upload; `served_by`:
    the succeeded run the result cache binds the request to (then no run row is written)."""

    run_id: str
    request_id: str
    skill_id: str
    skill_version: str | None
    engine: str | None
    parameter: dict[str, Any]
    input: dict[str, Any]
    runtime_options: dict[str, Any]
    payload: dict[str, Any]
    created_at: datetime
    dispatch: Dispatch | None
    kind: str = "job"  # job | temp
    model: str | None = None
    owner: str | None = None
    needs_upload: bool = False
    cache_key: str | None = None
    parent_run_id: str | None = None  # a composite's step: its parent and step name
    step_name: str | None = None
    callback_url: str | None = None
    served_by: str | None = None
    request_kind: str | None = None  # the request's kind when not the run's (a job whose
    # package came with its upload: request "job", run "temp")

    def run_row(self) -> dict[str, Any]:
        """The run's columns (the others take their defaults)."""
        return {
            "id": self.run_id,
            "request_id": self.request_id,
            "kind": self.kind,
            "skill_id": self.skill_id,
            "skill_version": self.skill_version,
            "engine": self.engine,
            "model": self.model,
            "status": RunStatus.QUEUED,
            "parameter": self.parameter,
            "input": self.input,
            "runtime_options": self.runtime_options,
            "needs_upload": self.needs_upload,
            "cache_key": self.cache_key,
            "celery_task_id": None,
            "queued_at": None,
            "dispatched_at": None,
            **(self.dispatch.columns() if self.dispatch else {}),
            "created_at": self.created_at,
            "updated_at": self.created_at,
            "owner": self.owner,
            "parent_run_id": self.parent_run_id,
            "step_name": self.step_name,
        }

    def request_row(self) -> dict[str, Any]:
        """The request's columns, bound to its own run or to the cached one serving it."""
        return {
            "id": self.request_id,
            "kind": self.request_kind or self.kind,
            "skill_id": self.skill_id,
            "engine": self.engine,
            "run_id": self.served_by or self.run_id,
            "cache_hit": self.served_by is not None,
            "payload": self.payload,
            "created_at": self.created_at,
            "callback_url": self.callback_url,
            "callback_state": PENDING if self.callback_url else None,
            "owner": self.owner,
        }


def insert_runs(conn: Connection, runs: Sequence[NewRun]) -> None:
    """Insert the runs, then their requests (which refer to them): one statement each, however
    many there are (a composite's fan-out). The caller commits."""
    created = [new.run_row() for new in runs if new.served_by is None]
    if created:
        conn.execute(_INSERT_RUN, _parameters(created))
    if runs:
        conn.execute(_INSERT_REQUEST, _parameters([new.request_row() for new in runs]))


def _parameters(rows: list[dict[str, Any]]) -> dict[str, Any] | list[dict[str, Any]]:
    """One row as a plain execute (a job's create, the common case), several as executemany."""
    return rows[0] if len(rows) == 1 else rows
