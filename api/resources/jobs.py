"""Jobs: create, upload inputs, read status, result and logs, cancel."""
from __future__ import annotations

from flask import current_app, jsonify
from flask.views import MethodView

from api import job_service as jobs
from api import run_actions as actions
from api.blueprint import Blueprint
from api.resources.skills import get_skill_or_404
from api.schemas import (
    CancelResult, JobCreate, JobCreated, JobList, JobListArgs, JobLogs, JobResult, JobStatus,
    LogRange, LogRangeArgs, WaitArgs,
)

blp = Blueprint("jobs", __name__, url_prefix="/v1/jobs", description="Skill runs")

KIND = "job"  # one-off runs live under /v1/temp-skill-runs


def db():
    return current_app.extensions["db"]()


@blp.route("")
class Jobs(MethodView):
    # schema instances, not classes: webargs would build a new schema object per request
    @blp.arguments(JobCreate())
    @blp.response(200, JobCreated)
    def post(self, body):
        """Create a job; it starts now, or after its upload when the skill takes files."""
        pkg = get_skill_or_404(body["skill_id"])
        with jobs.connect() as conn:
            req, run = jobs.create_job(conn, pkg, body)
            return {"request_id": req.id, "cache_hit": req.cache_hit, "status": run.status}

    @blp.arguments(JobListArgs(), location="query")
    @blp.response(200, JobList)
    def get(self, args):
        """List jobs, newest first; filter by status/skill_id/engine; page with `cursor`."""
        with jobs.connect() as conn:
            # The items are already JobStatus documents (plain JSON values); dumping 50 of them
            # through the schema again was a third of the request (tests/api check they match).
            return jsonify(jobs.list_jobs(conn, args))


@blp.route("/<request_id>/upload")
class Upload(MethodView):
    @blp.response(200, JobCreated)
    def post(self, request_id: str):
        """Upload the input zip (multipart field `file`, or a raw application/zip body)."""
        settings = current_app.config["SETTINGS"]
        with db() as session:
            req, run = jobs.load_job(session, request_id, KIND)
            run = jobs.take_upload(session, req, run, lambda: get_skill_or_404(run.skill_id),
                                   settings.requests_dir / request_id)
            return {"request_id": req.id, "cache_hit": req.cache_hit, "status": run.status}


@blp.route("/<request_id>")
class Job(MethodView):
    @blp.arguments(WaitArgs(), location="query")
    @blp.response(200, JobStatus)
    def get(self, args, request_id: str):
        """Status and summary of a job; `wait_sec` waits (long poll) for the run to end."""
        return jobs.job_status(*jobs.wait_for_job(request_id, KIND, args["wait_sec"]))


@blp.route("/<request_id>/result")
class Result(MethodView):
    @blp.arguments(WaitArgs(), location="query")
    @blp.response(200, JobResult)
    def get(self, args, request_id: str):
        """The final structured result (valid against the skill's output schema); 409 while
        the run is active, unless it ends within `wait_sec`."""
        return actions.result_body(*jobs.wait_for_job(request_id, KIND, args["wait_sec"]))


@blp.route("/<request_id>/logs")
class Logs(MethodView):
    @blp.response(200, JobLogs)
    def get(self, request_id: str):
        """Snapshot of the prompt, stdout and stderr (last 2 MiB of each)."""
        with db() as session:
            return actions.log_snapshot(*jobs.load_job(session, request_id, KIND))


@blp.route("/<request_id>/logs/range")
class LogsRange(MethodView):
    @blp.arguments(LogRangeArgs(), location="query")
    @blp.response(200, LogRange)
    def get(self, args, request_id: str):
        """A byte range of one log (stdout, stderr or prompt), at most 1 MiB: follow a run by
        asking again from the last answer's `byte_to` until its status is terminal and
        `byte_to` reaches `size`."""
        with jobs.connect() as conn:
            req, run = jobs.read_job(conn, request_id, KIND)
        return actions.log_range(req, run, **args)


@blp.route("/<request_id>/cancel")
class Cancel(MethodView):
    @blp.response(200, CancelResult)
    def post(self, request_id: str):
        """Cancel an active run; a finished run answers accepted=false."""
        with db() as session:
            req, run = jobs.load_job(session, request_id, KIND)
            return actions.cancel_run(session, req, run)
