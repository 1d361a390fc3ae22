"""Reading a job: its rows by request id (404 when unknown or of the other kind), the long
poll that waits for its run to end, and its result file."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.orm import Session

from api import auth, context
from api.errors import ApiError
from api.jobs.rows import JOB_COLUMNS, JobRow, requests_table, runs_table
from runner_core import results
from runner_core.error_codes import ErrorCode
from runner_core.statuses import RunStatus
from runner_core.store.models import Request, Run
from runner_core.workspace import RunPaths

JOB_KIND = "job"  # requests.kind of a job (a one-off run's: api.jobs.temp.TEMP)


def not_found(request_id: str, kind: str | None) -> ApiError:
    """The 404 of a request id that is unknown, has no run, or is of the other kind."""
    noun = "one-off run" if kind == "temp" else "job"
    return ApiError(
        404,
        ErrorCode.REQUEST_NOT_FOUND,
        f"no {noun} with request_id '{request_id}'",
        request_id=request_id,
    )


def load_job(session: Session, request_id: str, kind: str | None = None) -> tuple[Request, Run]:
    """The request and its run as ORM objects, for changing them; 404 when missing, of another
    token's (unless the caller is admin) or, with `kind`, of another kind."""
    req = session.get(Request, request_id)
    run = session.get(Run, req.run_id) if req and req.run_id else None
    if req is None or run is None or (kind is not None and req.kind != kind):
        raise not_found(request_id, kind)
    if not auth.may_see(req.owner):  # the same answer as an unknown id: nothing to learn
        raise not_found(request_id, kind)
    return req, run


_READ_JOB = (
    select(*JOB_COLUMNS)
    .join_from(requests_table, runs_table, runs_table.c.id == requests_table.c.run_id)
    .where(requests_table.c.id == bindparam("request_id_"))
)


def read_job(conn: Connection, request_id: str, kind: str | None = None) -> JobRow:
    """load_job for reading only: one SELECT, no ORM objects; 404 as load_job."""
    row = conn.execute(_READ_JOB, {"request_id_": request_id}).first()
    if row is None or (kind is not None and row.request_kind != kind):
        raise not_found(request_id, kind)
    if not auth.may_see(row.owner):
        raise not_found(request_id, kind)
    return JobRow.from_row(row)


def wait_for_job(request_id: str, kind: str | None, wait_sec: float) -> JobRow:
    """read_job; with `wait_sec` > 0, first block until the run has ended or needs the client
    (an upload, a reply), for at most `wait_sec`. A finish notice from the worker ends the wait
    at once; the database is re-read in between, so a missed notice only costs latency. When
    every waiting slot of this process is taken the status is answered without waiting."""
    with context.connect() as conn:
        job = read_job(conn, request_id, kind)
    if wait_sec <= 0 or not in_progress(job):
        return job
    watcher = context.finish_watcher()
    deadline = time.monotonic() + wait_sec
    with watcher.slot() as allowed:
        while allowed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            with watcher.waiting(job.run_id) as ended:
                with context.connect() as conn:
                    job = read_job(conn, request_id, kind)
                if not in_progress(job):
                    break
                ended.wait(min(watcher.recheck_sec, remaining))
    return job


def in_progress(job: JobRow) -> bool:
    """Moving on its own: queued (not waiting for an upload) or running."""
    return job.status == RunStatus.RUNNING or (
        job.status == RunStatus.QUEUED and not job.needs_upload
    )


def read_result(job: JobRow) -> dict[str, Any]:
    """result/result.json of a finished run (the result document of the run protocol)."""
    document = results.read_result(RunPaths(context.settings().runs_dir / job.run_id))
    if document is not None:
        return document
    # A run that ended before its workspace existed (canceled while queued, reconciled...)
    return results.result_document(job.status, error=job.error)
