"""Schemas of the management API (/v1/management): what any front end, the built-in UI
included, reads to draw skills, engines and a run's conversation."""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from api.schemas.output_fields import ListOrEmpty, UtcDateTime


class SkillSchemas(Schema):
    skill_id = fields.String()
    input = fields.Dict(allow_none=True)
    parameter = fields.Dict(allow_none=True)
    output = fields.Dict(allow_none=True)


class EngineSummary(Schema):
    engine = fields.String()
    cli_version = fields.String(allow_none=True)
    installed = fields.Boolean()
    auth_ready = fields.Boolean()
    sandbox_status = fields.String(
        metadata={"description": "the CLI's own sandbox as runs start it (codex: workspace-write)"}
    )
    models_count = fields.Integer()
    binary_path = fields.String(allow_none=True)
    tested = fields.Boolean(metadata={"description": "its version is in the tested matrix"})
    tested_versions = fields.List(fields.String())
    retired = fields.Boolean(metadata={"description": "nobody can run it any more (iflow)"})
    retired_reason = fields.String(allow_none=True)


class EngineDetail(EngineSummary):
    models = fields.List(fields.String())
    default_model = fields.String(allow_none=True)
    upgrade_status = fields.String(
        metadata={"description": "always idle: deploy/install-engines.sh installs the CLIs"}
    )
    last_error = fields.String(allow_none=True)


class RunConversationState(Schema):
    request_id = fields.String()
    run_id = fields.String()
    status = fields.String()
    skill_id = fields.String()
    engine = fields.String(allow_none=True)
    model = fields.String(allow_none=True)
    created_at = UtcDateTime()
    updated_at = UtcDateTime()
    started_at = UtcDateTime(allow_none=True)
    finished_at = UtcDateTime(allow_none=True)
    waiting_for_upload = fields.Boolean()
    pending_interaction_id = fields.Integer(allow_none=True)
    interaction_count = fields.Integer()
    auto_decision_count = fields.Integer()
    last_auto_decision_at = UtcDateTime(allow_none=True)
    recovery_state = fields.String()
    recovered_at = UtcDateTime(allow_none=True)
    recovery_reason = fields.String(allow_none=True)
    poll_logs = fields.Boolean(
        metadata={"description": "true while the logs still grow (queued or running)"}
    )
    warnings = ListOrEmpty(fields.Raw())
    error = fields.Dict(allow_none=True)


class FileEntry(Schema):
    path = fields.String()
    type = fields.String(metadata={"description": "file or dir"})
    size = fields.Integer(allow_none=True)


class RunFiles(Schema):
    request_id = fields.String()
    status = fields.String()
    entries = fields.List(fields.Nested(FileEntry))
    truncated = fields.Boolean()


class FilePreviewArgs(Schema):
    class Meta:
        unknown = EXCLUDE

    path = fields.String(
        required=True,
        validate=validate.Length(min=1, max=1024),
        metadata={"description": "a path from the run's file tree"},
    )


class FilePreview(Schema):
    request_id = fields.String()
    path = fields.String()
    size = fields.Integer()
    mime = fields.String()
    kind = fields.String(metadata={"description": "text, json (pretty), image or binary"})
    truncated = fields.Boolean()
    text = fields.String(metadata={"description": "text and json: the first 256 KiB"})
    data_url = fields.String(metadata={"description": "image: the image as a data: URL"})


class AuditArgs(Schema):
    class Meta:
        unknown = EXCLUDE

    limit = fields.Integer(load_default=50, validate=validate.Range(min=1, max=500))
    cursor = fields.Integer(
        load_default=None,
        validate=validate.Range(min=1),
        metadata={"description": "a `next_cursor` of the previous page"},
    )
    action = fields.String(
        load_default=None,
        validate=validate.OneOf(
            ["skill.install", "skill.delete", "runs.cleanup", "run.cancel", "run.reply"]
        ),
    )


class AuditEntry(Schema):
    id = fields.Integer()
    at = UtcDateTime()
    token_name = fields.String(allow_none=True, metadata={"description": "null: no tokens"})
    action = fields.String()
    target = fields.String(
        allow_none=True, metadata={"description": "a request id, or a skill (or install) id"}
    )
    status_code = fields.Integer(metadata={"description": "how the API answered the action"})
    http_request_id = fields.String(allow_none=True, metadata={"description": "X-Request-ID"})
    details = fields.Dict()


class AuditPage(Schema):
    items = fields.List(fields.Nested(AuditEntry))
    next_cursor = fields.Integer(allow_none=True)
