"""One-off runs of a skill package that is validated like an install but never installed.

The package is unpacked to `<data>/requests/<request_id>/skill/<skill_id>/`, where the worker
reads the skill of a run of kind "temp"; everything else is the jobs flow of `api.jobs`.
"""

from __future__ import annotations

import json
import shutil
import uuid
from typing import Any

from flask import request
from marshmallow import ValidationError
from sqlalchemy import Connection

from api import context
from api.errors import ApiError
from api.jobs.create import Accepted, create_job
from api.package_schemas import TempRunCreate
from api.zip_bodies import body_cap, body_limit, save_zip_body, unpack_package_or_400
from runner_core.error_codes import ErrorCode
from runner_core.skills import SkillPackage, load_skill
from runner_core.skills.package import PACKAGE_LIMITS
from runner_core.store.models import Request

TEMP = "temp"


def parse_run_request() -> dict[str, Any]:
    """The multipart `request` field: JSON holding a job body without skill_id."""
    raw = request.form.get("request", "")
    try:
        body = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ApiError(
            400,
            ErrorCode.INVALID_REQUEST,
            f"the 'request' field is not JSON: {exc}",
            {"field": "request"},
        ) from exc
    except RecursionError as exc:
        raise ApiError(
            400,
            ErrorCode.INVALID_REQUEST,
            "the 'request' field is nested too deeply",
            {"field": "request"},
        ) from exc
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


def create_temp_run(conn: Connection) -> tuple[Accepted, SkillPackage]:
    """Validate the package and the request, unpack the skill, then create the run as a job."""
    with body_limit(body_cap(PACKAGE_LIMITS)):  # the form holds the package
        body = parse_run_request()
    request_id = str(uuid.uuid4())
    request_dir = context.settings().requests_dir / request_id
    request_dir.mkdir(parents=True)
    try:
        save_zip_body(
            "package", request_dir / "package.zip", body_cap(PACKAGE_LIMITS), allow_raw=False
        )
        pkg = unpack_package_or_400(request_dir / "package.zip", request_dir)
        (request_dir / "package.zip").unlink()
        accepted = create_job(conn, pkg, body, kind=TEMP, request_id=request_id)
    except ApiError:  # raised before any row was written: leave nothing behind
        shutil.rmtree(request_dir, ignore_errors=True)
        raise
    return accepted, pkg


def temp_skill(req: Request) -> SkillPackage:
    """The one-off run's own copy of its skill package."""
    return load_skill(context.settings().requests_dir / req.id / "skill" / req.skill_id)
