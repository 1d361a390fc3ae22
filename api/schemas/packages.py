"""Schemas of the skill package endpoints and of one-off (temp) skill runs."""

from __future__ import annotations

from marshmallow import Schema, fields

from api.schemas import JobCreate
from api.schemas.output_fields import ListOrEmpty, UtcDateTime


class InstallStatus(Schema):
    """GET /v1/skill-packages/{install_id} (and a successful POST), dumped from SkillInstall."""

    install_id = fields.String(attribute="id")
    status = fields.String()  # installing | succeeded | failed
    skill_id = fields.String(allow_none=True)
    version = fields.String(allow_none=True)
    previous_version = fields.String(allow_none=True)
    action = fields.String(allow_none=True)  # installed | updated
    archive_path = fields.String(allow_none=True)
    package_sha256 = fields.String(allow_none=True)
    package_size = fields.Integer(allow_none=True)
    warnings = ListOrEmpty(fields.String())
    error = fields.Dict(allow_none=True)
    created_at = UtcDateTime()
    finished_at = UtcDateTime(allow_none=True)


class TempRunCreate(JobCreate):
    """The `request` field of POST /v1/temp-skill-runs: a job body without skill_id."""

    class Meta(JobCreate.Meta):
        exclude = ("skill_id", "skill_source")


class TempRunCreated(Schema):
    request_id = fields.String()
    skill_id = fields.String()
    skill_version = fields.String(allow_none=True)
    cache_hit = fields.Boolean()
    status = fields.String()
    warnings = fields.List(fields.String())


def package_form_doc(with_request: bool) -> dict:
    """OpenAPI requestBody of a multipart package upload (also accepted: a raw zip body)."""
    props: dict = {
        "package": {
            "type": "string",
            "format": "binary",
            "description": "zip of one skill directory",
        }
    }
    if with_request:
        props["request"] = {
            "type": "string",
            "description": "JSON: the POST /v1/jobs body "
            "without skill_id (engine, parameter, input, model, runtime_options)",
        }
    content = {
        "multipart/form-data": {
            "schema": {"type": "object", "properties": props, "required": list(props)}
        }
    }
    if not with_request:
        content["application/zip"] = {"schema": {"type": "string", "format": "binary"}}
    return {"requestBody": {"required": True, "content": content}}
