"""A job that works in an earlier run's workspace (`runtime_options.workspace`, mode "reuse"):
checked when it is created, its bound files pinned under the request, and what its status says
about where its files are (`workspace_dir`, `resultJsonPath`)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, bindparam, select

from api import auth, context
from api.errors import ApiError
from runner_core.error_codes import ErrorCode
from runner_core.inputs import file_fields
from runner_core.skills import SkillPackage
from runner_core.statuses import RunStatus
from runner_core.store.models import Request, Run
from runner_core.workspace_reuse import (
    FileBinding,
    Reuse,
    ReuseError,
    clean_relative,
    link_file,
    parse_reuse,
    result_json_file,
    source_file,
)

BOUND_DIR = "bound"  # data/requests/<request_id>/bound/<target_path>: files a binding pinned
_CODES = {
    404: ErrorCode.WORKSPACE_SOURCE_NOT_FOUND,
    409: ErrorCode.WORKSPACE_SOURCE_NOT_READY,
    422: ErrorCode.WORKSPACE_BINDING_INVALID,
}
_requests, _runs = Request.__table__, Run.__table__
_SOURCE = (
    select(_requests.c.owner, _runs.c.id, _runs.c.status, _runs.c.cache_key)
    .join_from(_requests, _runs, _runs.c.id == _requests.c.run_id)
    .where(_requests.c.id == bindparam("request_id_"))
)


@dataclass(frozen=True, slots=True)
class Source:
    """The succeeded run whose workspace (or file) a request takes."""

    request_id: str
    run_id: str
    run_dir: Path
    cache_key: str | None


@dataclass(frozen=True, slots=True)
class Workspace:
    """A checked reuse: the source, the bound input keys, and what it adds to the cache key."""

    source: Source
    files: tuple[tuple[FileBinding, Path], ...]  # each binding and the file it names
    cache_token: str

    @property
    def bound_keys(self) -> frozenset[str]:
        return frozenset(b.input_key for b, _path in self.files)

    def stored(self, sent: dict[str, Any]) -> dict[str, Any]:
        """The run's `runtime_options.workspace`: as sent, plus the source's run id (the
        worker takes its files over) and the cache token (an upload's key needs it again)."""
        return {**sent, "source_run_id": self.source.run_id, "cache_token": self.cache_token}


def check_reuse(
    conn: Connection, pkg: SkillPackage, options: dict[str, Any], inline: dict[str, Any]
) -> Workspace | None:
    """The request's reuse, checked: 404 for an unknown source, 409 for one that did not
    succeed (or whose directory is gone), 422 for a malformed option or binding."""
    try:
        reuse = parse_reuse(options)
        return None if reuse is None else _check(conn, pkg, reuse, inline)
    except ReuseError as exc:
        raise ApiError(exc.status, _CODES[exc.status], exc.message, exc.details) from exc


def _check(conn: Connection, pkg: SkillPackage, reuse: Reuse, inline: dict[str, Any]) -> Workspace:
    source = _source(conn, reuse.request_id, "runtime_options.workspace.request_id")
    fields = file_fields(pkg.input_schema)
    found: list[tuple[FileBinding, Path]] = []
    digest = hashlib.sha256(f"{source.cache_key or source.run_id}\0".encode())
    digest.update(_file_sha256(source.run_dir / "result" / "result.json").encode())
    for binding in reuse.bindings:
        if binding.input_key not in fields:
            raise ReuseError(
                422,
                f"input_key '{binding.input_key}' is not a file input of skill '{pkg.id}'",
                {"input_key": binding.input_key},
            )
        clean_relative(binding.target_path, "target_path")
        if inline.get(binding.input_key) != binding.target_path:
            raise ReuseError(
                422,
                f"input.{binding.input_key} must equal the binding's target_path "
                f"'{binding.target_path}'",
                {"input_key": binding.input_key, "target_path": binding.target_path},
            )
        owner = (
            source
            if binding.source_request_id == source.request_id
            else _source(conn, binding.source_request_id, "file_bindings.source_request_id")
        )
        path = source_file(owner.run_dir, binding.source_path)
        digest.update(f"{binding.input_key}\0{binding.target_path}\0".encode())
        digest.update(_file_sha256(path).encode())
        found.append((binding, path))
    return Workspace(source, tuple(found), digest.hexdigest())


def _source(conn: Connection, request_id: str, field: str) -> Source:
    row = conn.execute(_SOURCE, {"request_id_": request_id}).first()
    if row is None or not auth.may_see(row.owner):  # another token's: as unknown
        raise ReuseError(
            404, f"{field}: no job with request_id '{request_id}'", {field: request_id}
        )
    if row.status != RunStatus.SUCCEEDED:
        raise ReuseError(
            409,
            f"{field}: the run of '{request_id}' is {row.status}, not succeeded",
            {field: request_id, "status": row.status},
        )
    run_dir = context.settings().runs_dir / row.id
    if not run_dir.is_dir():
        raise ReuseError(409, f"{field}: the files of '{request_id}' are gone", {field: request_id})
    return Source(request_id, row.id, run_dir, row.cache_key)


def pin_bound_files(workspace: Workspace, request_dir: Path) -> None:
    """Hard-link every bound file under the request (`bound/<target_path>`): the worker
    links them into the run's uploads/, whatever happens to the source run meanwhile."""
    for binding, path in workspace.files:
        link_file(path, request_dir / BOUND_DIR / binding.target_path)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(64 * 1024):
                digest.update(chunk)
    except OSError:
        return "-"
    return digest.hexdigest()


def workspace_dir(run_id: str | None) -> str | None:
    """The run's directory on the server: its workspace (absolute, as clients expect). Plain
    strings: a job list computes it for every row it returns."""
    if not run_id:
        return None
    return os.path.join(str(context.settings().data_dir), "runs", run_id)


def result_json_path(run_id: str | None, skill_id: str) -> str | None:
    """The run's result document: its namespace copy `result/<skill>.<n>/result.json` when it
    has one, else `result/result.json` (both absolute; clients find them in the bundle too)."""
    if not run_id:
        return None
    return result_json_file(workspace_dir(run_id) or "", skill_id)
