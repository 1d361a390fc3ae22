"""Request/response schemas shared by the resources (they also document the OpenAPI)."""

from __future__ import annotations

from typing import Any

from marshmallow import (
    EXCLUDE,
    Schema,
    ValidationError,
    fields,
    pre_load,
    validate,
    validates_schema,
)

from api.jobs import workspace as run_files
from api.schemas.input_fields import Timestamp, WholeNumber
from api.schemas.output_fields import ListOrEmpty, UtcDateTime
from api.schemas.status_document import status_document
from runner_core.runtime_options import moved_in
from runner_core.statuses import RunStatus

LOG_STREAMS = ("stdout", "stderr", "prompt", "pty")  # logs/<stream>.txt (pty: stdout)
# the largest id, seq, cursor or byte offset a request may name: it fits the databases' 64-bit
# integers and a JavaScript number (beyond it a query overflowed into a 500)
MAX_INT = 2**53 - 1


def up_to_max(min: int = 0) -> validate.Range:  # noqa: A002 - marshmallow's own name
    """A request integer's range: from `min` to MAX_INT."""
    return validate.Range(min=min, max=MAX_INT)


class JobCreate(Schema):
    class Meta:
        unknown = EXCLUDE

    skill_id = fields.String(validate=validate.Length(min=1, max=128))
    skill_source = fields.String(
        validate=validate.OneOf(["installed", "temp_upload"]),
        metadata={"description": "temp_upload: the skill package comes with the upload"},
    )
    engine = fields.String(load_default=None, allow_none=True)
    parameter = fields.Dict(load_default=dict)
    input = fields.Dict(load_default=dict)
    model = fields.String(load_default=None, allow_none=True)
    effort = fields.String(
        load_default=None,
        allow_none=True,
        metadata={
            "description": "reasoning effort; replaces the model's `@effort` (not `default`)"
        },
    )
    provider_id = fields.String(
        load_default=None,
        allow_none=True,
        metadata={"description": "the model's provider (400 MODEL_UNSUPPORTED if not)"},
    )
    runtime_options = fields.Dict(load_default=dict)
    callback_url = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(max=2048),
        metadata={"description": "POSTed the status document when the run ends (signed)"},
    )
    callback_on_waiting = fields.Boolean(
        load_default=False, metadata={"description": "also when it waits for a reply"}
    )

    @pre_load
    def _runtime_options_beside(self, data: Any, **_kwargs: object) -> Any:
        """Other fields are dropped unread (clients send their own), but a runtime option
        sent at the top (`execution_mode`) is the client's: it goes into runtime_options."""
        if not isinstance(data, dict):
            return data
        try:
            return moved_in(data)
        except ValueError as exc:
            raise ValidationError(
                f"{exc} is sent both at the top and in runtime_options, with other values",
                str(exc),
            ) from exc

    @validates_schema
    def _skill_named(self, data: dict, **_kwargs: object) -> None:
        if "skill_id" in self.fields and data.get("skill_source") != "temp_upload":
            if not data.get("skill_id"):
                raise ValidationError("Missing data for required field.", "skill_id")


class JobCreated(Schema):
    request_id = fields.String()
    cache_hit = fields.Boolean()
    status = fields.String()


class JobUploaded(JobCreated):
    extracted_files = fields.List(
        fields.String(), metadata={"description": "the paths the input zip held (under uploads/)"}
    )


class ErrorInfo(Schema):
    code = fields.String(required=True, metadata={"description": "one of docs/api.md's codes"})
    message = fields.String(required=True)
    details = fields.Dict(required=True)
    request_id = fields.String(required=True, allow_none=True)


class ErrorBody(Schema):
    """The body of every error answer (the OpenAPI document's `default` response)."""

    error = fields.Nested(ErrorInfo, required=True)


