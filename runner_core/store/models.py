"""Typed SQLAlchemy models: a request (what a client asked) and a run (an execution)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from runner_core.statuses import InstallStatus, RecoveryState, RunStatus, UpgradeStatus


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Run(Base):
    """One execution of a skill; several requests may share it through the cache."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    request_id: Mapped[str] = mapped_column(String(36))
    kind: Mapped[str] = mapped_column(String(16), default="job")  # job | temp
    skill_id: Mapped[str] = mapped_column(String(128))
    skill_version: Mapped[str | None] = mapped_column(String(64))
    engine: Mapped[str | None] = mapped_column(String(32))
    model: Mapped[str | None] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16), default=RunStatus.QUEUED)
    parameter: Mapped[dict[str, Any]] = mapped_column(default=dict)
    input: Mapped[dict[str, Any]] = mapped_column(default=dict)
    runtime_options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    needs_upload: Mapped[bool] = mapped_column(Boolean, default=False)
    cache_key: Mapped[str | None] = mapped_column(String(64))
    error_code: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    warnings: Mapped[list[Any]] = mapped_column(default=list)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(255))
    celery_task_id: Mapped[str | None] = mapped_column(String(64))
    pgid: Mapped[int | None] = mapped_column(Integer)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    cancel_requested_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # the error a cancel not asked by the run's user ends it with (its composite parent ended,
    # an operator revoked it); None: a user's cancel (CANCELED_BY_USER)
    cancel_error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    queued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # last time an execute_run message was sent for it (or a limited claim retried): the
    # sweeper re-sends only when this is older than the grace period
    dispatched_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )
    pending_interaction_id: Mapped[int | None] = mapped_column(Integer)
    interaction_count: Mapped[int] = mapped_column(Integer, default=0)
    auto_decision_count: Mapped[int] = mapped_column(Integer, default=0)
    last_auto_decision_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    recovery_state: Mapped[str] = mapped_column(String(32), default=RecoveryState.NONE)
    recovered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    recovery_reason: Mapped[str | None] = mapped_column(String(128))
    session_handle: Mapped[str | None] = mapped_column(String(255))
    timings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # {"input_tokens", "output_tokens"} of every engine turn of the run; None: none reported
    token_usage: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # a composite's step: its parent run and step name (None for every other run)
    parent_run_id: Mapped[str | None] = mapped_column(String(36))
    step_name: Mapped[str | None] = mapped_column(String(128))
    # the name of the API token that created it (None: the API asks for no token)
    owner: Mapped[str | None] = mapped_column(String(64))

    __table_args__ = (
        Index("ix_runs_status_queued_at", "status", "queued_at"),
        Index("ix_runs_cache_lookup", "cache_key", "status", "finished_at"),
        Index("ix_runs_skill_created", "skill_id", "created_at"),
        Index("ix_runs_created_at", "created_at"),
        Index("ix_runs_status_created", "status", "created_at", "id"),
        Index("ix_runs_status_skill_created", "status", "skill_id", "created_at", "id"),
        Index("ix_runs_parent_step", "parent_run_id", "step_name", unique=True),
    )


class Request(Base):
    """A client's job request, bound to the run that serves it."""

    __tablename__ = "requests"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), default="job")
    skill_id: Mapped[str] = mapped_column(String(128))
    engine: Mapped[str | None] = mapped_column(String(32))
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    cache_hit: Mapped[bool] = mapped_column(Boolean, default=False)
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    callback_url: Mapped[str | None] = mapped_column(Text)  # POSTed when the run ends
    # pending -> scheduled -> delivered | failed (None: no callback)
    callback_state: Mapped[str | None] = mapped_column(String(16))
    owner: Mapped[str | None] = mapped_column(String(64))  # as its run's (cache hits never cross)

    __table_args__ = (
        Index("ix_requests_run_id", "run_id"),
        Index("ix_requests_owner_created", "owner", "created_at", "id"),
        Index("ix_requests_callback_state", "callback_state"),
        Index("ix_requests_created_at", "created_at"),
        Index("ix_requests_skill_created", "skill_id", "created_at", "id"),
    )


class Interaction(Base):
    """One question an interactive run asked, and how it was answered (in order by id)."""

    __tablename__ = "interactions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    turn: Mapped[int] = mapped_column(Integer)  # the turn that asked (1 = the first)
    state: Mapped[str] = mapped_column(String(16), default="pending")  # + answered|auto|canceled
    kind: Mapped[str] = mapped_column(String(16))
    prompt: Mapped[str] = mapped_column(Text)
    options: Mapped[list[Any]] = mapped_column(default=list)
    ui_hints: Mapped[dict[str, Any]] = mapped_column(default=dict)
    required_fields: Mapped[list[Any]] = mapped_column(default=list)
    default_decision_policy: Mapped[str] = mapped_column(String(32), default="engine_judgement")
    context: Mapped[dict[str, Any]] = mapped_column(default=dict)
    response: Mapped[Any] = mapped_column(JSON, nullable=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(128))
    # of a reply with a key: the hash of what it sent and the API's answer, to answer a repeat
    reply_sha256: Mapped[str | None] = mapped_column(String(64))
    reply_answer: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_interactions_run_id", "run_id", "id"),)


