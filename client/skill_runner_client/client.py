"""The SDK's entry point: `Client(base_url, token)` with `jobs`, `temp_runs` and the skill,
skill package, engine and housekeeping routes."""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

from skill_runner_client.inputs import FileSource, build_package_zip, check_files
from skill_runner_client.runs import RunRoutes
from skill_runner_client.transport import Transport
from skill_runner_client.types import (
    Artifact,
    CleanupResult,
    Created,
    InstallStatus,
    JobPage,
    JobStatus,
    SkillDetail,
    SkillSummary,
    TempRunCreated,
)

DEFAULT_URL = "http://127.0.0.1:8000"


def job_body(
    skill_id: str | None,
    engine: str | None = None,
    model: str | None = None,
    parameter: Mapping[str, Any] | None = None,
    input: Mapping[str, Any] | None = None,
    runtime_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON of POST /v1/jobs (without skill_id: a one-off run's `request` field)."""
    body: dict[str, Any] = {} if skill_id is None else {"skill_id": skill_id}
    for name, value in (
        ("engine", engine),
        ("model", model),
        ("parameter", parameter),
        ("input", input),
        ("runtime_options", runtime_options),
    ):
        if value is not None:
            body[name] = dict(value) if isinstance(value, Mapping) else value
    return body


def key_header(idempotency_key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": idempotency_key} if idempotency_key else {}


class Jobs(RunRoutes):
    """Runs of installed skills: /v1/jobs."""

    def create(
        self,
        skill_id: str,
        *,
        engine: str | None = None,
        model: str | None = None,
        parameter: Mapping[str, Any] | None = None,
        input: Mapping[str, Any] | None = None,
        runtime_options: Mapping[str, Any] | None = None,
        files: Mapping[str, FileSource] | None = None,
        idempotency_key: str | None = None,
    ) -> Created:
        """Create a job and, when `files` are given (field -> path or bytes), upload them.
        With `idempotency_key`, sending the same job again returns the first one (and its
        upload is not sent twice)."""
        check_files(files or {})
        body = job_body(skill_id, engine, model, parameter, input, runtime_options)
        response = self._t.request(
            "POST", self.prefix, json=body, headers=key_header(idempotency_key)
        )
        created = cast(Created, response.json())
        if not files:
            return created
        if idempotency_key:  # sent again, the same key may find the upload taken by now
            return self.upload_again(created["request_id"], files)
        return self.upload_new(created["request_id"], files)

    def list(
        self,
        status: str | None = None,
        skill_id: str | None = None,
        engine: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> JobPage:
        """One page of jobs, newest first; pass `next_cursor` on for the next."""
        params = {
            k: v
            for k, v in (
                ("status", status),
                ("skill_id", skill_id),
                ("engine", engine),
                ("limit", limit),
                ("cursor", cursor),
            )
            if v is not None
        }
        return cast(JobPage, self._t.request("GET", self.prefix, params=params).json())

    def iter(
        self,
        status: str | None = None,
        skill_id: str | None = None,
        engine: str | None = None,
        page_size: int = 200,
    ) -> Iterator[JobStatus]:
        """Every job matching the filters, newest first, page after page."""
        cursor = None
        while True:
            page = self.list(status, skill_id, engine, page_size, cursor)
            yield from page["items"]
            cursor = page["next_cursor"]
            if not cursor:
                return

    def artifacts(self, request_id: str) -> builtins.list[Artifact]:
        """The artifact manifest of a finished job."""
        body = self._t.request("GET", self._path(request_id, "/artifacts")).json()
        return cast(builtins.list[Artifact], body["artifacts"])

    def download_artifact(self, request_id: str, path: str, dest: str | os.PathLike[str]) -> Path:
        """Stream one artifact (by its manifest path) to `dest`."""
        return self._download(self._path(request_id, "/artifacts/" + quote(path)), dest)


class TempRuns(RunRoutes):
    """One-off runs of a skill package that is never installed: /v1/temp-skill-runs."""

    def create(
        self,
        package: str | os.PathLike[str],
        *,
        engine: str | None = None,
        model: str | None = None,
        parameter: Mapping[str, Any] | None = None,
        input: Mapping[str, Any] | None = None,
        runtime_options: Mapping[str, Any] | None = None,
        files: Mapping[str, FileSource] | None = None,
        idempotency_key: str | None = None,
    ) -> TempRunCreated:
        """Run the package zip once; `files` are uploaded as for a job."""
        check_files(files or {})
        request = json.dumps(job_body(None, engine, model, parameter, input, runtime_options))
        with open(package, "rb") as fh:
            response = self._t.request(
                "POST",
                self.prefix,
                data={"request": request},
                files={"package": ("package.zip", fh, "application/zip")},
                headers=key_header(idempotency_key),
                rewind=lambda: fh.seek(0),
            )
        created = cast(TempRunCreated, response.json())
        if files:
            send = self.upload_again if idempotency_key else self.upload_new
            created = cast(TempRunCreated, {**created, **send(created["request_id"], files)})
        return created


class Client:
    """A client of one service. Thread-safe; close it (or use `with`) to drop connections."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 90.0,
        max_retries: int = 5,
        max_retry_wait: float = 60.0,
    ) -> None:
        """`base_url` defaults to $SKILL_RUNNER_URL or http://127.0.0.1:8000, `token` to
        $SKILL_RUNNER_TOKEN. 429 and 503 are retried up to `max_retries` times after their
        Retry-After (at most `max_retry_wait` s each)."""
        base_url = base_url or os.environ.get("SKILL_RUNNER_URL") or DEFAULT_URL
        token = token if token is not None else os.environ.get("SKILL_RUNNER_TOKEN")
        self.base_url = base_url
        self._t = Transport(base_url, token, timeout, max_retries, max_retry_wait)
        self.jobs = Jobs(self._t, "/v1/jobs")
        self.temp_runs = TempRuns(self._t, "/v1/temp-skill-runs")

    def close(self) -> None:
        self._t.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _get(self, path: str, **kwargs: Any) -> Any:
        return self._t.request("GET", path, **kwargs).json()

    def health(self) -> dict[str, Any]:
        """GET /healthz (a degraded service's 503 answer raises)."""
        return cast(dict[str, Any], self._get("/healthz"))

    def skills(self) -> list[SkillSummary]:
        """Installed skills with their health."""
        return cast(list[SkillSummary], self._get("/v1/skills"))

    def skill(self, skill_id: str) -> SkillDetail:
        """One skill: manifest, schemas, artifacts contract, files."""
        return cast(SkillDetail, self._get(f"/v1/skills/{quote(skill_id)}"))

    def install(self, package: str | os.PathLike[str]) -> InstallStatus:
        """Install a skill package zip, or a skill folder (zipped here), or update the skill to
        its higher version."""
        opened = build_package_zip(package) if os.path.isdir(package) else open(package, "rb")
        with opened as fh:
            response = self._t.request(
                "POST",
                "/v1/skill-packages",
                files={"package": ("package.zip", fh, "application/zip")},
                rewind=lambda: fh.seek(0),
            )
        return cast(InstallStatus, response.json())

    def install_status(self, install_id: str) -> InstallStatus:
        """One install's record."""
        return cast(InstallStatus, self._get(f"/v1/skill-packages/{quote(install_id)}"))

    def delete_skill(self, skill_id: str) -> dict[str, Any]:
        """Uninstall a skill (an admin token): `{skill_id, version, archive_path}`."""
        return self._t.request("DELETE", f"/v1/skills/{quote(skill_id)}").json()

    def engines(self) -> list[dict[str, Any]]:
        """Engines: cli_version, installed, auth_ready, models_count."""
        return cast(list[dict[str, Any]], self._get("/v1/engines"))

    def engine(self, engine: str) -> dict[str, Any]:
        """One engine in detail."""
        return cast(dict[str, Any], self._get(f"/v1/engines/{quote(engine)}"))

    def engine_models(self, engine: str) -> dict[str, Any]:
        """`{engine, default_model, models, model_ids}`: `models` as objects (`id`, `provider_id`,
        `model`, `supported_effort`, ...); `model_ids` is what POST /v1/jobs accepts as `model`."""
        return cast(dict[str, Any], self._get(f"/v1/engines/{quote(engine)}/models"))

    def cleanup(self, older_than_sec: int = 0, statuses: list[str] | None = None) -> CleanupResult:
        """Delete finished runs older than the cutoff (call again while `more`)."""
        body: dict[str, Any] = {"older_than_sec": older_than_sec}
        if statuses is not None:
            body["statuses"] = statuses
        response = self._t.request("POST", "/v1/jobs/cleanup", json=body)
        return cast(CleanupResult, response.json())

    def openapi(self) -> dict[str, Any]:
        """The service's OpenAPI document."""
        return cast(dict[str, Any], self._get("/openapi.json"))