class JobStatus(Schema):
    """The status document of a job or one-off run, dumped from a JobRow."""

    request_id = fields.String()
    run_id = fields.String(allow_none=True)
    status = fields.String()
    skill_id = fields.String()
    skill_version = fields.String(allow_none=True)
    engine = fields.String(allow_none=True)
    model = fields.String(allow_none=True)
    cache_hit = fields.Boolean()
    created_at = UtcDateTime()
    updated_at = UtcDateTime()
    queued_at = UtcDateTime(allow_none=True)
    started_at = UtcDateTime(allow_none=True)
    finished_at = UtcDateTime(allow_none=True)
    worker = fields.String(allow_none=True)
    attempt = fields.Integer()
    waiting_for_upload = fields.Boolean()
    pending_interaction_id = fields.Integer(allow_none=True)
    interaction_count = fields.Integer()
    recovery_state = fields.String()
    recovered_at = UtcDateTime(allow_none=True)
    recovery_reason = fields.String(allow_none=True)
    auto_decision_count = fields.Integer()
    last_auto_decision_at = UtcDateTime(allow_none=True)
    warnings = ListOrEmpty(fields.Raw())
    error = fields.Dict(allow_none=True)
    request_kind = fields.String(
        metadata={"description": "job, or temp for a one-off run (POST /v1/temp-skill-runs)"}
    )
    token_usage = fields.Dict(
        allow_none=True,
        metadata={
            "description": "tokens and cost the engine CLI reported for the run, all its turns (repair "
            "rounds included): input_tokens (cached included), output_tokens (reasoning "
            "included), cached_input_tokens and reasoning_tokens where the CLI reports them, "
            "cost_usd where the CLI prices the run or the operator's price table names the "
            "model; null for script skills and CLIs that report none"
        },
    )
    parent_request_id = fields.String(
        allow_none=True,
        metadata={
            "description": "a composite's step: the request of the composite it is a step of "
            "(null for any other run)"
        },
    )
    step_name = fields.String(
        allow_none=True,
        metadata={
            "description": "a composite's step: which step, item and attempt it is (`search`, "
            "`fetch[3]#2`, `2:search`, `summarize@1` for a call); null for any other run"
        },
    )

    # where the run's files are, for clients that chain runs in one workspace
    workspace_dir = fields.Function(
        lambda job: run_files.workspace_dir(job.run_id),
        metadata={"description": "the run's directory on the server (absolute)"},
    )
    workspaceDir = fields.Function(lambda job: run_files.workspace_dir(job.run_id))  # noqa: N815
    resultJsonPath = fields.Function(  # noqa: N815
        lambda job: run_files.result_json_path(job.run_id, job.skill_id),
        metadata={
            "description": "the run's result document: `result/<skill>.<n>/result.json` under "
            "workspace_dir (also in the bundle), else `result/result.json`"
        },
    )


