"""One-off runs in two steps, as existing Skill-Runner clients make them: the run's JSON body
first (POST /v1/jobs with `skill_source: "temp_upload"`, or a JSON POST /v1/temp-skill-runs),
then its upload carrying the skill package (multipart `skill_package`) and the input zip
(`file`). Until the package comes, the request is only its body, kept in
`<data>/requests/<request_id>/pending_package.json`; the upload validates it against the
package exactly as a one-off run is validated, then creates the run (kind "temp", so the worker
reads the request's own package) under the request's kind, and takes the inputs.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask import request

from api import auth, context
from api.errors import ApiError
from api.jobs.create import Accepted, checked_env, create_job, take_inputs
from api.jobs.read import load_job, not_found
from api.jobs.rows import JobRow
from api.zip_bodies import (
    body_cap,
    body_limit,
    save_zip_body,
    unpack_package_or_400,
    upload_limits,
    upload_lock,
)
from runner_core import run_env
from runner_core.error_codes import ErrorCode
from runner_core.runtime_options import withheld
from runner_core.skills import SkillPackage, load_skill
from runner_core.skills.package import PACKAGE_LIMITS
from runner_core.statuses import RunStatus
from runner_core.store.cancels import CANCELED

PENDING = "pending_package.json"
PACKAGE_FIELD = "skill_package"
RUN_KIND = "temp"  # the worker reads the package from the request's own directory


def hold_for_package(body: dict[str, Any], request_kind: str) -> dict[str, Any]:
    """Keep the body of a run whose package comes with its upload; answer its request id."""
    env = checked_env(body.get("runtime_options"))
    request_id = str(uuid.uuid4())
    request_dir = context.settings().requests_dir / request_id
    request_dir.mkdir(parents=True)
    kept = {k: v for k, v in body.items() if k not in ("skill_id", "skill_source")}
    if "runtime_options" in kept:  # its variables' values go to their own file, not here
        kept["runtime_options"] = withheld(kept["runtime_options"])
    run_env.write(request_dir, env, bool(run_env.declared(body.get("runtime_options"))))
    held = {"kind": request_kind, "owner": auth.owner(), "body": kept}
    (request_dir / PENDING).write_text(json.dumps(held), encoding="utf-8")
    return {"request_id": request_id, "status": "queued", "cache_hit": False}


def held_dir(request_id: str) -> Path | None:
    """The directory of a held body, or None for an id that no held body can have: a path
    parameter is not a path (`..`, a 5,000-character name the file system refuses)."""
    try:
        canonical = str(uuid.UUID(request_id)) == request_id  # hold_for_package's form
    except ValueError:
        canonical = False
    return context.settings().requests_dir / request_id if canonical else None


def held_job(request_id: str, request_kind: str) -> JobRow | None:
    """The status of a request still waiting for its package: `queued`, waiting for its upload,
    no run yet (as Skill-Runner answers it); None when there is no such body (of this kind,
    that the caller may see). The plugin may read a run as soon as it is created, while its
    package is still being sent, and takes a 404 as the run's end."""
    request_dir = held_dir(request_id)
    if request_dir is None:
        return None
    path = request_dir / PENDING
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
        since = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except (OSError, ValueError):  # none, or taken by its upload meanwhile
        return None
    if held.get("kind") != request_kind or not auth.may_see(held.get("owner")):
        return None
    body = held.get("body") or {}
    canceled = bool(held.get("canceled"))
    return JobRow(
        request_id=request_id,
        request_kind=request_kind,
        cache_hit=False,
        created_at=since,
        run_id="",
        run_created_at=since,
        status=RunStatus.CANCELED if canceled else RunStatus.QUEUED,
        # named by the package still to come
        skill_id=None,  # type: ignore[arg-type]
        skill_version=None,
        engine=_text(body.get("engine")),
        model=_text(body.get("model")),
        updated_at=since,
        queued_at=None,
        started_at=None,
        finished_at=since if canceled else None,
        worker=None,
        attempt=0,
        needs_upload=not canceled,
        pending_interaction_id=None,
        interaction_count=0,
        recovery_state="none",
        recovered_at=None,
        recovery_reason=None,
        auto_decision_count=0,
        last_auto_decision_at=None,
        warnings=[],
        error=CANCELED.as_dict() if canceled else None,
        token_usage=None,
        owner=held.get("owner"),
    )


