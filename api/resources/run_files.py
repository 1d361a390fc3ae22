"""A run's files: the artifact manifest, single artifact downloads, and the streamed bundle."""
from __future__ import annotations

import json

from flask import Response, current_app, send_file, stream_with_context
from flask.views import MethodView

from api import job_service as jobs
from api.blueprint import Blueprint
from api.errors import ApiError
from runner_core.artifacts import resolve_artifact_path
from runner_core.bundles import bundle_names, bundle_path, stream_bundle
from runner_core.store.models import Run

blp = Blueprint("run_files", __name__, url_prefix="/v1/jobs", description="Run artifacts and bundles")

FINISHED = ("succeeded", "failed", "canceled")


def run_dir(run: Run):
    return current_app.config["SETTINGS"].runs_dir / run.id


def load_finished(request_id: str) -> Run:
    with current_app.extensions["db"]() as session:
        _req, run = jobs.load_job(session, request_id, "job")
    if run.status not in FINISHED:
        raise ApiError(409, "RUN_NOT_FINISHED", f"the run is {run.status}; poll the job status",
                       {"status": run.status}, request_id)
    return run


def artifacts_body(request_id: str, run: Run) -> dict:
    path = run_dir(run) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return {"request_id": request_id, "artifacts": manifest.get("artifacts", []),
            "missing_required": manifest.get("missing_required", [])}


def artifact_file_response(request_id: str, run: Run, path: str):
    if not (path == "artifacts" or path.startswith("artifacts/")):
        path = f"artifacts/{path}"
    try:
        target = resolve_artifact_path(run_dir(run), path)
    except ValueError as exc:
        raise ApiError(400, "INVALID_ARTIFACT_PATH", str(exc), {"path": path}, request_id) from exc
    if not target.is_file():
        raise ApiError(404, "ARTIFACT_NOT_FOUND", f"no artifact at {path}", {"path": path}, request_id)
    return send_file(target, as_attachment=True, download_name=target.name)


def bundle_response(run: Run) -> Response:
    """The bundle (debug when the run asked for it): the stored zip when an earlier download
    built it, otherwise streamed (never held in memory) and stored on the way."""
    debug = bool((run.runtime_options or {}).get("debug"))
    name = bundle_names(debug)[0]
    stored = bundle_path(run_dir(run), debug)
    if stored.is_file():
        return send_file(stored, mimetype="application/zip", as_attachment=True,
                         download_name=name, conditional=True)
    body = stream_with_context(iter(stream_bundle(run_dir(run), debug)))
    return Response(body, mimetype="application/zip",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


@blp.route("/<request_id>/artifacts")
class Artifacts(MethodView):
    def get(self, request_id: str):
        """The artifact manifest: role, path, filename, mime, size, sha256, required."""
        return artifacts_body(request_id, load_finished(request_id))


@blp.route("/<request_id>/artifacts/<path:path>")
class ArtifactFile(MethodView):
    def get(self, request_id: str, path: str):
        """Download one artifact by its path (traversal refused)."""
        return artifact_file_response(request_id, load_finished(request_id), path)


@blp.route("/<request_id>/bundle")
class Bundle(MethodView):
    def get(self, request_id: str):
        """Download the run bundle zip (result + artifacts + manifest; whole run with debug)."""
        return bundle_response(load_finished(request_id))