class StatusList(fields.List):
    """A list of JobStatus documents (documented as such), each written by `status_document`:
    a page of 50 dumps in a tenth of the time."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(fields.Nested(JobStatus), **kwargs)

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> list[Any] | None:
        return None if value is None else [status_document(job) for job in value]


class JobResult(Schema):
    request_id = fields.String()
    result = fields.Dict()
    artifacts = fields.List(
        fields.Dict(),
        metadata={"description": "the run's artifacts: path, role, mime, size, sha256 and url"},
    )
    token_usage = fields.Dict(
        allow_none=True, metadata={"description": "as in the run's status (token_usage)"}
    )


class JobLogs(Schema):
    request_id = fields.String()
    prompt = fields.String(allow_none=True)
    stdout = fields.String(allow_none=True)
    stderr = fields.String(allow_none=True)
    truncated = fields.List(fields.String())


class LogRangeArgs(Schema):
    class Meta:
        unknown = EXCLUDE

    stream = fields.String(
        load_default="stdout",
        validate=validate.OneOf(LOG_STREAMS),
        metadata={
            "description": "which log: stdout, stderr or prompt; pty (the spec's terminal "
            "stream) is stdout: CLIs run on pipes here"
        },
    )
    byte_from = WholeNumber(
        load_default=0,
        validate=up_to_max(),
        metadata={
            "description": "first byte (0-based); to follow a run, pass the last answer's byte_to"
        },
    )
    byte_to = WholeNumber(
        load_default=None,
        allow_none=True,
        validate=up_to_max(),
        metadata={
            "description": "end (exclusive); default and cap: byte_from + 1 MiB, or the log's "
            "size; 0 means the default (as Skill-Runner's clients send it)"
        },
    )


class LogRange(Schema):
    request_id = fields.String()
    stream = fields.String()
    byte_from = fields.Integer(
        metadata={
            "description": "start of what `text` holds: the byte_from asked for, or just after "
            "the UTF-8 character it would split"
        }
    )
    byte_to = fields.Integer(
        metadata={
            "description": "end of what `text` holds (exclusive); never splits a UTF-8 character"
        }
    )
    size = fields.Integer(metadata={"description": "the log's size now (0 when not written yet)"})
    status = fields.String(
        metadata={
            "description": "the run's status: once it is terminal and "
            "byte_to == size, the log is complete"
        }
    )
    text = fields.String()
    chunk = fields.String(metadata={"description": "the same as `text` (Skill-Runner's name)"})


class PendingQuestion(Schema):
    interaction_id = fields.Integer()
    kind = fields.String(
        metadata={"description": "open_text|choose_one|confirm|fill_fields|risk_ack"}
    )
    prompt = fields.String()
    options = fields.List(fields.Dict(), metadata={"description": "[{label, value}]"})
    ui_hints = fields.Dict()
    default_decision_policy = fields.String()
    required_fields = fields.List(fields.String())
    context = fields.Dict()


class PendingInteraction(Schema):
    request_id = fields.String()
    status = fields.String()
    pending = fields.Nested(PendingQuestion, allow_none=True)


class InteractionReply(Schema):
    class Meta:
        unknown = EXCLUDE

    interaction_id = WholeNumber(required=True, validate=up_to_max(1))
    budget = fields.Raw(  # checked as runtime_options.budget is (400 SCHEMA_VALIDATION_FAILED)
        metadata={
            "type": "object",
            "description": "a new runtime_options.budget for the run ({max_tokens, max_usd}): "
            "a run that reached its budget takes a reply only with one it has not reached",
        },
    )
    response = fields.Raw(
        required=True,
        allow_none=True,
        metadata={
            "description": "text (open_text), an option's value (choose_one), true/false "
            "(confirm, risk_ack), or an object of field values (fill_fields)"
        },
    )
    idempotency_key = fields.String(load_default=None, validate=validate.Length(min=1, max=128))


class ReplyResult(Schema):
    request_id = fields.String()
    status = fields.String()
    accepted = fields.Boolean()


class EventsArgs(Schema):
    class Meta:
        unknown = EXCLUDE

    cursor = WholeNumber(
        load_default=0,
        validate=up_to_max(),
        metadata={"description": "resume after this seq (the Last-Event-ID header works too)"},
    )


class EventHistoryArgs(Schema):
    class Meta:
        unknown = EXCLUDE

    from_seq = WholeNumber(load_default=None, validate=up_to_max(0))  # 0: from the start
    to_seq = WholeNumber(load_default=None, validate=up_to_max(0))
    from_ts = Timestamp(load_default=None, metadata={"description": "ISO 8601 time, inclusive"})
    to_ts = Timestamp(load_default=None, metadata={"description": "ISO 8601 time, inclusive"})
    limit = WholeNumber(load_default=1000, validate=validate.Range(min=1, max=10000))


class EventHistory(Schema):
    request_id = fields.String()
    status = fields.String()
    events = fields.List(
        fields.Dict(),
        metadata={"description": "FCMP envelopes (chat messages under /chat), by seq"},
    )
    count = fields.Integer(metadata={"description": "how many `events` holds"})
    source = fields.String(metadata={"description": "where they are read from: events.jsonl"})
    cursor_floor = fields.Integer(metadata={"description": "the first seq the run holds (0: none)"})
    cursor_ceiling = fields.Integer(metadata={"description": "the last seq the run holds"})


class WebhookAttemptDoc(Schema):
    attempt = fields.Integer()
    event = fields.String(metadata={"description": "terminal | waiting_user"})
    run_status = fields.String()
    status_code = fields.Integer(allow_none=True)
    error = fields.String(allow_none=True)
    delivered = fields.Boolean()
    created_at = UtcDateTime()


class WebhookLog(Schema):
    request_id = fields.String()
    callback_url = fields.String(allow_none=True)
    state = fields.String(
        allow_none=True, metadata={"description": "pending|scheduled|delivered|failed"}
    )
    attempts = fields.List(fields.Nested(WebhookAttemptDoc))


class CancelResult(Schema):
    request_id = fields.String()
    run_id = fields.String()
    accepted = fields.Boolean()
    status = fields.String()
    message = fields.String(metadata={"description": "what the cancel did, for people"})


class SkillSummary(Schema):
    id = fields.String()
    format = fields.String(metadata={"description": "SKILL.md or skill.json (openEvo)"})
    name = fields.String(allow_none=True)
    version = fields.String(allow_none=True)
    description = fields.String(allow_none=True)
    engines = fields.List(fields.String(), allow_none=True)
    unsupported_engines = fields.List(fields.String())
    effective_engines = fields.List(fields.String())
    execution_modes = fields.List(fields.String())
    health = fields.String()
    errors = fields.List(fields.String())
    warnings = fields.List(fields.String())
    category = fields.String(
        allow_none=True,
        metadata={"description": "skill.json `category`; SKILL.md frontmatter `metadata.category`"},
    )
    tags = fields.List(fields.String())
    author = fields.String(allow_none=True)


class SkillListArgs(Schema):
    """Filters of GET /v1/skills, each optional."""

    category = fields.String(metadata={"description": "this category only (any case)"})
    tag = fields.String(metadata={"description": "skills carrying this tag"})
    q = fields.String(
        metadata={
            "description": "words found in the id, name, description, category, tags or author"
        }
    )


class SkillDetail(SkillSummary):
    entrypoint = fields.Dict()
    entrypoints = fields.Dict(metadata={"description": "`entrypoint` again, under the spec's name"})
    schemas = fields.Dict()
    artifacts = fields.List(fields.Dict())
    runtime = fields.Dict(allow_none=True)
    automation = fields.Dict()
    files = fields.List(fields.String())


class JobListArgs(Schema):
    class Meta:
        unknown = EXCLUDE

    status = fields.String(load_default=None, validate=validate.OneOf(list(RunStatus)))
    skill_id = fields.String(load_default=None)
    engine = fields.String(load_default=None)
    limit = WholeNumber(load_default=50, validate=validate.Range(min=1, max=500))
    cursor = fields.String(load_default=None)


class WaitArgs(Schema):
    class Meta:
        unknown = EXCLUDE

    wait_sec = fields.Float(
        load_default=0.0,
        validate=validate.Range(min=0, max=60),
        metadata={
            "description": "block up to this many seconds (max 60) until the run has ended or needs "
            "the client (upload, reply); answers at once when the run ends"
        },
    )


class JobList(Schema):
    """A page of jobs, dumped from a JobPage."""

    items = StatusList()
    next_cursor = fields.String(allow_none=True)


class SandboxState(Schema):
    mode = fields.String()
    box = fields.String(allow_none=True, metadata={"description": "bwrap, or null: limits only"})
    process_limit = fields.String(allow_none=True, metadata={"description": "cgroup or rlimit"})
    network = fields.String(
        metadata={
            "description": "what engine CLIs reach: provider (their provider and the skill's "
            "allowlist, through the run's egress proxy) or open"
        }
    )


class Health(Schema):
    """GET /healthz, 200 and 503 alike."""

    status = fields.String(metadata={"description": "ok, or degraded"})
    database = fields.String()
    broker = fields.String()
    disk = fields.String()
    demo_llm = fields.Boolean()
    sandbox = fields.Nested(SandboxState)
    last_sweep_sec_ago = fields.Float(
        allow_none=True,
        metadata={
            "description": "seconds since the sweep last ended (null: none recorded, or a "
            "broker other than Redis); far past its interval, no worker or no beat runs"
        },
    )


class ArtifactManifest(Schema):
    request_id = fields.String()
    artifacts = fields.List(fields.Dict())
    missing_required = fields.List(fields.String())
    other_writes = fields.List(
        fields.Dict(),
        metadata={
            "description": "{path, size} of files the run wrote outside artifacts/ and "
            "result/ (the first 200)"
        },
    )


class EngineModel(Schema):
    id = fields.String(metadata={"description": "as configured; codex: name@reasoning_effort"})
    display_name = fields.String()
    provider_id = fields.String()
    provider = fields.String()
    model = fields.String(metadata={"description": "the name without the effort"})
    reasoning_effort = fields.String(allow_none=True)
    supported_effort = fields.List(
        fields.String(), metadata={"description": "efforts configured for this model name"}
    )
    deprecated = fields.Boolean()


class EngineModels(Schema):
    engine = fields.String()
    default_model = fields.String(allow_none=True)
    models = fields.List(fields.Nested(EngineModel))
    model_ids = fields.List(fields.String(), metadata={"description": "the models' ids"})


# Answers that are not JSON bodies, for `blp.doc(responses={"200": ...})`.
def _binary(description: str, media_type: str) -> dict:
    schema = {"type": "string", "format": "binary"}
    return {"description": description, "content": {media_type: {"schema": schema}}}


# one event of the stream: `event` snapshot, chat_event or heartbeat; `data` JSON text
SSE_EVENT = {
    "type": "object",
    "properties": {
        "event": {"type": "string"},
        "data": {"type": "string"},
        "id": {"type": "string"},
    },
}
SSE_STREAM = {
    "description": "Server-Sent Events",
    "content": {"text/event-stream": {"schema": SSE_EVENT}},
}
ZIP_FILE = _binary("a zip archive", "application/zip")
_ZIP = {"type": "string", "format": "binary"}
# request bodies read from the form or the stream, for `blp.doc(**UPLOAD_BODY)`: the media
# types they list are the ones the route takes (api/media_types.py)
UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "file": {**_ZIP, "description": "the input zip"},
                        "skill_package": {
                            **_ZIP,
                            "description": "the skill package, when it comes with the upload",
                        },
                    },
                }
            },
            "application/zip": {"schema": _ZIP},
        },
    }
}
REPLY_FILES_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "metadata": {
                            "type": "string",
                            "description": "JSON: {interaction_id, idempotency_key?, message?, "
                            "bindings?: [{slot, file_index}]}",
                        },
                        "files": {"type": "array", "items": _ZIP},
                    },
                    "required": ["metadata", "files"],
                }
            }
        },
    }
}
ANY_FILE = _binary("the file, as an attachment", "*/*")
