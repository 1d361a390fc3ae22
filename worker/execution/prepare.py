"""Prepare a claimed run: its directory (taken ready from the run pool, or made), the skill's
snapshot, input.json and the uploads, and the inputs resolved against the skill's schemas."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from runner_core.engines import engine_skill_dirs
from runner_core.error_codes import ErrorCode
from runner_core.in_run import write_in_run
from runner_core.inputs import InputError, ResolvedInputs, apply_defaults, resolve_inputs
from runner_core.openevo.spec import SKILL_JSON
from runner_core.prompts import PATCH_MARKER
from runner_core.run_pool import RunDirPool
from runner_core.settings import Settings
from runner_core.skills import SkillPackage
from runner_core.skills.locks import locks_dir, skill_lock
from runner_core.skills.memo import load_skill_signed, load_snapshot_cached, relocated
from runner_core.store.models import Run
from runner_core.workspace import (
    RunPaths,
    copy_uploads,
    create_run_dir,
    find_snapshot,
    write_json_in,
)
from runner_core.workspace_reuse import reserve_namespace, take_over
from worker.execution.contexts import EntryContext
from worker.execution.failures import RunFailed
from worker.execution.ran_skill import ran_key
from worker.execution.run_layout import (
    PoolLayout,
    is_engine_run,
    skill_copies,
    skill_source,
    snapshot_dir,
)
from worker.execution.supervisor import Watch


@dataclass(frozen=True)
class StagedSkill:
    """The run's own skill snapshot; `pool_layout` is what the next run of this skill version
    needs (None when no run directory should be made ahead for it); `version` and `cache_key`:
    the version of the skill copied in and the run's key with its files."""

    pkg: SkillPackage
    pool_layout: PoolLayout | None
    version: str | None = None
    cache_key: str | None = None


def stage_skill(settings: Settings, run: Run, paths: RunPaths, pool: RunDirPool) -> StagedSkill:
    """Take a ready run directory from the pool, or make one with the skill's snapshot."""
    source = skill_source(settings, run)
    if not ((source / "SKILL.md").is_file() or (source / SKILL_JSON).is_file()):
        raise RunFailed(ErrorCode.SKILL_NOT_FOUND, f"skill '{run.skill_id}' is not installed")
    pool_layout = None
    # Shared lock: an install of this skill cannot swap it while it is being copied.
    with skill_lock(locks_dir(settings.data_dir), run.skill_id, shared=True):
        loaded, signature = load_skill_signed(source)  # validated once per version
        # the skill installed now may not be the one the job was created with
        key = ran_key(settings, run, loaded)
        installed = run.kind == "job"  # one-off runs bring their own package
        layout = PoolLayout(
            source,
            run.skill_id,
            snapshot_dir(run, loaded),
            git=is_engine_run(loaded),
            signature=signature,
            copies=skill_copies(settings) if installed else None,
        )
        if installed and loaded.health == "ok":  # one-off runs: no next run
            pool_layout = layout
        if pool_layout and pool.take(layout.key, paths.root):
            snapshot = layout.snapshot_in(paths.root)
        else:
            create_run_dir(paths.root.parent, paths.root.name)
            snapshot, _exact = layout.snapshot(paths)
    return StagedSkill(relocated(loaded, snapshot), pool_layout, loaded.version, key)


def write_inputs(
    settings: Settings,
    run: Run,
    paths: RunPaths,
    pkg: SkillPackage,
    request_payload: dict[str, Any] | None,
) -> ResolvedInputs:
    """input.json, the uploads and resolved_input.json; raises RunFailed for a broken skill
    or inputs its schemas reject."""
    if pkg.health != "ok":
        raise RunFailed(ErrorCode.SKILL_INVALID, "; ".join(pkg.errors), {"errors": pkg.errors})
    request_dir = settings.requests_dir / run.request_id
    write_json_in(
        paths.root,
        "input.json",
        request_payload or {"skill_id": run.skill_id, "parameter": run.parameter},
    )
    # the run's own copies: the uploads, then the files bound from an earlier run
    copy_uploads((request_dir / "uploads", request_dir / "bound"), paths)
    if (request_dir / "input_manifest.json").is_file():
        data = (request_dir / "input_manifest.json").read_bytes()
        write_in_run(paths.root, "input_manifest.json", data)
    try:
        resolved = resolve_inputs(
            pkg.input_schema,
            pkg.parameter_schema,
            paths.uploads,
            run.input,
            run.parameter,
            bound_inputs(run),
        )
    except InputError as exc:
        raise RunFailed(exc.code, exc.message, exc.details) from exc
    if pkg.format == "skill.json":  # a function's defaults fill its missing arguments
        resolved = replace(resolved, input=apply_defaults(pkg.input_schema, resolved.input))
    resolved_doc = {"input": resolved.input, "parameter": resolved.parameter}
    write_json_in(paths.root, "resolved_input.json", resolved_doc)
    return resolved


def reused_workspace(run: Run) -> dict[str, Any]:
    """The run's `runtime_options.workspace` as the API stored it ({} when it has none)."""
    workspace = (run.runtime_options or {}).get("workspace")
    return workspace if isinstance(workspace, dict) and workspace.get("source_run_id") else {}


def bound_inputs(run: Run) -> dict[str, str]:
    """File inputs bound from an earlier run: input key -> its uploads-relative path."""
    bindings = reused_workspace(run).get("file_bindings") or []
    return {b["input_key"]: b["target_path"] for b in bindings if isinstance(b, dict)}


def enter_workspace(settings: Settings, run: Run, paths: RunPaths) -> None:
    """Take over the workspace of the run this one reuses (its files copied in, this run's
    own inputs kept), then reserve the run's result namespace `result/<skill>.<n>/`."""
    source_run_id = reused_workspace(run).get("source_run_id")
    if source_run_id:
        source = settings.runs_dir / str(source_run_id)
        if not source.is_dir():
            raise RunFailed(
                ErrorCode.WORKSPACE_SOURCE_NOT_READY,
                "the files of the run whose workspace this run reuses are gone",
                {"source_run_id": source_run_id},
            )
        take_over(source, paths.root)
    reserve_namespace(paths.result, run.skill_id)


def resumed_context(
    settings: Settings, run: Run, paths: RunPaths, make_watch: Callable[[SkillPackage], Watch]
) -> EntryContext:
    """A later turn of an interactive run: its directory, skill copy and resolved inputs are
    the first turn's."""
    snapshot = find_snapshot(paths.root, run.skill_id, engine_skill_dirs(run.engine))
    if snapshot is None or not paths.resolved_input.is_file():
        raise RunFailed(
            ErrorCode.SESSION_RESUME_FAILED,
            "the run's directory no longer holds its skill copy and inputs",
        )
    resolved = json.loads(paths.resolved_input.read_text(encoding="utf-8"))
    inputs = ResolvedInputs(resolved.get("input") or {}, resolved.get("parameter") or {})
    pkg = load_snapshot_cached(snapshot, PATCH_MARKER)  # validated once per skill version
    return EntryContext(run, paths, pkg, inputs, settings, make_watch)
