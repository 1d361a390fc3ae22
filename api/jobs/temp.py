"""One-off runs of a skill package that is validated like an install but never installed.

The package is unpacked to `<data>/requests/<request_id>/skill/<skill_id>/`, where the worker
reads the skill of a run of kind "temp"; everything else is the jobs flow of `api.jobs`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

from flask import request
from marshmallow import ValidationError
from sqlalchemy import Connection

from api import context, idempotency, json_bodies
from api.errors import ApiError
from api.jobs.create import create_job
from api.schemas.packages import TempRunCreate
from api.zip_bodies import body_cap, body_limit, save_zip_body, unpack_package_or_400
from runner_core.error_codes import ErrorCode
from runner_core.skills import SkillPackage, load_skill
from runner_core.skills.package import PACKAGE_LIMITS
from runner_core.store.models import Request

TEMP = "temp"


def parse_run_request() -> dict[str, Any]:
    """The multipart `request` field: JSON holding a job body without skill_id."""
    raw = request.form.get("request", "")
    return _load_request(_decode(raw, "the 'request' field") if raw.strip() else {})


def parse_json_request() -> dict[str, Any]:
    """The JSON body of a one-off run whose package comes with its upload."""
    with body_limit(1024 * 1024):
        raw = request.get_data(cache=True)
    return _load_request(_decode(raw, "the body") if raw.strip() else None)


def _decode(raw: str | bytes, what: str) -> Any:
    """The JSON `raw` holds; 400 INVALID_REQUEST when it is not JSON (or not Unicode text)."""
    try:
        return json_bodies.loads(raw)
    except json.JSONDecodeError as exc:
        raise ApiError(
            400, ErrorCode.INVALID_REQUEST, f"{what} is not JSON: {exc}", {"field": "request"}
        ) from exc
    except RecursionError as exc:
        raise ApiError(
            400, ErrorCode.INVALID_REQUEST, f"{what} is nested too deeply", {"field": "request"}
        ) from exc


def _load_request(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(
            400,
            ErrorCode.INVALID_REQUEST,
            "the 'request' field must hold a JSON object",
            {"field": "request"},
        )
    try:
        return TempRunCreate().load(body)
    except ValidationError as exc:
        raise ApiError(
            422,
            ErrorCode.REQUEST_VALIDATION_FAILED,
            "the 'request' field is invalid",
            {"fields": {"request": exc.messages}},
        ) from exc


def create_temp_run(conn: Connection) -> Any:
    """Validate the package and the request, unpack the skill, then create the run as a job.
    The answer's body; or, for an Idempotency-Key seen before, (its stored body, headers)."""
    with body_limit(body_cap(PACKAGE_LIMITS)):  # the form holds the package
        body = parse_run_request()
    request_id = str(uuid.uuid4())
    request_dir = context.settings().requests_dir / request_id
    request_dir.mkdir(parents=True)
    package = request_dir / "package.zip"
    try:
        save_zip_body("package", package, body_cap(PACKAGE_LIMITS), allow_raw=False)
        claim = idempotency.header_claim(TEMP, body, file_sha256(package))

        def create() -> dict[str, Any]:
            pkg = unpack_package_or_400(package, request_dir)
            package.unlink()
            extra = {"skill_id": pkg.id, "skill_version": pkg.version, "warnings": pkg.warnings}
            full = dataclasses.replace(claim, extra=extra) if claim else None
            accepted = create_job(conn, pkg, body, kind=TEMP, request_id=request_id, claim=full)
            return {**dataclasses.asdict(accepted), **extra}

        answer = idempotency.once(claim, create)
    except ApiError:  # raised before any row was written: leave nothing behind
        shutil.rmtree(request_dir, ignore_errors=True)
        raise
    if isinstance(answer, tuple):  # the key's first run answers; this request kept nothing
        shutil.rmtree(request_dir, ignore_errors=True)
    return answer


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


def temp_skill(req: Request) -> SkillPackage:
    """The one-off run's own copy of its skill package."""
    return load_skill(context.settings().requests_dir / req.id / "skill" / req.skill_id)
