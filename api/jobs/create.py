"""Creating a job: check it, commit its request and run, then send the run; or, for a skill
that takes files, send it once its upload has come (unless the result cache serves it)."""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from api import auth, context, job_cache
from api.errors import ApiError
from api.idempotency import Claim, remember
from api.jobs.quotas import check_quota
from api.jobs.validate import check_named_uploads, check_request
from api.jobs.workspace import Workspace, check_reuse, pin_bound_files
from api.zip_bodies import holds_no_files, receive_inputs, upload_lock
from runner_core import run_env
from runner_core.error_codes import ErrorCode
from runner_core.inputs import file_fields
from runner_core.openevo.engines import is_composite
from runner_core.queues import queue_for, task_label
from runner_core.results import RunError
from runner_core.runtime_options import RuntimeOptions, withheld
from runner_core.secret_values import held
from runner_core.settings import run_timeout, task_time_limits
from runner_core.skills import SkillPackage
from runner_core.statuses import RunStatus
from runner_core.store import runs as run_states
from runner_core.store.models import Request, Run, utcnow
from runner_core.store.new_runs import Dispatch, NewRun, insert_runs
from runner_core.webhooks import WebhookRefused, check_url


@dataclass(frozen=True, slots=True)
class Accepted:
    """What creating a job and uploading its input answer."""

    request_id: str
    cache_hit: bool
    status: str
    extracted_files: tuple[str, ...] = ()  # an upload's: the paths its zip held


def create_job(
    conn: Connection,
    pkg: SkillPackage,
    body: dict[str, Any],
    *,
    kind: str = "job",
    request_id: str | None = None,
    claim: Claim | None = None,
    request_kind: str | None = None,
    env_kept: bool = False,
) -> Accepted:
    """Commit the request and its run; send the run at once when no upload is expected.

    `pkg` may come from anywhere: the installed skills (kind "job") or a one-off package
    unpacked under the request's directory (kind "temp", with that `request_id`). A `claim`
    (Idempotency-Key) is committed with them: api.idempotency.KeyTaken when it was taken.
    `env_kept`: the request's `runtime_options.env` was checked and kept when its body was.
    """
    settings = context.settings()
    owner = auth.owner()
    env = {} if env_kept else checked_env(body.get("runtime_options"))
    # a file even with no value in it (all sent back withheld): its absence means they were lost
    named = not env_kept and bool(run_env.declared(body.get("runtime_options")))
    body = {**body, "runtime_options": withheld(body.get("runtime_options"))}
    options = RuntimeOptions.from_dict(body.get("runtime_options"))
    inline = body.get("input") or {}
    workspace = check_reuse(conn, pkg, options.as_dict(), inline)
    bound = workspace.bound_keys if workspace else frozenset()
    # bound file inputs name their file (input[key] = target_path): checked as bound, not inline
    checked = {**body, "input": {k: v for k, v in inline.items() if k not in bound}}
    engine, parameter = check_request(pkg, checked)
    body = {**body, "model": checked.get("model")}  # as the request's effort shaped it
    # a composite runs on no engine itself: the engine is its llm steps' (in its request)
    run_engine = None if is_composite(pkg) else engine
    needs_upload = _needs_upload(pkg, bound)
    token = workspace.cache_token if workspace else None
    key = (
        None
        if needs_upload
        else job_cache.key_for(
            pkg, engine, body.get("model"), parameter, inline, {}, options, token
        )
    )
    cached = (
        job_cache.find_cached(conn, key, owner) if key and job_cache.cache_usable(options) else None
    )
    if cached is None:
        check_quota(conn)
    queued = None if cached else context.queue_bound().full(conn, settings.queue_max)
    if queued is not None:
        raise ApiError(
            429,
            ErrorCode.QUEUE_FULL,
            f"{queued} runs are queued (limit {settings.queue_max}); retry later",
            {"queued": queued, "limit": settings.queue_max},
            retry_after=5,
        )
    callback = _callback(body, settings.webhook_hosts)
    request_id, run_id = request_id or str(uuid.uuid4()), str(uuid.uuid4())
    now = utcnow()
    payload = {
        "skill_id": pkg.id,
        "engine": engine,  # a composite's: its llm steps' (worker.composite.children)
        "parameter": body.get("parameter") or {},
        "input": inline,
        "model": body.get("model"),
        "runtime_options": options.as_dict(),
        **({"callback_on_waiting": True} if body.get("callback_on_waiting") else {}),
    }
    dispatch = None if needs_upload or cached is not None else Dispatch.stamp()
    new_run = NewRun(
        run_id=run_id,
        request_id=request_id,
        kind=kind,
        skill_id=pkg.id,
        skill_version=pkg.version,
        engine=run_engine,
        model=body.get("model"),
        parameter=parameter,
        input=inline,
        runtime_options=_stored_options(options, workspace),
        payload=payload,
        created_at=now,
        dispatch=dispatch,
        owner=owner,
        needs_upload=needs_upload,
        cache_key=key,
        callback_url=callback,
        served_by=cached.id if cached else None,
        request_kind=request_kind,
    )
    insert_runs(conn, [new_run])
    accepted = Accepted(
        request_id, cached is not None, cached.status if cached else RunStatus.QUEUED
    )
    if claim is not None:
        remember(conn, claim, dataclasses.asdict(accepted))
    if workspace is not None and cached is None:
        pin_bound_files(workspace, settings.requests_dir / request_id)
    _commit_with_uploads_dir(
        conn,
        settings.requests_dir / request_id / "uploads" if needs_upload else None,
        # a run answered from the cache starts no process: its variables are not kept
        settings.requests_dir / request_id if cached is None else None,
        env,
        named,
    )
    if dispatch is not None:
        context.queue_bound().accepted()
        submit(pkg, run_id, run_engine, options, dispatch.task_id, request_id)
    return accepted


