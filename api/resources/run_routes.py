"""The routes every run has, whether a job's or a one-off run's: upload, status, result, logs,
log ranges, cancel and bundle, registered once for each kind on that kind's blueprint."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from flask import Response
from flask.views import MethodView

from api import context
from api.blueprint import Blueprint
from api.errors import ApiError
from api.jobs import actions, interaction
from api.jobs.client_files import client_files, client_preview
from api.jobs.create import Accepted, take_upload
from api.jobs.files import bundle_response, load_finished
from api.jobs.pending import cancel_held, held_job, take_package_upload
from api.jobs.read import load_job, read_job, wait_for_job
from api.jobs.reply_files import reply_with_files
from api.jobs.rows import JobRow, RunState
from api.resources import run_events
from api.schemas import (
    REPLY_FILES_BODY,
    SSE_STREAM,
    UPLOAD_BODY,
    ZIP_FILE,
    CancelResult,
    EventHistory,
    EventHistoryArgs,
    EventsArgs,
    InteractionReply,
    JobLogs,
    JobResult,
    JobStatus,
    JobUploaded,
    LogRange,
    LogRangeArgs,
    PendingInteraction,
    ReplyResult,
    WaitArgs,
)
from api.schemas.management import ClientFilePreview, ClientRunFiles, FilePreviewArgs
from runner_core.skills import SkillPackage
from runner_core.store.models import Request, Run

T = TypeVar("T")

# the summaries of the views Skill-Runner's clients read, the same for both kinds of run
CLIENT_VIEW_SUMMARIES = {
    "Chat": "The run's conversation as Server-Sent Events for people (Skill-Runner's "
    "clients):\n`snapshot`, then one `chat_event` {seq, role, kind, text} per message "
    "(assistant\nmessages and questions, replies, state changes), `heartbeat` every 5 s.",
    "ChatHistory": "The run's stored conversation as chat messages, by seq range, with "
    "`count`,\n`cursor_floor` and `cursor_ceiling`.",
    "Files": "The run directory's file tree as Skill-Runner's clients read it "
    "(`{entries: [{path,\nname, is_dir, depth}]}`); engine homes and configs left out.",
    "File": "One file's preview as Skill-Runner's clients read it (`{preview: {mode, "
    "content, size,\nmeta, detected_format}}`); 403 outside the run or hidden.",
    "BundleDebug": "Download the debug bundle zip (the whole run: logs, prompt, raw output), "
    "whatever\nthe run asked for.",
}


@dataclass(frozen=True)
class RunKind:
    """What differs between the kinds of run behind the same routes."""

    name: str  # requests.kind
    endpoint_prefix: str  # of the views' endpoint names, unique per blueprint
    skill_for: Callable[[Request, Run], SkillPackage]  # the package an upload is bound with
    require_finished: Callable[[str, RunState], None]  # the bundle's 409 while the run is active
    summaries: Mapping[str, str]  # per route: the OpenAPI summary (the view's docstring)


# schema instances, not classes: webargs would build a new schema object per request
_WAIT_ARGS, _RANGE_ARGS, _REPLY_ARGS = WaitArgs(), LogRangeArgs(), InteractionReply()
_EVENTS_ARGS, _HISTORY_ARGS = EventsArgs(), EventHistoryArgs()
_FILE_ARGS = FilePreviewArgs()


def register_run_routes(blp: Blueprint, kind: RunKind) -> None:
    """Add the upload, status, result, logs, logs/range and cancel views of `kind` to `blp`."""

    class Upload(MethodView):
        @blp.doc(**UPLOAD_BODY)
        @blp.response(200, JobUploaded)
        def post(self, request_id: str) -> Accepted:
            held = take_package_upload(request_id, kind.name)  # a package still to come
            if held is not None:
                return held
            with context.db_session() as session:
                req, run = load_job(session, request_id, kind.name)
                return take_upload(
                    session,
                    req,
                    run,
                    lambda: kind.skill_for(req, run),
                    context.settings().requests_dir / request_id,
                )

    class Status(MethodView):
        @blp.arguments(_WAIT_ARGS, location="query")
        @blp.response(200, JobStatus)
        def get(self, args: dict[str, Any], request_id: str) -> JobRow:
            return _or_held(
                lambda: wait_for_job(request_id, kind.name, args["wait_sec"]),
                request_id,
                kind,
                lambda held: held,
            )

    class Result(MethodView):
        @blp.arguments(_WAIT_ARGS, location="query")
        @blp.response(200, JobResult)
        def get(self, args: dict[str, Any], request_id: str) -> dict[str, Any]:
            return actions.result_body(wait_for_job(request_id, kind.name, args["wait_sec"]))

    class Logs(MethodView):
        @blp.response(200, JobLogs)
        def get(self, request_id: str) -> dict[str, Any]:
            with context.connect() as conn:
                job = read_job(conn, request_id, kind.name)
            return actions.log_snapshot(job)

    class LogsRange(MethodView):
        @blp.arguments(_RANGE_ARGS, location="query")
        @blp.response(200, LogRange)
        def get(self, args: dict[str, Any], request_id: str) -> dict[str, Any]:
            with context.connect() as conn:
                job = read_job(conn, request_id, kind.name)
            return actions.log_range(job, **args)

    class Pending(MethodView):
        @blp.response(200, PendingInteraction)
        def get(self, request_id: str) -> dict[str, Any]:
            with context.db_session() as session:
                return interaction.pending_body(session, *load_job(session, request_id, kind.name))

    class Reply(MethodView):
        @blp.arguments(_REPLY_ARGS)
        @blp.response(200, ReplyResult)
        def post(self, body: dict[str, Any], request_id: str) -> dict[str, Any]:
            with context.db_session() as session:
                req, run = load_job(session, request_id, kind.name)
                return interaction.reply(session, req, run, body, lambda: kind.skill_for(req, run))

    class ReplyFiles(MethodView):
        @blp.doc(**REPLY_FILES_BODY)
        @blp.response(200, ReplyResult)
        def post(self, request_id: str) -> dict[str, Any]:
            with context.db_session() as session:
                req, run = load_job(session, request_id, kind.name)
                return reply_with_files(session, req, run, lambda: kind.skill_for(req, run))

    class Events(MethodView):
        @blp.arguments(_EVENTS_ARGS, location="query")
        @blp.doc(responses={"200": SSE_STREAM})
        def get(self, args: dict[str, Any], request_id: str) -> Response:
            return run_events.sse_response(request_id, kind.name, args["cursor"])

    class EventsHistory(MethodView):
        @blp.arguments(_HISTORY_ARGS, location="query")
        @blp.response(200, EventHistory)
        def get(self, args: dict[str, Any], request_id: str) -> dict[str, Any]:
            return _or_held(
                lambda: run_events.history_body(request_id, kind.name, args),
                request_id,
                kind,
                run_events.empty_history,
            )

    class Chat(MethodView):
        @blp.arguments(_EVENTS_ARGS, location="query")
        @blp.doc(responses={"200": SSE_STREAM})
        def get(self, args: dict[str, Any], request_id: str) -> Response:
            return run_events.sse_response(request_id, kind.name, args["cursor"], chat=True)

    class ChatHistory(MethodView):
        @blp.arguments(_HISTORY_ARGS, location="query")
        @blp.response(200, EventHistory)
        def get(self, args: dict[str, Any], request_id: str) -> dict[str, Any]:
            return _or_held(
                lambda: run_events.history_body(request_id, kind.name, args, chat=True),
                request_id,
                kind,
                run_events.empty_history,
            )

    class Files(MethodView):
        @blp.response(200, ClientRunFiles)
        def get(self, request_id: str) -> dict[str, Any]:
            with context.connect() as conn:
                return client_files(read_job(conn, request_id, kind.name))

    class File(MethodView):
        @blp.arguments(_FILE_ARGS, location="query")
        @blp.response(200, ClientFilePreview)
        def get(self, args: dict[str, Any], request_id: str) -> dict[str, Any]:
            with context.connect() as conn:
                return client_preview(read_job(conn, request_id, kind.name), args["path"])

    class Cancel(MethodView):
        @blp.response(200, CancelResult)
        def post(self, request_id: str) -> dict[str, Any]:
            def cancel() -> dict[str, Any]:
                with context.db_session() as session:
                    return actions.cancel_run(session, *load_job(session, request_id, kind.name))

            try:
                return cancel()
            except ApiError as exc:
                if exc.status != 404:
                    raise
                held = cancel_held(request_id, kind.name)
                return held if held is not None else cancel()  # its package came meanwhile

    for rule, view in (
        ("/<request_id>/upload", Upload),
        ("/<request_id>", Status),
        ("/<request_id>/result", Result),
        ("/<request_id>/logs", Logs),
        ("/<request_id>/logs/range", LogsRange),
        ("/<request_id>/cancel", Cancel),
        ("/<request_id>/interaction/pending", Pending),
        ("/<request_id>/interaction/reply", Reply),
        ("/<request_id>/interaction/reply/files", ReplyFiles),
        ("/<request_id>/events", Events),
        ("/<request_id>/events/history", EventsHistory),
        ("/<request_id>/chat", Chat),
        ("/<request_id>/chat/history", ChatHistory),
        ("/<request_id>/files", Files),
        ("/<request_id>/file", File),
    ):
        _register(blp, rule, view, kind)


def register_bundle_route(blp: Blueprint, kind: RunKind) -> None:
    """Add the bundle download of `kind` to `blp` (a job's sits beside its artifacts)."""

    class Bundle(MethodView):
        @blp.doc(responses={"200": ZIP_FILE})
        def get(self, request_id: str) -> Response:
            return bundle_response(load_finished(request_id, kind.name, kind.require_finished))

    class BundleDebug(MethodView):
        @blp.doc(responses={"200": ZIP_FILE})
        def get(self, request_id: str) -> Response:
            run = load_finished(request_id, kind.name, kind.require_finished)
            return bundle_response(run, debug=True)

    _register(blp, "/<request_id>/bundle", Bundle, kind)
    _register(blp, "/<request_id>/bundle/debug", BundleDebug, kind)


def _or_held(
    read: Callable[[], T], request_id: str, kind: RunKind, held: Callable[[JobRow], T]
) -> T:
    """`read()`; when the request has no run because its package is still to come (a
    `temp_upload` body), what `held` answers for its status instead of the 404."""
    try:
        return read()
    except ApiError as exc:
        job = held_job(request_id, kind.name) if exc.status == 404 else None
        if job is None:
            raise
        return held(job)


def _register(blp: Blueprint, rule: str, view: type[MethodView], kind: RunKind) -> None:
    """Route `view` under `kind`'s endpoint name with `kind`'s summary as its docstring."""
    for method in ("get", "post"):
        if hasattr(view, method):
            getattr(view, method).__doc__ = kind.summaries[view.__name__]
    blp.route(rule, endpoint=kind.endpoint_prefix + view.__name__)(view)
