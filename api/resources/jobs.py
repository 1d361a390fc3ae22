"""Jobs: create, upload inputs, read status, result and logs, cancel."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from flask import current_app, request
from flask.views import MethodView
from flask_smorest import Blueprint

from api import job_service as jobs
from api.errors import ApiError
from api.resources.skills import get_skill_or_404
from api.schemas import (
    CancelResult, JobCreate, JobCreated, JobList, JobListArgs, JobLogs, JobResult, JobStatus,
)
from runner_core.store import runs as run_states
from runner_core.uploads import UploadError, UploadLimits, extract_upload, write_input_manifest

blp = Blueprint("jobs", __name__, url_prefix="/v1/jobs", description="Skill runs")

LOG_CAP = 2 * 1024 * 1024


def db():
    return current_app.extensions["db"]()


@blp.route("")
class Jobs(MethodView):
    @blp.arguments(JobCreate)
    @blp.response(200, JobCreated)
    def post(self, body):
        """Create a job; it starts now, or after its upload when the skill takes files."""
        pkg = get_skill_or_404(body["skill_id"])
        with db() as session:
            req, run = jobs.create_job(session, pkg, body)
            return {"request_id": req.id, "cache_hit": req.cache_hit, "status": run.status}

    @blp.arguments(JobListArgs, location="query")
    @blp.response(200, JobList)
    def get(self, args):
        """List jobs, newest first; filter by status/skill_id/engine; page with `cursor`."""
        with db() as session:
            return jobs.list_jobs(session, args)


@blp.route("/<request_id>/upload")
class Upload(MethodView):
    @blp.response(200, JobCreated)
    def post(self, request_id: str):
        """Upload the input zip (multipart field `file`, or a raw application/zip body)."""
        settings = current_app.config["SETTINGS"]
        with db() as session:
            req, run = jobs.load_job(session, request_id)
            if not (run.needs_upload and run.status == "queued" and run.queued_at is None):
                raise ApiError(409, "UPLOAD_NOT_ALLOWED",
                               "this job takes no upload now (already uploaded, started or ended)",
                               {"status": run.status}, request_id)
            request_dir = settings.requests_dir / request_id
            files = _extract(request_dir, request_id)
            write_input_manifest(files, request_dir / "input_manifest.json")
            run = jobs.bind_upload(session, req, run, get_skill_or_404(run.skill_id),
                                   {f.path: f.sha256 for f in files})
            return {"request_id": req.id, "cache_hit": req.cache_hit, "status": run.status}


def _extract(request_dir: Path, request_id: str):
    """Stream the body to a temp file next to the request, then extract it safely."""
    upload = request.files.get("file")
    with tempfile.NamedTemporaryFile(dir=request_dir, suffix=".zip", delete=False) as tmp:
        if upload is not None:
            upload.save(tmp)
        else:
            shutil.copyfileobj(request.stream, tmp, 1024 * 1024)
    dest = request_dir / "uploads"
    try:
        if dest.is_dir() and not any(dest.iterdir()):
            dest.rmdir()
        settings = current_app.config["SETTINGS"]
        limits = UploadLimits(max_total_bytes=settings.upload_max_bytes,
                              max_entries=settings.upload_max_entries,
                              max_ratio=settings.upload_max_ratio)
        return extract_upload(Path(tmp.name), dest, limits)
    except UploadError as exc:
        dest.mkdir(exist_ok=True)
        raise ApiError(400, exc.code, exc.message, exc.details, request_id) from exc
    finally:
        Path(tmp.name).unlink(missing_ok=True)


@blp.route("/<request_id>")
class Job(MethodView):
    @blp.response(200, JobStatus)
    def get(self, request_id: str):
        """Status and summary of a job."""
        with db() as session:
            return jobs.job_status(*jobs.load_job(session, request_id))


@blp.route("/<request_id>/result")
class Result(MethodView):
    @blp.response(200, JobResult)
    def get(self, request_id: str):
        """The final structured result (valid against the skill's output schema)."""
        with db() as session:
            req, run = jobs.load_job(session, request_id)
        if run.status not in ("succeeded", "failed", "canceled"):
            raise ApiError(409, "RUN_NOT_FINISHED", f"the run is {run.status}; poll the job status",
                           {"status": run.status}, request_id)
        return {"request_id": req.id, "result": jobs.read_result(run)}


@blp.route("/<request_id>/logs")
class Logs(MethodView):
    @blp.response(200, JobLogs)
    def get(self, request_id: str):
        """Snapshot of the prompt, stdout and stderr (last 2 MiB of each)."""
        with db() as session:
            req, run = jobs.load_job(session, request_id)
        logs = current_app.config["SETTINGS"].runs_dir / run.id / "logs"
        body, truncated = {"request_id": req.id}, []
        for name in ("prompt", "stdout", "stderr"):
            body[name], cut = _tail(logs / f"{name}.txt")
            if cut:
                truncated.append(name)
        body["truncated"] = truncated
        return body


def _tail(path: Path) -> tuple[str | None, bool]:
    if not path.is_file():
        return None, False
    size = path.stat().st_size
    with path.open("rb") as fh:
        if size > LOG_CAP:
            fh.seek(size - LOG_CAP)
        return fh.read().decode("utf-8", errors="replace"), size > LOG_CAP


@blp.route("/<request_id>/cancel")
class Cancel(MethodView):
    @blp.response(200, CancelResult)
    def post(self, request_id: str):
        """Cancel an active run; a finished run answers accepted=false."""
        # The DB flag is the cancel: a running run's worker sees it within 0.5 s and kills the
        # process group; a queued or waiting run (no process) ends here, and the revoke only
        # spares a worker the message (if it is lost, the claim guard still refuses the run).
        with db() as session:
            req, run = jobs.load_job(session, request_id)
            accepted = run_states.request_cancel(session, run.id)
            if accepted and run_states.cancel_idle(session, run.id) and run.celery_task_id:
                current_app.extensions["queue"].revoke(run.celery_task_id)
            session.refresh(run)
            return {"request_id": req.id, "accepted": accepted, "status": run.status}
