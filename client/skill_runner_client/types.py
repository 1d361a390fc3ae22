"""The shapes of the service's answers, as TypedDicts (what the SDK's methods return)."""

from __future__ import annotations

from typing import Any, TypedDict

TERMINAL_STATUSES = ("succeeded", "failed", "canceled")


class ErrorInfo(TypedDict):
    code: str
    message: str
    details: dict[str, Any]


class Created(TypedDict):
    """POST /v1/jobs and an upload's answer."""

    request_id: str
    cache_hit: bool
    status: str


class TempRunCreated(Created):
    skill_id: str
    skill_version: str | None
    warnings: list[str]


class JobStatus(TypedDict, total=False):
    request_id: str
    run_id: str | None
    status: str
    skill_id: str
    skill_version: str | None
    engine: str | None
    model: str | None
    cache_hit: bool
    created_at: str
    updated_at: str
    queued_at: str | None
    started_at: str | None
    finished_at: str | None
    worker: str | None
    attempt: int
    waiting_for_upload: bool
    pending_interaction_id: int | None
    interaction_count: int
    recovery_state: str
    recovered_at: str | None
    recovery_reason: str | None
    auto_decision_count: int
    last_auto_decision_at: str | None
    warnings: list[Any]
    error: ErrorInfo | None
    token_usage: TokenUsage | None
    request_kind: str  # job, or temp for a one-off run
    parent_request_id: str | None  # a composite's step: the composite's request
    step_name: str | None  # a composite's step: which step, item and attempt (fetch[3]#2)
    workspace_dir: str | None  # the run's directory on the server (also as workspaceDir)
    workspaceDir: str | None
    resultJsonPath: str | None  # its result document (result/<skill>.<n>/result.json)


class RunResult(TypedDict):
    status: str
    data: Any
    artifacts: list[dict[str, Any]]
    validation_warnings: list[Any]
    error: ErrorInfo | None


class TokenUsage(TypedDict, total=False):
    """What the engine CLI reported for a run (input counts cached input, output reasoning)."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    reasoning_tokens: int
    cost_usd: float  # the CLI's own figure or the service's price table


class JobResult(TypedDict):
    request_id: str
    result: RunResult
    artifacts: list[dict[str, Any]]
    token_usage: TokenUsage | None


class JobPage(TypedDict):
    items: list[JobStatus]
    next_cursor: str | None


class Logs(TypedDict):
    request_id: str
    prompt: str | None
    stdout: str | None
    stderr: str | None
    truncated: list[str]


class LogRange(TypedDict):
    request_id: str
    stream: str
    byte_from: int
    byte_to: int
    size: int
    status: str
    text: str


class CancelResult(TypedDict):
    request_id: str
    accepted: bool
    status: str


class Artifact(TypedDict, total=False):
    role: str
    path: str
    path_rel: str  # the same path, under the spec's name
    filename: str
    mime: str
    size: int
    sha256: str
    required: bool


class InteractionOption(TypedDict):
    label: str
    value: Any


class Pending(TypedDict):
    interaction_id: int
    kind: str
    prompt: str
    options: list[InteractionOption]
    ui_hints: dict[str, Any]
    default_decision_policy: Any
    required_fields: list[Any]
    context: Any


class PendingAnswer(TypedDict):
    request_id: str
    status: str
    pending: Pending | None


class ReplyAnswer(TypedDict):
    request_id: str
    status: str
    accepted: bool


class SkillSummary(TypedDict, total=False):
    id: str
    name: str | None
    version: str | None
    description: str | None
    engines: list[str] | None
    unsupported_engines: list[str]
    effective_engines: list[str]
    execution_modes: list[str]
    health: str
    errors: list[str]
    warnings: list[str]


class SkillDetail(SkillSummary, total=False):
    entrypoint: dict[str, Any]
    schemas: dict[str, Any]
    artifacts: list[dict[str, Any]]
    runtime: dict[str, Any] | None
    automation: dict[str, Any]
    files: list[str]


class InstallStatus(TypedDict, total=False):
    install_id: str
    status: str
    skill_id: str | None
    version: str | None
    previous_version: str | None
    action: str | None
    archive_path: str | None
    package_sha256: str | None
    package_size: int | None
    warnings: list[str]
    error: ErrorInfo | None
    created_at: str
    finished_at: str | None


class CleanupResult(TypedDict):
    runs_deleted: int
    requests_deleted: int
    older_than_sec: int
    more: bool
