"""The management API (/v1/management): skills, engines and runs as a front end draws them.
Every route calls the implementation of the jobs, skills and engines routes it mirrors (one
semantics); it adds a run's conversation state, its file tree and file previews."""

from __future__ import annotations

from typing import Any

from flask import Response
from flask.views import MethodView

from api import auth, context
from api.blueprint import Blueprint
from api.catalog import engine_summary, get_skill_or_404, info_or_404, skill_detail, skill_summary
from api.engine_upgrades import upgrade_statuses
from api.jobs import actions, interaction
from api.jobs.conversation import conversation_state, files_body, preview_body
from api.jobs.listing import EVERY_KIND, JobPage, list_jobs, numbered_page
from api.jobs.read import load_job, read_job
from api.resources import run_events
from api.resources.job_routes import JOB
from api.schemas import (
    SSE_STREAM,
    CancelResult,
    EventHistory,
    EventHistoryArgs,
    EventsArgs,
    InteractionReply,
    LogRange,
    LogRangeArgs,
    PendingInteraction,
    ReplyResult,
    SkillDetail,
)
from api.schemas.management import (
    AuditArgs,
    AuditPage,
    EngineDetail,
    EngineList,
    FilePreview,
    FilePreviewArgs,
    ManagementRunList,
    ManagementRunListArgs,
    RunConversationState,
    RunFiles,
    RuntimeOptionsInfo,
    SkillList,
    SkillSchemas,
)
from runner_core.engines.catalog import all_engines
from runner_core.runtime_options import DEFAULT_REPLY_TIMEOUT_SEC
from runner_core.settings import Settings
from runner_core.store import audit

blp = Blueprint(
    "management",
    __name__,
    url_prefix="/v1/management",
    description="Management API: skills, engines and runs for front ends (the UI uses it)",
)

KIND = None  # a run here is a job or a one-off run (a temp-skill-run request)


@blp.route("/skills")
class Skills(MethodView):
    @blp.response(200, SkillList)
    def get(self) -> dict[str, list[dict]]:
        """Installed skills under `skills`: id, name, version, engines, effective_engines,
        health (the list of GET /v1/skills in an envelope, as Skill-Runner's clients read it)."""
        return {"skills": [skill_summary(p) for p in context.skills().list()]}


@blp.route("/skills/<skill_id>")
class Skill(MethodView):
    @blp.response(200, SkillDetail)
    def get(self, skill_id: str) -> dict:
        """One skill: its summary, schemas, entrypoint, files and execution_modes."""
        return skill_detail(get_skill_or_404(skill_id))


@blp.route("/skills/<skill_id>/schemas")
class Schemas(MethodView):
    @blp.response(200, SkillSchemas)
    def get(self, skill_id: str) -> dict:
        """The skill's input, parameter and output JSON Schemas (to draw and check a form)."""
        pkg = get_skill_or_404(skill_id)
        return {
            "skill_id": pkg.id,
            "input": pkg.input_schema,
            "parameter": pkg.parameter_schema,
            "output": pkg.output_schema,
        }


@blp.route("/engines")
class Engines(MethodView):
    @blp.response(200, EngineList)
    def get(self) -> dict[str, list[dict]]:
        """Engines under `engines`: cli_version, installed, auth_ready, sandbox_status,
        models_count."""
        statuses = upgrade_statuses()
        return {
            "engines": [
                {**engine_summary(info), "upgrade_status": statuses.get(info.engine, "idle")}
                for info in all_engines()
            ]
        }


@blp.route("/engines/<engine>")
class Engine(MethodView):
    @blp.response(200, EngineDetail)
    def get(self, engine: str) -> dict:
        """One engine: its summary, binary, models, default model, upgrade_status, last_error."""
        info = info_or_404(engine)
        status = upgrade_statuses().get(engine, "idle")
        return {**info.detail(), **engine_summary(info), "upgrade_status": status}


@blp.route("/runtime-options")
class RuntimeOptionsRoute(MethodView):
    @blp.response(200, RuntimeOptionsInfo)
    def get(self) -> dict[str, Any]:
        """The service's defaults for a run (`service_defaults`) and the runtime_options a
        request may set, with their type and bounds."""
        settings = context.settings()
        defaults = {
            "hard_timeout_seconds": settings.default_timeout_sec,
            "max_hard_timeout_seconds": settings.max_timeout_sec,
            "interactive_reply_timeout_sec": DEFAULT_REPLY_TIMEOUT_SEC,
            "max_interactive_reply_timeout_sec": settings.reply_timeout_max_sec,
            "execution_mode": "auto",
            "no_cache": False,
            "debug": False,
        }
        return {"service_defaults": defaults, "options": runtime_option_list(settings)}


@blp.route("/runs")
class Runs(MethodView):
    @blp.arguments(ManagementRunListArgs(), location="query")
    @blp.response(200, ManagementRunList())
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        """Runs newest first, filtered by status/skill_id/engine, under `runs`: numbered pages
        with `page`/`page_size` (answering `total` and `total_pages`), else keyset pages with
        `limit`/`cursor` as /v1/jobs (`items` and `next_cursor` too)."""
        page, page_size = args.pop("page"), args.pop("page_size")
        with context.connect() as conn:
            if page is None and page_size is None:
                listed: JobPage = list_jobs(conn, args, auth.owner_filter(), EVERY_KIND)
                return {
                    "runs": listed.items,
                    "items": listed.items,
                    "next_cursor": listed.next_cursor,
                }
            numbered = numbered_page(
                conn, args, page or 1, page_size or 20, auth.owner_filter(), EVERY_KIND
            )
        return {
            "runs": numbered.items,
            "items": numbered.items,
            "next_cursor": None,
            "page": numbered.page,
            "page_size": numbered.page_size,
            "total": numbered.total,
            "total_pages": numbered.total_pages,
        }


