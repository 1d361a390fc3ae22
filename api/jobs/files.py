"""A finished run's files: the artifact manifest, single artifacts, and the bundle zip."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Response, request, send_file, stream_with_context

from api import context
from api.errors import ApiError
from api.jobs.read import load_job
from api.jobs.rows import RunState
from runner_core.artifacts import artifact_url, resolve_artifact_path
from runner_core.bundles import (
    bundle_names,
    bundle_path,
    clear_planted,
    store_bundle,
    stream_bundle,
)
from runner_core.error_codes import ErrorCode
from runner_core.runtime_options import RuntimeOptions
from runner_core.statuses import TERMINAL_STATUSES
from runner_core.store.models import Run

CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def run_dir(run: Run) -> Path:
    return context.settings().runs_dir / run.id


def require_finished_job(request_id: str, run: RunState) -> None:
    """The 409 of a job's artifacts or bundle while its run is active."""
    if run.status not in TERMINAL_STATUSES:
        raise ApiError(
            409,
            ErrorCode.RUN_NOT_FINISHED,
            f"the run is {run.status}; poll the job status",
            {"status": run.status},
            request_id,
        )


def load_finished(
    request_id: str, kind: str, require_finished: Callable[[str, RunState], None]
) -> Run:
    """The run of a request of `kind` (404 when there is none), once it has ended."""
    with context.db_session() as session:
        _req, run = load_job(session, request_id, kind)
    require_finished(request_id, run)
    return run


def with_urls(kind: str, request_id: str, artifacts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Manifest entries with their download `url` under the request asked about (a cache hit's
    request serves its run's files under its own id), and `path_rel` where a manifest written
    before it was named lacks it."""
    return [
        {**a, "path_rel": a["path"], "url": artifact_url(kind, request_id, a["path"])}
        for a in artifacts
    ]


def manifest_artifacts(run_id: str) -> list[dict[str, Any]]:
    """The artifacts of a run's manifest.json ([] before it is written)."""
    path = context.settings().runs_dir / run_id / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return list(manifest.get("artifacts", []))


def artifacts_body(request_id: str, run: Run, kind: str = "job") -> dict[str, Any]:
    """The artifact manifest as GET .../artifacts answers it; `kind`: the route's (job or
    temp), which the download urls follow."""
    path = run_dir(run) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return {
        "request_id": request_id,
        "artifacts": with_urls(kind, request_id, manifest.get("artifacts", [])),
        "missing_required": manifest.get("missing_required", []),
        "other_writes": manifest.get("other_writes", []),
    }


def artifact_file_response(request_id: str, run: Run, path: str) -> Response:
    # relative to artifacts/ unless it names it or is a file an artifact manifest listed
    # elsewhere (result/...); an absolute path is refused as it is
    if not (path == "artifacts" or path.startswith(("artifacts/", "/"))) and not _listed(run, path):
        path = f"artifacts/{path}"
    try:
        target = resolve_artifact_path(run_dir(run), path)
    except ValueError as exc:
        raise ApiError(
            400, ErrorCode.INVALID_ARTIFACT_PATH, str(exc), {"path": path}, request_id
        ) from exc
    if not target.is_file():
        raise ApiError(
            404, ErrorCode.ARTIFACT_NOT_FOUND, f"no artifact at {path}", {"path": path}, request_id
        )
    # a control character (a newline) cannot go into the Content-Disposition header: a 500
    name = CONTROL.sub("_", target.name)
    return send_file(target, as_attachment=True, download_name=name)


def _listed(run: Run, path: str) -> bool:
    """Whether the run's artifact index lists `path` outside artifacts/ (an artifact
    manifest's file under result/)."""
    return path.startswith("result/") and any(
        a.get("path") == path for a in manifest_artifacts(run.id)
    )


def bundle_response(run: Run, debug: bool | None = None) -> Response:
    """The bundle (debug when the run asked for it, or `debug` says so): the stored zip when an
    earlier download built it, otherwise streamed (never held in memory) and stored on the way.
    A first download asking for a Range waits until the zip is stored, then is answered from it
    (206, or 416 outside it) as later ones are."""
    if debug is None:
        debug = RuntimeOptions.from_dict(run.runtime_options).debug
    name = bundle_names(debug)[0]
    clear_planted(run_dir(run))  # a link the run left there is not followed
    stored = bundle_path(run_dir(run), debug)
    ranged = "Range" in request.headers
    if stored.is_file() or (ranged and store_bundle(run_dir(run), debug) is not None):
        return send_file(
            stored,
            mimetype="application/zip",
            as_attachment=True,
            download_name=name,
            conditional=True,
        )
    body = stream_with_context(iter(stream_bundle(run_dir(run), debug)))
    return Response(
        body,
        mimetype="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
