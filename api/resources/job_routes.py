"""Jobs: create and list; the per-run routes (upload, status, result, logs, cancel) are the
shared run routes of kind "job"."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView

from api import auth, context, idempotency
from api.blueprint import Blueprint
from api.catalog import get_skill_or_404, run_skill_or_404
from api.jobs.create import Accepted, create_job
from api.jobs.files import require_finished_job
from api.jobs.listing import JobPage, list_jobs
from api.jobs.pending import hold_for_package
from api.jobs.read import JOB_KIND, load_job
from api.jobs.temp import TEMP, temp_skill
from api.resources.run_routes import CLIENT_VIEW_SUMMARIES, RunKind, register_run_routes
from api.schemas import JobCreate, JobCreated, JobList, JobListArgs, WebhookLog
from runner_core.store import callbacks

blp = Blueprint("jobs", __name__, url_prefix="/v1/jobs", description="Skill runs")

JOB = RunKind(
    name=JOB_KIND,
    endpoint_prefix="",
    # a job whose package came with its upload runs it from its own copy (its run's kind)
    skill_for=lambda req, run: temp_skill(req) if run.kind == TEMP else run_skill_or_404(run),
    require_finished=require_finished_job,
    summaries={
        "Upload": "Upload the input zip (multipart field `file`, or a raw application/zip body).",
        "Status": "Status and summary of a job; `wait_sec` waits (long poll) for the run to end.",
        "Result": "The final structured result (valid against the skill's output schema); 409 "
        "while\nthe run is active, unless it ends within `wait_sec`.",
        "Logs": "Snapshot of the prompt, stdout and stderr (last 2 MiB of each).",
        "LogsRange": "A byte range of one log (stdout, stderr or prompt), at most 1 MiB: follow "
        "a run by\nasking again from the last answer's `byte_to` until its status "
        "is terminal and\n`byte_to` reaches `size`.",
        "Pending": "The question an interactive run waits on (`pending` is null when it waits "
        "on none);\n400 RUN_NOT_INTERACTIVE for a run in auto mode.",
        "ReplyFiles": "Answer the pending question with files (multipart: a JSON `metadata` part "
        "and repeated `files` parts); idempotent by key or by the files' fingerprint.",
        "Reply": "Answer the pending question: the run resumes its engine session with the "
        "answer.\n409 when the run is not waiting or the question is not the pending one; "
        "a repeated\n`idempotency_key` answers the same and starts nothing.",
        "Events": "The run's events as Server-Sent Events: `snapshot` first, then one "
        "`chat_event` per\nFCMP event (`id:` = seq) and a `heartbeat` every 5 s; closes after the "
        "terminal\nevent. `cursor` (or Last-Event-ID) resumes after that seq.",
        "EventsHistory": "The run's stored FCMP events by seq and/or time range.",
        "Cancel": "Cancel an active run; a finished run answers accepted=false.",
        "Bundle": "Download the run bundle zip (result + artifacts + manifest; whole run with "
        "debug).",
        **CLIENT_VIEW_SUMMARIES,
    },
)


@blp.route("")
class Jobs(MethodView):
    # schema instances, not classes: webargs would build a new schema object per request
    @blp.arguments(JobCreate())
    @blp.response(200, JobCreated)
    def post(self, body: dict[str, Any]) -> Accepted | dict[str, Any]:
        """Create a job; it starts now, or after its upload when the skill takes files. With an
        `Idempotency-Key` header, the same key and body answer the first job again."""
        if body.get("skill_source") == "temp_upload":  # the package comes with the upload
            return hold_for_package(body, JOB.name)
        claim = idempotency.header_claim("job", body)

        def create() -> Accepted:
            pkg = get_skill_or_404(body["skill_id"])
            with context.connect() as conn:
                return create_job(conn, pkg, body, claim=claim)

        return idempotency.once(claim, create, look_first=False)

    @blp.arguments(JobListArgs(), location="query")
    @blp.response(200, JobList())
    def get(self, args: dict[str, Any]) -> JobPage:
        """List jobs, newest first; filter by status/skill_id/engine; page with `cursor`."""
        with context.connect() as conn:
            return list_jobs(conn, args, auth.owner_filter())


register_run_routes(blp, JOB)


@blp.route("/<request_id>/webhooks")
class Webhooks(MethodView):
    @blp.response(200, WebhookLog)
    def get(self, request_id: str) -> dict[str, Any]:
        """The job's callback: its URL and state, and every delivery attempt in order."""
        with context.db_session() as session:
            req, _run = load_job(session, request_id, JOB.name)
            return {
                "request_id": req.id,
                "callback_url": req.callback_url,
                "state": req.callback_state,
                "attempts": [a._asdict() for a in callbacks.attempts(session, req.id)],
            }