def _needs_upload(pkg: SkillPackage, bound: frozenset[str]) -> bool:
    """A skill with file inputs waits for its upload, unless bindings give every required one."""
    files = file_fields(pkg.input_schema)
    if not files:
        return False
    required = set(files) & set(pkg.input_schema.get("required", []))
    return not (bound and required <= bound)


def _stored_options(options: RuntimeOptions, workspace: Workspace | None) -> dict[str, Any]:
    """The run's runtime_options: as sent, its `workspace` completed for the worker."""
    stored = options.as_dict()
    if workspace is not None:
        stored["workspace"] = workspace.stored(stored["workspace"])
    return stored


def _callback(body: dict[str, Any], allowed: tuple[str, ...]) -> str | None:
    """The job's callback URL once checked (400 CALLBACK_URL_REFUSED says why not)."""
    url = body.get("callback_url")
    if not url:
        return None
    try:
        check_url(str(url), allowed)
    except WebhookRefused as exc:
        raise ApiError(
            400, ErrorCode.CALLBACK_URL_REFUSED, str(exc), {"callback_url": url}
        ) from exc
    return str(url)


def checked_env(options: Any) -> dict[str, str]:
    """The variables a request's runtime_options.env gives its run (runner_core.run_env);
    400 INVALID_REQUEST naming the variable (never its value) when one cannot be given."""
    try:
        return run_env.checked(options, context.settings().run_env_names, held())
    except run_env.RunEnvRefused as exc:
        details = {"field": "runtime_options.env"}
        if exc.name is not None:
            details["variable"] = exc.name[:128]
        raise ApiError(400, ErrorCode.INVALID_REQUEST, str(exc), details) from exc


def _commit_with_uploads_dir(
    conn: Connection,
    uploads: Path | None,
    request_dir: Path | None = None,
    env: dict[str, str] | None = None,
    named: bool = False,
) -> None:
    """Make the uploads folder and keep the run's variables before the commit: a disk that
    cannot take them leaves no job behind (the payload itself is in the requests row)."""
    if uploads is not None:
        uploads.mkdir(parents=True, exist_ok=True)
    kept = run_env.write(request_dir, env or {}, named) if request_dir is not None else None
    try:
        conn.commit()
    except BaseException:
        if kept is not None:
            kept.unlink(missing_ok=True)
        if uploads is not None:
            _remove_empty(uploads, uploads.parent)
        elif kept is not None:
            _remove_empty(kept.parent)
        raise


