"""A job's files: the artifact manifest, single artifact downloads, and the bundle."""

from __future__ import annotations

from typing import Any

from flask import Response
from flask.views import MethodView

from api.blueprint import Blueprint
from api.jobs.files import artifact_file_response, artifacts_body, load_finished
from api.resources.job_routes import JOB
from api.resources.run_routes import register_bundle_route
from api.schemas import ANY_FILE, ArtifactManifest

blp = Blueprint(
    "run_files", __name__, url_prefix="/v1/jobs", description="Run artifacts and bundles"
)


def _finished(request_id: str):
    return load_finished(request_id, JOB.name, JOB.require_finished)


@blp.route("/<request_id>/artifacts")
class Artifacts(MethodView):
    @blp.alt_response(200, schema=ArtifactManifest, success=True)
    def get(self, request_id: str) -> dict[str, Any]:
        """The artifact manifest: role, path, filename, mime, size, sha256, required."""
        return artifacts_body(request_id, _finished(request_id))


@blp.route("/<request_id>/artifacts/<artifact_path:path>")
class ArtifactFile(MethodView):
    @blp.doc(responses={"200": ANY_FILE})
    def get(self, request_id: str, path: str) -> Response:
        """Download one artifact by its path (traversal refused)."""
        return artifact_file_response(request_id, _finished(request_id), path)


register_bundle_route(blp, JOB)