class WebhookAttempt(Base):
    """One POST of a job's callback: when, what it said, and what the receiver answered."""

    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    request_id: Mapped[str] = mapped_column(ForeignKey("requests.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(16))  # terminal | waiting_user
    run_status: Mapped[str] = mapped_column(String(16))
    attempt: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    delivered: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    __table_args__ = (Index("ix_webhook_attempts_request", "request_id", "id"),)


class SkillInstall(Base):
    """One upload to POST /v1/skill-packages and what became of it."""

    __tablename__ = "skill_installs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    status: Mapped[str] = mapped_column(
        String(16), default=InstallStatus.INSTALLING
    )  # +succeeded|failed
    skill_id: Mapped[str | None] = mapped_column(String(128))
    version: Mapped[str | None] = mapped_column(String(64))
    previous_version: Mapped[str | None] = mapped_column(String(64))
    action: Mapped[str | None] = mapped_column(String(16))  # installed | updated
    package_sha256: Mapped[str | None] = mapped_column(String(64))
    package_size: Mapped[int | None] = mapped_column(Integer)
    archive_path: Mapped[str | None] = mapped_column(Text)  # relative to the data directory
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    warnings: Mapped[list[Any]] = mapped_column(default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_skill_installs_skill_created", "skill_id", "created_at"),)


class IdempotencyKey(Base):
    """An Idempotency-Key sent with a create (POST /v1/jobs or /v1/temp-skill-runs): the body it
    came with and the answer it got, which the same key answers again while it lives."""

    __tablename__ = "idempotency_keys"

    scope: Mapped[str] = mapped_column(String(16), primary_key=True)  # job | temp
    owner: Mapped[str] = mapped_column(String(64), primary_key=True, default="")  # token name
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    body_sha256: Mapped[str] = mapped_column(String(64))
    request_id: Mapped[str] = mapped_column(String(36))
    status_code: Mapped[int] = mapped_column(Integer, default=200)
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    __table_args__ = (
        Index("ix_idempotency_keys_created_at", "created_at"),
        Index("ix_idempotency_keys_request_id", "request_id"),  # cleanup deletes by request
    )


class EndedUiSession(Base):
    """A web UI session ended by its logout: its cookie is refused until it would have
    expired anyway, after which the row can go."""

    __tablename__ = "ended_ui_sessions"

    sid: Mapped[str] = mapped_column(String(64), primary_key=True)  # the cookie's session id
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_ended_ui_sessions_expires_at", "expires_at"),)


class AuditEntry(Base):
    """One security-relevant action: who (token name) did what to which target, and how the
    API answered it."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    token_name: Mapped[str | None] = mapped_column(String(64))  # None: no token configured
    action: Mapped[str] = mapped_column(String(32))  # skill.install | run.cancel | ...
    target: Mapped[str | None] = mapped_column(String(255))  # request id, skill id, install id
    status_code: Mapped[int] = mapped_column(Integer)
    http_request_id: Mapped[str | None] = mapped_column(String(128))  # the X-Request-ID
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class MemoryEntry(Base):
    """One entry of an owner's long-term memory (openEvo's `ctx.memory`): a text under a key,
    shared by that owner's skills (memory_store writes what memory_search finds)."""

    __tablename__ = "skill_memory"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner: Mapped[str] = mapped_column(String(64), default="")  # token name; "" without tokens
    key: Mapped[str] = mapped_column(String(255))
    text: Mapped[str] = mapped_column(Text)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)  # path, tags, ... as stored
    skill_id: Mapped[str | None] = mapped_column(String(255))  # the skill that last wrote it
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    __table_args__ = (Index("ix_skill_memory_owner_key", "owner", "key", unique=True),)


class SessionMessage(Base):
    """One message of a conversation (openEvo's `ctx.session`), in the order appended."""

    __tablename__ = "skill_session_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner: Mapped[str] = mapped_column(String(64), default="")
    session_id: Mapped[str] = mapped_column(String(128))
    role: Mapped[str] = mapped_column(String(32))
    content: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    __table_args__ = (Index("ix_skill_session_messages_session", "owner", "session_id", "id"),)


__all__ = [
    "AuditEntry",
    "Base",
    "EndedUiSession",
    "IdempotencyKey",
    "Interaction",
    "MemoryEntry",
    "Run",
    "Request",
    "SessionMessage",
    "SkillInstall",
    "Text",
    "WebhookAttempt",
    "utcnow",
]


class EngineUpgrade(Base):
    """One POST /v1/engines/{engine}/upgrade: the npm install of a version of an engine's CLI
    into the service's engines folder, run by a worker, and how it ended."""

    __tablename__ = "engine_upgrades"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    engine: Mapped[str] = mapped_column(String(32))
    version_requested: Mapped[str] = mapped_column(String(64))  # a semver or "latest"
    version_installed: Mapped[str | None] = mapped_column(String(64))  # its package.json's
    status: Mapped[str] = mapped_column(String(16), default=UpgradeStatus.QUEUED)
    # the engine while queued or running, else None: its unique index lets one at a time in
    active_engine: Mapped[str | None] = mapped_column(String(32))
    requested_by: Mapped[str | None] = mapped_column(String(64))  # token name (None: no tokens)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # {code, message}
    log_path: Mapped[str] = mapped_column(Text)  # npm's output, relative to the data directory
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        Index("ix_engine_upgrades_engine_created", "engine", "created_at"),
        Index("ix_engine_upgrades_active_engine", "active_engine", unique=True),
    )