def _remove_empty(*folders: Path) -> None:
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (a one-off run's package) or already gone
            return


def take_upload(
    session: Session, req: Request, run: Run, pkg_for: Callable[[], SkillPackage], request_dir: Path
) -> Accepted:
    """Receive the input zip of a run that waits for one (a job or a one-off run) and send the
    run; the run's state is checked again once this request's upload lock is held, so of two
    uploads only one is ever taken."""
    with upload_lock(request_dir, req.id):
        session.refresh(run)
        if not (run.needs_upload and run.status == RunStatus.QUEUED and run.queued_at is None):
            if not file_fields(pkg_for().input_schema) and holds_no_files():
                # Skill-Runner's REST runner uploads an empty zip to any skill with an input
                # schema: for a job that takes no files it changes nothing, so say how it is
                return Accepted(req.id, req.cache_hit, run.status)
            raise ApiError(
                409,
                ErrorCode.UPLOAD_NOT_ALLOWED,
                "this run takes no upload now (already uploaded, started or ended)",
                {"status": run.status},
                req.id,
            )
        return take_inputs(session, req, run, _skill_or_fail(session, run, pkg_for), request_dir)


def _skill_or_fail(session: Session, run: Run, pkg_for: Callable[[], SkillPackage]) -> SkillPackage:
    """The skill of a run waiting for its upload. One uninstalled since the job was created
    can never run: the job ends failed SKILL_NOT_FOUND (as the worker ends a sent run whose
    skill is gone), not queued until the upload wait expires, and the upload gets the 404."""
    try:
        return pkg_for()
    except ApiError as exc:
        if exc.code == ErrorCode.SKILL_NOT_FOUND:
            error = RunError(ErrorCode.SKILL_NOT_FOUND, exc.message)
            if run_states.fail_awaiting_upload(session, run.id, error):
                context.run_events(run).state_changed(
                    RunStatus.QUEUED,
                    RunStatus.FAILED,
                    "skill_not_found",
                    error=error.as_dict(),
                    terminal=True,
                )
        raise


def take_inputs(
    session: Session, req: Request, run: Run, pkg: SkillPackage, request_dir: Path
) -> Accepted:
    """Receive the input zip (the upload lock held) and send the run. A file input named by
    path must be in the zip: else 400, and the upload is dropped so it may be sent again."""
    files = receive_inputs(request_dir, req.id)
    reused = (run.runtime_options or {}).get("workspace")
    bound = {
        b.get("input_key")
        for b in (reused.get("file_bindings") or [] if isinstance(reused, dict) else [])
        if isinstance(b, dict)
    }
    try:
        check_named_uploads(
            pkg, {k: v for k, v in run.input.items() if k not in bound}, {f.path for f in files}
        )
    except ApiError as exc:
        shutil.rmtree(request_dir / "uploads", ignore_errors=True)
        (request_dir / "uploads").mkdir()
        (request_dir / "input_manifest.json").unlink(missing_ok=True)
        exc.request_id = req.id
        raise
    accepted = bind_upload(session, req, run, pkg, {f.path: f.sha256 for f in files})
    return dataclasses.replace(accepted, extracted_files=tuple(sorted(f.path for f in files)))


def bind_upload(
    session: Session, req: Request, run: Run, pkg: SkillPackage, upload_hashes: dict[str, str]
) -> Accepted:
    """After an upload: serve from the cache when a succeeded run matches, else send the run."""
    options = RuntimeOptions.from_dict(run.runtime_options)
    reused = (run.runtime_options or {}).get("workspace")
    run.cache_key = job_cache.key_for(
        pkg,
        run.engine,
        run.model,
        run.parameter,
        run.input,
        upload_hashes,
        options,
        reused.get("cache_token") if isinstance(reused, dict) else None,
    )
    cached = (
        job_cache.find_cached(session.connection(), run.cache_key, run.owner)
        if job_cache.cache_usable(options)
        else None
    )
    if cached is not None:
        req.run_id, req.cache_hit = cached.id, True
        session.flush()
        session.delete(run)  # the placeholder run never started
        session.commit()
        return Accepted(req.id, True, cached.status)
    run.needs_upload = False
    dispatch = Dispatch.stamp(run.queued_at)
    run.celery_task_id, run.queued_at, run.dispatched_at = (
        dispatch.task_id,
        dispatch.queued_at,
        dispatch.dispatched_at,
    )
    session.commit()
    submit(pkg, run.id, run.engine, options, dispatch.task_id, req.id)
    return Accepted(req.id, req.cache_hit, run.status)


def submit(
    pkg: SkillPackage,
    run_id: str,
    engine: str | None,
    options: RuntimeOptions,
    task_id: str,
    request_id: str | None = None,
) -> None:
    """Send a committed, stamped run by task name, on its engine's queue."""
    # Celery's time limits follow the run's own (a backstop above its deadline): the worker
    # keeps a timer per task until its limit passes, so limits sized to the run keep fewer.
    skill_timeout = pkg.manifest.automation.timeout_sec if pkg.manifest else None
    timeout = run_timeout(context.settings(), skill_timeout, options.timeout_sec)
    context.queue().enqueue(
        run_id,
        queue_for(pkg, engine),
        task_id=task_id,
        time_limits=task_time_limits(timeout),
        label=task_label(pkg.id, engine, request_id),
    )
