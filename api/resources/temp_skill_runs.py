"""One-off runs: run a skill package without installing it; sub-routes mirror /v1/jobs."""
from __future__ import annotations

from flask import current_app
from flask.views import MethodView

from api import job_service as jobs
from api import run_actions
from api.blueprint import Blueprint
from api.job_service import connect
from api.package_schemas import TempRunCreated, package_form_doc
from api.resources.run_files import bundle_response
from api.schemas import (
    CancelResult, JobCreated, JobLogs, JobResult, JobStatus, LogRange, LogRangeArgs, WaitArgs,
)
from api.temp_run_service import create_temp_run, load_temp, temp_skill

blp = Blueprint("temp_skill_runs", __name__, url_prefix="/v1/temp-skill-runs",
                description="One-off runs of an uploaded skill package")


def db():
    return current_app.extensions["db"]()


@blp.route("")
class TempRuns(MethodView):
    @blp.doc(**package_form_doc(with_request=True))
    @blp.response(200, TempRunCreated)
    def post(self):
        """Run a skill package once (multipart `package` zip + `request` JSON); never installed."""
        with connect() as conn:
            req, run, pkg = create_temp_run(conn)
            return {"request_id": req.id, "skill_id": pkg.id, "skill_version": pkg.version,
                    "cache_hit": req.cache_hit, "status": run.status, "warnings": pkg.warnings}


@blp.route("/<request_id>/upload")
class TempUpload(MethodView):
    @blp.response(200, JobCreated)
    def post(self, request_id: str):
        """Upload the input zip (multipart field `file`, or a raw application/zip body)."""
        with db() as session:
            req, run = load_temp(session, request_id)
            run = jobs.take_upload(session, req, run, lambda: temp_skill(req),
                                   current_app.config["SETTINGS"].requests_dir / request_id)
            return {"request_id": req.id, "cache_hit": req.cache_hit, "status": run.status}


@blp.route("/<request_id>")
class TempRun(MethodView):
    @blp.arguments(WaitArgs(), location="query")
    @blp.response(200, JobStatus)
    def get(self, args, request_id: str):
        """Status and summary of a one-off run; `wait_sec` waits (long poll) for its end."""
        return jobs.job_status(*jobs.wait_for_job(request_id, "temp", args["wait_sec"]))


@blp.route("/<request_id>/result")
class TempResult(MethodView):
    @blp.arguments(WaitArgs(), location="query")
    @blp.response(200, JobResult)
    def get(self, args, request_id: str):
        """The final structured result (409 RUN_NOT_FINISHED while it runs, unless it ends
        within `wait_sec`)."""
        return run_actions.result_body(*jobs.wait_for_job(request_id, "temp", args["wait_sec"]))


@blp.route("/<request_id>/logs")
class TempLogs(MethodView):
    @blp.response(200, JobLogs)
    def get(self, request_id: str):
        """Snapshot of the prompt, stdout and stderr (last 2 MiB of each)."""
        with db() as session:
            return run_actions.log_snapshot(*load_temp(session, request_id))


@blp.route("/<request_id>/logs/range")
class TempLogsRange(MethodView):
    @blp.arguments(LogRangeArgs(), location="query")
    @blp.response(200, LogRange)
    def get(self, args, request_id: str):
        """A byte range of one log (as /v1/jobs/{request_id}/logs/range)."""
        with connect() as conn:
            req, run = jobs.read_job(conn, request_id, "temp")
        return run_actions.log_range(req, run, **args)


@blp.route("/<request_id>/bundle")
class TempBundle(MethodView):
    def get(self, request_id: str):
        """Download the run bundle zip (409 RUN_NOT_FINISHED while it runs)."""
        with db() as session:
            req, run = load_temp(session, request_id)
        run_actions.require_finished(req, run)
        return bundle_response(run)


@blp.route("/<request_id>/cancel")
class TempCancel(MethodView):
    @blp.response(200, CancelResult)
    def post(self, request_id: str):
        """Cancel an active one-off run; a finished run answers accepted=false."""
        with db() as session:
            return run_actions.cancel_run(session, *load_temp(session, request_id))
