"""One-off runs: run a skill package without installing it; the per-run routes are the shared
run routes (as under /v1/jobs) of kind "temp"."""

from __future__ import annotations

from typing import Any

from flask import Response, request
from flask.views import MethodView

from api import context
from api.blueprint import Blueprint
from api.jobs.actions import require_finished
from api.jobs.files import artifact_file_response, artifacts_body, load_finished
from api.jobs.pending import hold_for_package
from api.jobs.temp import TEMP, create_temp_run, parse_json_request, temp_skill
from api.resources.run_routes import (
    CLIENT_VIEW_SUMMARIES,
    RunKind,
    register_bundle_route,
    register_run_routes,
)
from api.schemas import ANY_FILE, ArtifactManifest
from api.schemas.packages import TempRunCreated, package_form_doc

blp = Blueprint(
    "temp_skill_runs",
    __name__,
    url_prefix="/v1/temp-skill-runs",
    description="One-off runs of an uploaded skill package",
)

TEMP_RUN = RunKind(
    name=TEMP,
    endpoint_prefix="Temp",
    skill_for=lambda req, _run: temp_skill(req),
    require_finished=require_finished,
    summaries={
        "Upload": "Upload the input zip (multipart field `file`, or a raw application/zip body).",
        "Status": "Status and summary of a one-off run; `wait_sec` waits (long poll) for its end.",
        "Result": "The final structured result (409 RUN_NOT_FINISHED while it runs, unless it "
        "ends\nwithin `wait_sec`).",
        "Logs": "Snapshot of the prompt, stdout and stderr (last 2 MiB of each).",
        "LogsRange": "A byte range of one log (as /v1/jobs/{request_id}/logs/range).",
        "Pending": "The question an interactive one-off run waits on (as for jobs).",
        "ReplyFiles": "Answer the pending question with files (as for jobs).",
        "Reply": "Answer the pending question of an interactive one-off run (as for jobs).",
        "Events": "The one-off run's events as Server-Sent Events (as for jobs).",
        "EventsHistory": "The one-off run's stored FCMP events (as for jobs).",
        "Cancel": "Cancel an active one-off run; a finished run answers accepted=false.",
        "Bundle": "Download the run bundle zip (409 RUN_NOT_FINISHED while it runs).",
        **CLIENT_VIEW_SUMMARIES,
    },
)


def create_doc() -> dict:
    """The multipart create, or its `request` alone as a JSON body (the package comes with
    the upload)."""
    doc = package_form_doc(with_request=True)
    doc["requestBody"]["content"]["application/json"] = {
        "schema": {"type": "object", "description": "the `request` field's JSON"}
    }
    return doc


@blp.route("")
class TempRuns(MethodView):
    @blp.doc(**create_doc())
    @blp.response(200, TempRunCreated)
    def post(self) -> Any:
        """Run a skill package once (multipart `package` zip + `request` JSON); never installed.
        With an `Idempotency-Key` header, the same key, package and request answer the first run.
        Or in two steps: a JSON body (the `request`) first, then `/{request_id}/upload` with
        the package as multipart `skill_package` and the input zip as `file`."""
        if request.is_json:
            return hold_for_package(parse_json_request(), TEMP)
        with context.connect() as conn:
            return create_temp_run(conn)


@blp.route("/<request_id>/artifacts")
class TempArtifacts(MethodView):
    @blp.alt_response(200, schema=ArtifactManifest, success=True)
    def get(self, request_id: str) -> dict[str, Any]:
        """The one-off run's artifact manifest (as /v1/jobs/{request_id}/artifacts)."""
        return artifacts_body(request_id, load_finished(request_id, TEMP, require_finished), "temp")


@blp.route("/<request_id>/artifacts/<artifact_path:path>")
class TempArtifactFile(MethodView):
    @blp.doc(responses={"200": ANY_FILE})
    def get(self, request_id: str, path: str) -> Response:
        """Download one artifact of the one-off run by its path (traversal refused)."""
        run = load_finished(request_id, TEMP, require_finished)
        return artifact_file_response(request_id, run, path)


register_run_routes(blp, TEMP_RUN)
register_bundle_route(blp, TEMP_RUN)
