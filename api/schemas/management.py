"""Schemas of the management API (/v1/management): what any front end, the built-in UI
included, reads to draw skills, engines and a run's conversation."""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from api.schemas import EngineModel, JobListArgs, SkillSummary, StatusList, up_to_max
from api.schemas.input_fields import WholeNumber
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
    upgrade_status = fields.String(
        metadata={
            "description": "the status of its newest upgrade (POST /v1/engines/{engine}/upgrade"
            "): queued, running, succeeded or failed; idle when none was asked"
        }
    )


class EngineDetail(EngineSummary):
    models = fields.List(fields.Nested(EngineModel))
    model_ids = fields.List(fields.String())
    default_model = fields.String(allow_none=True)
    last_error = fields.String(allow_none=True)


class EngineUpgradeRequest(Schema):
    version = fields.Raw(
        required=True,
        allow_none=True,  # answered 400 ENGINE_VERSION_INVALID, as any other non-version
        metadata={
            "description": "a semver (1.2.3, 1.2.3-beta.1) or `latest`; anything else, a range, "
            "tag, path, URL or flag, is 400 ENGINE_VERSION_INVALID",
            "type": "string",
        },
    )


class UpgradeWarning(Schema):
    code = fields.String()
    message = fields.String()


class EngineUpgrade(Schema):
    """An engine upgrade: an npm install of a version of the engine's CLI by a worker."""

    upgrade_id = fields.String()
    engine = fields.String()
    version = fields.String(metadata={"description": "as asked (= version_requested)"})
    version_requested = fields.String()
    version_installed = fields.String(
        allow_none=True, metadata={"description": "its package's version once installed"}
    )
    status = fields.String(metadata={"description": "queued, running, succeeded or failed"})
    upgrade_status = fields.String(metadata={"description": "= status (idle: never upgraded)"})
    requested_by = fields.String(allow_none=True, metadata={"description": "the token's name"})
    error = fields.Dict(allow_none=True, metadata={"description": "{code, message} when failed"})
    log_path = fields.String(metadata={"description": "npm's output, under the data directory"})
    created_at = UtcDateTime()
    started_at = UtcDateTime(allow_none=True)
    ended_at = UtcDateTime(allow_none=True)
    tested = fields.Boolean(
        metadata={
            "description": "the version (installed, else asked) is one the engine tests passed "
            "on (deploy/engines/tested-versions.json, docs/engine-matrix.md)"
        }
    )
    tested_versions = fields.List(fields.String())
    warnings = fields.List(
        fields.Nested(UpgradeWarning),
        metadata={"description": "ENGINE_VERSION_UNTESTED when not tested"},
    )
    log_tail = fields.String(metadata={"description": "GET: the last 8 KiB of npm's output"})


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
    turn_ended_at = UtcDateTime(
        allow_none=True,
        metadata={
            "description": "when the ended run's last turn (from started_at) ended: "
            "finished_at, or when it asked the question the run ended waiting on"
        },
    )
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
    token_usage = fields.Dict(
        allow_none=True, metadata={"description": "as in the job's status (token_usage)"}
    )
    request_kind = fields.String(
        metadata={"description": "job, or temp for a one-off run (its routes: /v1/temp-skill-runs)"}
    )
    parent_request_id = fields.String(
        allow_none=True, metadata={"description": "as in the job's status (parent_request_id)"}
    )
    step_name = fields.String(
        allow_none=True, metadata={"description": "as in the job's status (step_name)"}
    )


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

    limit = WholeNumber(load_default=50, validate=validate.Range(min=1, max=500))
    cursor = WholeNumber(
        load_default=None,
        validate=up_to_max(1),
        metadata={"description": "a `next_cursor` of the previous page"},
    )
    action = fields.String(
        load_default=None,
        validate=validate.OneOf(
            [
                "skill.install",
                "skill.delete",
                "runs.cleanup",
                "run.cancel",
                "run.reply",
                "engine.upgrade",
            ]
        ),
    )


class AuditEntry(Schema):
    id = fields.Integer()
    at = UtcDateTime()
    token_name = fields.String(allow_none=True, metadata={"description": "null: no tokens"})
    action = fields.String()
    target = fields.String(
        allow_none=True,
        metadata={"description": "a request id, a skill (or install) id, or an engine"},
    )
    status_code = fields.Integer(metadata={"description": "how the API answered the action"})
    http_request_id = fields.String(allow_none=True, metadata={"description": "X-Request-ID"})
    details = fields.Dict()


class AuditPage(Schema):
    items = fields.List(fields.Nested(AuditEntry))
    next_cursor = fields.Integer(allow_none=True)


class SkillList(Schema):
    skills = fields.List(fields.Nested(SkillSummary))


class EngineList(Schema):
    engines = fields.List(fields.Nested(EngineSummary))


class ManagementRunListArgs(JobListArgs):
    # the Zotero plugin asks up to 1000 at once
    limit = WholeNumber(load_default=50, validate=validate.Range(min=1, max=1000))
    page = WholeNumber(
        load_default=None,
        # bounded: page x page_size must fit the database's row offset
        validate=validate.Range(min=1, max=1_000_000),
        metadata={"description": "numbered pages (with page_size) instead of the cursor"},
    )
    page_size = WholeNumber(load_default=None, validate=validate.Range(min=1, max=500))


class ManagementRunList(Schema):
    """`runs` (= `items`) always; with `page`/`page_size` the numbered page's `page`,
    `page_size`, `total` and `total_pages`, else the cursor pages' `next_cursor`."""

    runs = StatusList()
    items = StatusList()
    next_cursor = fields.String(allow_none=True)
    page = fields.Integer()
    page_size = fields.Integer()
    total = fields.Integer()
    total_pages = fields.Integer()


class RuntimeOptionsInfo(Schema):
    service_defaults = fields.Dict(
        metadata={"description": "hard_timeout_seconds, max_hard_timeout_seconds, ..."}
    )
    options = fields.List(fields.Dict(), metadata={"description": "the options a run may set"})


class ClientFileEntry(Schema):
    path = fields.String()
    name = fields.String()
    is_dir = fields.Boolean()
    depth = fields.Integer(metadata={"description": "how many folders deep (0: the run's top)"})
    size = fields.Integer(allow_none=True)


class ClientRunFiles(Schema):
    """GET /v1/jobs/{id}/files: the run's tree as Skill-Runner's clients read it."""

    request_id = fields.String()
    run_id = fields.String()
    entries = fields.List(fields.Nested(ClientFileEntry))
    truncated = fields.Boolean()


class ClientFilePreview(Schema):
    """GET /v1/jobs/{id}/file?path=: one file's preview as Skill-Runner's clients read it."""

    request_id = fields.String()
    run_id = fields.String()
    path = fields.String()
    preview = fields.Dict(
        metadata={
            "description": "{mode: text|binary, content, size, meta, detected_format, "
            "json_pretty?, data_url?}"
        }
    )