def runtime_option_list(settings: Settings) -> list[dict[str, Any]]:
    """The runtime_options a request may set, as a form draws them."""
    return [
        {"key": "execution_mode", "type": "string", "enum": ["auto", "interactive"]},
        {"key": "no_cache", "type": "boolean"},
        {"key": "debug", "type": "boolean"},
        {
            "key": "hard_timeout_seconds",
            "type": "integer",
            "minimum": 0,
            "maximum": settings.max_timeout_sec,
            "description": "the run's time limit (0: the service default); alias timeout_sec",
        },
        {
            "key": "interactive_reply_timeout_sec",
            "type": "integer",
            "minimum": 0,
            "maximum": settings.reply_timeout_max_sec,
        },
        {"key": "interactive_auto_reply", "type": "boolean"},
        {"key": "repair_rounds", "type": "integer", "minimum": 0, "maximum": 3},
    ]


# schema instances, not classes: webargs would build a new schema object per request
_RANGE_ARGS, _REPLY_ARGS, _PREVIEW_ARGS = LogRangeArgs(), InteractionReply(), FilePreviewArgs()
_EVENTS_ARGS, _HISTORY_ARGS = EventsArgs(), EventHistoryArgs()


def _job(request_id: str):
    with context.connect() as conn:
        return read_job(conn, request_id, KIND)


@blp.route("/runs/<request_id>")
class Run(MethodView):
    @blp.response(200, RunConversationState)
    def get(self, request_id: str) -> dict[str, Any]:
        """A run's conversation state: status, the pending question's id, interaction and
        auto-decision counts, recovery, and whether to keep polling its logs."""
        return conversation_state(_job(request_id))


@blp.route("/runs/<request_id>/files")
class Files(MethodView):
    @blp.response(200, RunFiles)
    def get(self, request_id: str) -> dict[str, Any]:
        """The run directory's file tree (engine homes and configs left out)."""
        return files_body(_job(request_id))


@blp.route("/runs/<request_id>/file")
class File(MethodView):
    @blp.arguments(_PREVIEW_ARGS, location="query")
    @blp.response(200, FilePreview)
    def get(self, args: dict[str, Any], request_id: str) -> dict[str, Any]:
        """Preview one file of the run: text (first 256 KiB), JSON pretty, small images;
        403 RUN_FILE_REFUSED outside the run, through a symlink out, or hidden."""
        return preview_body(_job(request_id), args["path"])


@blp.route("/runs/<request_id>/events")
class Events(MethodView):
    @blp.arguments(_EVENTS_ARGS, location="query")
    @blp.doc(responses={"200": SSE_STREAM})
    def get(self, args: dict[str, Any], request_id: str) -> Response:
        """The run's events as Server-Sent Events (as /v1/jobs/{request_id}/events)."""
        return run_events.sse_response(request_id, KIND, args["cursor"])


@blp.route("/runs/<request_id>/events/history")
class EventsHistory(MethodView):
    @blp.arguments(_HISTORY_ARGS, location="query")
    @blp.response(200, EventHistory)
    def get(self, args: dict[str, Any], request_id: str) -> dict[str, Any]:
        """The run's stored events by seq and/or time range (as the jobs route)."""
        return run_events.history_body(request_id, KIND, args)


@blp.route("/runs/<request_id>/logs/range")
class LogsRange(MethodView):
    @blp.arguments(_RANGE_ARGS, location="query")
    @blp.response(200, LogRange)
    def get(self, args: dict[str, Any], request_id: str) -> dict[str, Any]:
        """A byte range of stdout, stderr or the prompt (as /v1/jobs/{request_id}/logs/range)."""
        return actions.log_range(_job(request_id), **args)


@blp.route("/runs/<request_id>/pending")
class Pending(MethodView):
    @blp.response(200, PendingInteraction)
    def get(self, request_id: str) -> dict[str, Any]:
        """The question the run waits on (as /v1/jobs/{request_id}/interaction/pending)."""
        with context.db_session() as session:
            return interaction.pending_body(session, *load_job(session, request_id, KIND))


@blp.route("/runs/<request_id>/reply")
class Reply(MethodView):
    @blp.arguments(_REPLY_ARGS)
    @blp.response(200, ReplyResult)
    def post(self, body: dict[str, Any], request_id: str) -> dict[str, Any]:
        """Answer the pending question (as /v1/jobs/{request_id}/interaction/reply)."""
        with context.db_session() as session:
            req, run = load_job(session, request_id, KIND)
            return interaction.reply(session, req, run, body, lambda: JOB.skill_for(req, run))


@blp.route("/runs/<request_id>/cancel")
class Cancel(MethodView):
    @blp.response(200, CancelResult)
    def post(self, request_id: str) -> dict[str, Any]:
        """Cancel an active run; a finished run answers accepted=false (as the jobs route)."""
        with context.db_session() as session:
            return actions.cancel_run(session, *load_job(session, request_id, KIND))


@blp.route("/audit")
class Audit(MethodView):
    @blp.arguments(AuditArgs(), location="query")
    @blp.response(200, AuditPage)
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        """The audit log, newest first (admin): installs, cleanups, cancels and replies with the
        token name, target and answer; page with `cursor`, filter by `action`."""
        with context.connect() as conn:
            rows = audit.page(conn, args["limit"] + 1, args["cursor"], args["action"])
        more = len(rows) > args["limit"]
        items = rows[: args["limit"]]
        return {"items": items, "next_cursor": items[-1]["id"] if more else None}