def cancel_held(request_id: str, request_kind: str) -> dict[str, Any] | None:
    """Cancel a request still waiting for its package (the plugin's run dialog offers a cancel
    as soon as the job is created): it is marked canceled, its status says so and a package
    sent later is refused; None when there is no such body (of this kind, the caller's)."""
    request_dir = held_dir(request_id)
    if request_dir is None or not (request_dir / PENDING).is_file():
        return None
    with upload_lock(request_dir, request_id):
        try:
            held = json.loads((request_dir / PENDING).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # taken by its upload meanwhile
            return None
        if held.get("kind") != request_kind or not auth.may_see(held.get("owner")):
            return None
        accepted = not held.get("canceled")
        if accepted:
            held["canceled"] = True
            (request_dir / PENDING).write_text(json.dumps(held), encoding="utf-8")
    return {
        "request_id": request_id,
        "run_id": "",
        "accepted": accepted,
        "status": RunStatus.CANCELED.value,
        "message": "canceled before its package came"
        if accepted
        else "the run had already ended (canceled): nothing to cancel",
    }


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def take_package_upload(request_id: str, request_kind: str) -> Accepted | None:
    """The upload of a request still waiting for its package; None when it waits for none
    (the ordinary upload then answers)."""
    request_dir = held_dir(request_id)
    if request_dir is None or not (request_dir / PENDING).is_file():
        return None
    with upload_lock(request_dir, request_id):
        try:
            held = json.loads((request_dir / PENDING).read_text(encoding="utf-8"))
        except FileNotFoundError:  # taken by the upload that held the lock
            return None
        if held.get("kind") != request_kind or not auth.may_see(held.get("owner")):
            raise not_found(request_id, request_kind)
        if held.get("canceled"):
            raise ApiError(
                409,
                ErrorCode.UPLOAD_NOT_ALLOWED,
                "this run takes no upload now (canceled before its package came)",
                {"status": RunStatus.CANCELED.value},
                request_id,
            )
        cap = body_cap(PACKAGE_LIMITS) + body_cap(upload_limits())
        with body_limit(cap):
            has_package = PACKAGE_FIELD in request.files
        if not has_package:
            raise ApiError(
                400,
                ErrorCode.PACKAGE_MISSING,
                f"this run's skill package is still to come: send it as the multipart field "
                f"'{PACKAGE_FIELD}' (the input zip as 'file')",
                {"field": PACKAGE_FIELD},
                request_id,
            )
        accepted = _create(request_id, request_kind, held["body"], cap)
        if accepted.status != "queued" or "file" not in request.files:
            return accepted  # served from the cache, started, or waiting for its inputs
        with context.db_session() as session:
            req, run = load_job(session, request_id, request_kind)
            if not run.needs_upload:
                return accepted  # a skill without file inputs: the zip is not needed
            return take_inputs(session, req, run, _package(req.id, run.skill_id), request_dir)


def _create(request_id: str, request_kind: str, body: dict[str, Any], cap: int) -> Accepted:
    """Unpack and check the package, create the run; on a refusal nothing but the held body
    is left, so the upload may be sent again."""
    request_dir = context.settings().requests_dir / request_id
    package = request_dir / "package.zip"
    try:
        save_zip_body(PACKAGE_FIELD, package, cap, allow_raw=False)
        pkg = unpack_package_or_400(package, request_dir)
        package.unlink()
        with context.connect() as conn:
            accepted = create_job(
                conn,
                pkg,
                body,
                kind=RUN_KIND,
                request_id=request_id,
                request_kind=request_kind,
                env_kept=True,
            )
    except ApiError as exc:
        package.unlink(missing_ok=True)
        for leftover in ("skill", "extracted"):
            shutil.rmtree(request_dir / leftover, ignore_errors=True)
        exc.request_id = request_id
        raise
    (request_dir / PENDING).unlink()
    return accepted


def _package(request_id: str, skill_id: str) -> SkillPackage:
    return load_skill(context.settings().requests_dir / request_id / "skill" / skill_id)


def forget_stale(owner: str | None) -> int:
    """Remove held bodies whose package never came within SKILL_RUNNER_UPLOAD_WAIT_SEC (of
    `owner`; None: of everyone); such a request has no row, so only its folder is left."""
    settings = context.settings()
    cutoff = time.time() - settings.upload_wait_sec
    removed = 0
    for held in (
        settings.requests_dir.glob(f"*/{PENDING}") if settings.requests_dir.is_dir() else []
    ):
        try:
            stale = held.stat().st_mtime < cutoff
            mine = (
                owner is None or json.loads(held.read_text(encoding="utf-8")).get("owner") == owner
            )
        except (OSError, ValueError):
            continue  # taken (or being written) meanwhile
        if stale and mine:
            shutil.rmtree(held.parent, ignore_errors=True)
            removed += 1
    return removed
