"""What the jobs endpoints do, apart from HTTP: validate, write SQL first, then enqueue."""
from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy import Connection, Row, bindparam, func, insert, select
from sqlalchemy.orm import Session

from api import job_cache
from api.errors import ApiError
from api.zip_bodies import receive_inputs, upload_lock
from runner_core.engines.catalog import check_model
from runner_core.queues import queue_for
from runner_core.inputs import (
    InputError, by_identity, file_fields, schema_errors, validate_parameters,
)
from runner_core.settings import run_timeout, task_time_limits
from runner_core.skills import SkillPackage
from runner_core.store.models import Request, Run, utcnow


def check_request(pkg: SkillPackage, body: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Engine, execution mode, parameters and inline input; returns (engine, parameter)."""
    if pkg.health != "ok":
        raise ApiError(400, "SKILL_INVALID", f"skill '{pkg.id}' is invalid: " + "; ".join(pkg.errors),
                       {"skill_id": pkg.id, "errors": pkg.errors})
    engine = body.get("engine")
    if engine is None and pkg.manifest.entrypoint.type != "script":
        engine = pkg.effective_engines[0]
    if engine is not None and engine not in pkg.effective_engines:
        raise ApiError(400, "SKILL_ENGINE_UNSUPPORTED",
                       f"engine '{engine}' is not supported by skill '{pkg.id}'",
                       {"engine": engine, "effective_engines": pkg.effective_engines})
    _check_runtime_options(body["runtime_options"])
    mode = body["runtime_options"].get("execution_mode", "auto")
    if mode not in pkg.manifest.execution_modes:
        raise ApiError(400, "EXECUTION_MODE_UNSUPPORTED",
                       f"execution_mode '{mode}' is not declared by skill '{pkg.id}'",
                       {"execution_mode": mode, "execution_modes": list(pkg.manifest.execution_modes)})
    model_error = check_model(engine, body.get("model")) if engine else None
    if model_error:
        raise ApiError(400, "MODEL_UNSUPPORTED", model_error, {"engine": engine, "model": body.get("model")})
    try:
        parameter = validate_parameters(pkg.parameter_schema, body.get("parameter"))
    except InputError as exc:
        raise ApiError(400, exc.code, exc.message, exc.details) from exc
    _check_inline(pkg, body.get("input") or {})
    return engine, parameter


# The runtime options the service acts on, typed (others are kept, unused): a wrong type used
# to surface only when the run started, as an INTERNAL_ERROR or an option silently ignored.
RUNTIME_OPTIONS_SCHEMA = {
    "type": "object",
    "properties": {
        "execution_mode": {"type": "string"},
        "debug": {"type": "boolean"},
        "no_cache": {"type": "boolean"},
        "timeout_sec": {"type": "integer", "minimum": 1},
        "repair_rounds": {"type": "integer", "minimum": 0, "maximum": 3},
        "interactive_reply_timeout_sec": {"type": "integer", "minimum": 1},
        "interactive_auto_reply": {"type": "boolean"},
    },
    "patternProperties": {"^[a-z][a-z0-9]*_config$": {"type": "object"}},
}


def _check_runtime_options(options: dict[str, Any]) -> None:
    errors = schema_errors(RUNTIME_OPTIONS_SCHEMA, options) if options else []
    if errors:
        first = errors[0]
        raise ApiError(400, "SCHEMA_VALIDATION_FAILED",
                       f"runtime_options.{first['path']}: {first['message']}",
                       {"schema": "runtime_options", "errors": errors})


def inline_schema(input_schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema without its file fields (those come with the upload)."""
    files = file_fields(input_schema)
    schema = dict(input_schema)
    schema["properties"] = {k: v for k, v in schema.get("properties", {}).items() if k not in files}
    schema["required"] = [k for k in schema.get("required", []) if k not in files]
    return schema


def _check_inline(pkg: SkillPackage, inline: dict[str, Any]) -> None:
    """Inline fields are checked now; file fields wait for the upload."""
    files = file_fields(pkg.input_schema)
    sent_as_inline = sorted(set(inline) & set(files))
    if sent_as_inline:
        raise ApiError(400, "INPUT_FILE_AS_INLINE",
                       "file inputs must be uploaded, not sent inline: " + ", ".join(sent_as_inline),
                       {"fields": sent_as_inline})
    errors = schema_errors(by_identity(pkg.input_schema, inline_schema), inline)
    if errors:
        raise ApiError(400, "SCHEMA_VALIDATION_FAILED", "input does not match the skill's input schema",
                       {"schema": "input", "errors": errors})


# The queue bound counts runs sent to the workers; jobs waiting for their upload are not in
# any queue (they used to count: a client that never uploaded could fill the bound forever).
_QUEUED_COUNT = select(func.count()).select_from(Run.__table__).where(
    Run.__table__.c.status == "queued", Run.__table__.c.queued_at.is_not(None))


class JobView:
    """A request's or run's columns as attributes, with no session behind them: what
    create_job builds its INSERTs from and read_job hands back."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


def connect() -> Connection:
    """A Core connection: creating a job is a few statements, and an ORM session around them
    cost ~0.3 ms of CPU per POST."""
    return current_app.extensions["db_engine"].connect()


def create_job(conn: Connection, pkg: SkillPackage, body: dict[str, Any], *, kind: str = "job",
               request_id: str | None = None) -> tuple[JobView, JobView | Row]:
    """Commit the request and its run; enqueue at once when no upload is expected.

    `pkg` may come from anywhere: the installed skills (kind "job") or a one-off package
    unpacked under the request's directory (kind "temp", with that `request_id`). Returns the
    request's and the run's columns (a cache hit's run is its row).
    """
    settings = current_app.config["SETTINGS"]
    engine, parameter = check_request(pkg, body)
    needs_upload = bool(file_fields(pkg.input_schema))
    options = body.get("runtime_options") or {}
    key = None if needs_upload else job_cache.key_for(
        pkg, engine, body.get("model"), parameter, body.get("input") or {}, {}, options)
    cached = job_cache.find_cached(conn, key) if key and job_cache.cache_usable(pkg, options) else None
    queued = 0 if cached else conn.scalar(_QUEUED_COUNT)
    if queued >= settings.queue_max:
        raise ApiError(429, "QUEUE_FULL", f"{queued} runs are queued (limit {settings.queue_max}); retry later",
                       {"queued": queued, "limit": settings.queue_max}, retry_after=5)
    request_id, run_id = request_id or str(uuid.uuid4()), str(uuid.uuid4())
    payload = {"skill_id": pkg.id, "engine": engine, "parameter": body.get("parameter") or {},
               "input": body.get("input") or {}, "model": body.get("model"),
               "runtime_options": body.get("runtime_options") or {}}
    # the new rows' columns (as JobViews: ORM objects cost more to build than the INSERTs)
    run = JobView(dict(id=run_id, request_id=request_id, kind=kind, skill_id=pkg.id,
                       skill_version=pkg.version, engine=engine, model=body.get("model"),
                       status="queued", parameter=parameter, input=payload["input"],
                       runtime_options=payload["runtime_options"], needs_upload=needs_upload,
                       cache_key=key, queued_at=None))
    req = JobView(dict(id=request_id, kind=kind, skill_id=pkg.id, engine=engine, run_id=run_id,
                       cache_hit=False, payload=payload))
    if cached is not None:
        req.run_id, req.cache_hit = cached.id, True
        insert_rows(conn, None, req)
        run = cached
    else:
        if not needs_upload:
            stamp_dispatch(run)
        insert_rows(conn, run, req)
    # The uploads folder before the commit: a disk that cannot take it leaves no job behind.
    # (The payload itself is in the requests row: the run's input.json.)
    uploads = settings.requests_dir / request_id / "uploads" if needs_upload else None
    if uploads is not None:
        uploads.mkdir(parents=True, exist_ok=True)
    try:
        conn.commit()
    except BaseException:
        if uploads is not None:
            _remove_empty(uploads, uploads.parent)
        raise
    if not needs_upload and cached is None:
        submit(run, pkg)
    return req, run


def _remove_empty(*folders: Path) -> None:
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (a one-off run's package) or already gone
            return


_INSERT_RUN, _INSERT_REQUEST = insert(Run.__table__), insert(Request.__table__)


def insert_rows(conn: Connection, run: JobView | None, req: JobView) -> None:
    """INSERT a new run (None: a cache hit's request points at an existing one) and its request
    as Core statements; columns the views do not hold take their defaults."""
    req.created_at = utcnow()
    if run is not None:
        run.created_at = run.updated_at = req.created_at
        conn.execute(_INSERT_RUN, vars(run))
    conn.execute(_INSERT_REQUEST, vars(req))


def take_upload(session: Session, req: Request, run: Run, pkg_for: Callable[[], SkillPackage],
                request_dir: Path) -> Run:
    """Receive the input zip of a run that waits for one (a job or a one-off run) and send the
    run; the run's state is checked again once this request's upload lock is held, so of two
    uploads only one is ever taken."""
    with upload_lock(request_dir, req.id):
        session.refresh(run)
        if not (run.needs_upload and run.status == "queued" and run.queued_at is None):
            raise ApiError(409, "UPLOAD_NOT_ALLOWED", "this run takes no upload now (already "
                           "uploaded, started or ended)", {"status": run.status}, req.id)
        files = receive_inputs(request_dir, req.id)
        return bind_upload(session, req, run, pkg_for(), {f.path: f.sha256 for f in files})


def bind_upload(session: Session, req: Request, run: Run, pkg: SkillPackage,
                upload_hashes: dict[str, str]) -> Run:
    """After an upload: serve from the cache when a succeeded run matches, else submit."""
    options = run.runtime_options or {}
    run.cache_key = job_cache.key_for(pkg, run.engine, run.model, run.parameter, run.input,
                                      upload_hashes, options)
    cached = (job_cache.find_cached(session.connection(), run.cache_key)
              if job_cache.cache_usable(pkg, options) else None)
    if cached is not None:
        req.run_id, req.cache_hit = cached.id, True
        session.flush()
        session.delete(run)  # the placeholder run never started
        session.commit()
        return cached
    run.needs_upload = False
    stamp_dispatch(run)
    session.commit()
    submit(run, pkg)
    return run


def stamp_dispatch(run: Run | JobView) -> None:
    """Give the run its task id and send times in the same commit that accepts it, so sending
    costs no second write; if the send then fails, the sweeper re-sends it after its grace."""
    now = utcnow()
    run.celery_task_id = str(uuid.uuid4())
    run.queued_at = run.queued_at or now
    run.dispatched_at = now


def submit(run: Run | JobView, pkg: SkillPackage) -> None:
    """Send a committed, stamped run by task name (see stamp_dispatch)."""
    kind = pkg.manifest.entrypoint.type if pkg.manifest else "script"
    # Celery's time limits follow the run's own (a backstop above its deadline): the worker
    # keeps a timer per task until its limit would have passed, so a limit sized to the run
    # keeps fewer of them than the server maximum would.
    skill_timeout = pkg.manifest.automation.timeout_sec if pkg.manifest else None
    timeout = run_timeout(current_app.config["SETTINGS"], skill_timeout, run.runtime_options)
    current_app.extensions["queue"].enqueue(run.id, queue_for(run.engine, kind),
                                            task_id=run.celery_task_id,
                                            time_limits=task_time_limits(timeout))


def load_job(session: Session, request_id: str, kind: str | None = None) -> tuple[Request, Run]:
    """The request and its run; 404 when missing or, with `kind`, of another kind."""
    req = session.get(Request, request_id)
    run = session.get(Run, req.run_id) if req and req.run_id else None
    if req is None or run is None or (kind is not None and req.kind != kind):
        raise not_found(request_id, kind)
    return req, run


def not_found(request_id: str, kind: str | None) -> ApiError:
    """The 404 of a request id that is unknown, has no run, or is of the other kind."""
    noun = "one-off run" if kind == "temp" else "job"
    return ApiError(404, "REQUEST_NOT_FOUND", f"no {noun} with request_id '{request_id}'",
                    request_id=request_id)


_requests, _runs = Request.__table__, Run.__table__
_REQUEST_FIELDS = ("id", "kind", "run_id", "cache_hit", "created_at")
# What a status or result read needs, in one SELECT (the runs' JSON inputs stay unparsed).
_RUN_FIELDS = ("id", "status", "skill_id", "skill_version", "engine", "model", "created_at",
               "updated_at", "queued_at", "started_at", "finished_at", "worker", "attempt",
               "needs_upload", "pending_interaction_id", "interaction_count", "recovery_state",
               "recovered_at", "recovery_reason", "auto_decision_count", "last_auto_decision_at",
               "warnings", "error")
_JOB_COLUMNS = (*(_requests.c[name].label(f"request_{name}") for name in _REQUEST_FIELDS),
                *(_runs.c[name] for name in _RUN_FIELDS))
_READ_JOB = (select(*_JOB_COLUMNS)
             .join_from(_requests, _runs, _runs.c.id == _requests.c.run_id)
             .where(_requests.c.id == bindparam("request_id_")))


def read_job(conn: Connection, request_id: str, kind: str | None = None
             ) -> tuple[JobView, JobView]:
    """load_job for reading only: the request and its run's status fields from one SELECT
    (two ORM loads cost ~40% of a status request); 404 as load_job."""
    row = conn.execute(_READ_JOB, {"request_id_": request_id}).first()
    if row is None or (kind is not None and row.request_kind != kind):
        raise not_found(request_id, kind)
    return job_views(row)


def job_views(row: Row) -> tuple[JobView, JobView]:
    """The request's and the run's columns of one row selected with _JOB_COLUMNS."""
    values = row._asdict()
    req = JobView({name: values[f"request_{name}"] for name in _REQUEST_FIELDS})
    return req, JobView({name: values[name] for name in _RUN_FIELDS})


def wait_for_job(request_id: str, kind: str | None, wait_sec: float
                 ) -> tuple[JobView, JobView]:
    """read_job; with `wait_sec` > 0, first block until the run has ended or needs the client
    (an upload, a reply), for at most `wait_sec`. A finish notice from the worker ends the wait
    at once; the database is re-read in between, so a missed notice only costs latency. When
    every waiting slot of this process is taken the status is answered without waiting."""
    with connect() as conn:
        req, run = read_job(conn, request_id, kind)
    if wait_sec <= 0 or not _in_progress(run):
        return req, run
    watcher = current_app.extensions["finish_watcher"]
    deadline = time.monotonic() + wait_sec
    with watcher.slot() as allowed:
        while allowed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            with watcher.waiting(run.id) as ended:
                with connect() as conn:
                    req, run = read_job(conn, request_id, kind)
                if not _in_progress(run):
                    break
                ended.wait(min(watcher.recheck_sec, remaining))
    return req, run


def _in_progress(run: Run) -> bool:
    """Moving on its own: queued (not waiting for an upload) or running."""
    return run.status == "running" or (run.status == "queued" and not run.needs_upload)


def iso(value: datetime | None) -> str | None:
    """ISO 8601 in UTC; SQLite hands back naive datetimes that were stored as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.isoformat().replace("+00:00", "Z")


def job_status(req: Request, run: Run) -> dict[str, Any]:
    """The status document of seed 003 §9 (GET /v1/jobs/{request_id})."""
    return {
        "request_id": req.id, "run_id": run.id, "status": run.status, "skill_id": run.skill_id,
        "skill_version": run.skill_version, "engine": run.engine, "model": run.model,
        "cache_hit": req.cache_hit, "created_at": iso(req.created_at),
        "updated_at": iso(run.updated_at), "queued_at": iso(run.queued_at),
        "started_at": iso(run.started_at), "finished_at": iso(run.finished_at),
        "worker": run.worker, "attempt": run.attempt,
        "waiting_for_upload": run.needs_upload and run.status == "queued",
        "pending_interaction_id": run.pending_interaction_id,
        "interaction_count": run.interaction_count, "recovery_state": run.recovery_state,
        "recovered_at": iso(run.recovered_at), "recovery_reason": run.recovery_reason,
        "auto_decision_count": run.auto_decision_count,
        "last_auto_decision_at": iso(run.last_auto_decision_at),
        "warnings": run.warnings or [], "error": run.error,
    }


def read_result(run: Run) -> dict[str, Any]:
    """result/result.json of a finished run (the seed's result shape)."""
    path = current_app.config["SETTINGS"].runs_dir / run.id / "result" / "result.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    # A run that ended before its workspace existed (canceled while queued, reconciled...)
    return {"status": run.status, "data": None, "artifacts": [], "validation_warnings": [],
            "error": run.error}


# Statuses a cache hit never binds to: each of their runs has exactly one request, so those
# lists can be walked from the runs index instead of sorting the skill's whole request history.
RUN_DRIVEN_STATUSES = ("queued", "running", "waiting_user", "failed", "canceled")


def list_jobs(conn: Connection, args: dict[str, Any]) -> dict[str, Any]:
    """Newest first, keyset-paginated on (created_at, id): `cursor` is the last item's."""
    by_run = args.get("status") in RUN_DRIVEN_STATUSES
    filters = tuple(name for name in ("status", "skill_id", "engine") if args.get(name))
    params = {f"{name}_": args[name] for name in filters}
    if args.get("cursor"):
        params["when_"], params["last_id_"] = _parse_cursor(conn, args["cursor"])
    limit = args.get("limit", 50)
    statement = _list_statement(by_run, filters, bool(args.get("cursor"))).limit(limit + 1)
    rows = conn.execute(statement, params).all()
    views = [job_views(row) for row in rows]
    items = [job_status(req, run) for req, run in views[:limit]]
    next_cursor = None
    if len(views) > limit:
        last = views[limit - 1][1 if by_run else 0]
        next_cursor = f"{iso(last.created_at)}|{last.id}"
    return {"items": items, "next_cursor": next_cursor}


@lru_cache(maxsize=None)
def _list_statement(by_run: bool, filters: tuple[str, ...], cursor: bool):
    """The list's SELECT for one combination of filters, built once (values are bound)."""
    if by_run:  # index runs(status, skill_id, created_at, id)
        key = _runs
        query = (select(*_JOB_COLUMNS).join_from(_runs, _requests, _requests.c.id == _runs.c.request_id)
                 .where(_runs.c.kind == "job"))
    else:  # index requests(skill_id, created_at, id)
        key = _requests
        query = (select(*_JOB_COLUMNS).join_from(_requests, _runs, _runs.c.id == _requests.c.run_id)
                 .where(_requests.c.kind == "job"))
    for name in filters:
        table = _runs if name == "status" else key
        query = query.where(table.c[name] == bindparam(f"{name}_"))
    if cursor:
        when, last_id = bindparam("when_", type_=key.c.created_at.type), bindparam("last_id_")
        # `created_at <= when` on its own is an index range (the OR alone is not, and Postgres
        # then walks every newer row before the page); the OR settles ties on the id.
        query = query.where(key.c.created_at <= when,
                            (key.c.created_at < when) | (key.c.id < last_id))
    return query.order_by(key.c.created_at.desc(), key.c.id.desc())


def _parse_cursor(conn: Connection, cursor: str) -> tuple[datetime, str]:
    created, _, last_id = cursor.partition("|")
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ApiError(400, "INVALID_CURSOR", "cursor is not one this API returned") from exc
    if conn.dialect.name == "sqlite":
        when = when.replace(tzinfo=None)  # stored naive (UTC) by SQLite
    return when, last_id
