"""Installed skills and engines as the API and the UI show them: the summary and detail
bodies, and the lookups that answer 404. The skills, engines and management routes and the UI
pages all draw them here (one shape)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from api import context
from api.errors import ApiError
from runner_core.engines import SUPPORTED_ENGINES, engine_skill_dirs
from runner_core.engines.catalog import EngineInfo, engine_info
from runner_core.error_codes import ErrorCode
from runner_core.prompts import PATCH_MARKER
from runner_core.skills import SkillPackage
from runner_core.skills.memo import load_snapshot_cached
from runner_core.store.models import Run
from runner_core.workspace import find_snapshot

# The engines' own sandboxes as the adapters start them; the others run without one, in the
# run directory with a HOME of their own.
SANDBOXES = {"codex": "workspace-write"}


def skill_summary(pkg: SkillPackage) -> dict:
    m = pkg.manifest
    return {
        "id": pkg.id,
        "format": pkg.format,
        "name": pkg.name,
        "version": pkg.version,
        "description": pkg.description,
        "engines": list(m.engines) if m and m.engines is not None else None,
        "unsupported_engines": list(m.unsupported_engines) if m else [],
        "effective_engines": pkg.effective_engines,
        "execution_modes": list(m.execution_modes) if m else [],
        "health": pkg.health,
        "errors": pkg.errors,
        "warnings": pkg.warnings,
        **pkg.labels,
    }


def matches_labels(summary: dict, category: str | None, tag: str | None, q: str | None) -> bool:
    """A skill summary against the list's filters (each optional; `q` is any word of its id,
    name, description, category, tags or author, case-insensitive)."""
    if category and (summary.get("category") or "").lower() != category.lower():
        return False
    if tag and tag.lower() not in {t.lower() for t in summary.get("tags") or []}:
        return False
    if q:
        text = " ".join(
            str(summary.get(k) or "") for k in ("id", "name", "description", "category", "author")
        )
        text = (text + " " + " ".join(summary.get("tags") or [])).lower()
        return all(word in text for word in q.lower().split())
    return True


def skill_detail(pkg: SkillPackage) -> dict:
    m = pkg.manifest
    detail = skill_summary(pkg)
    entrypoint = asdict(m.entrypoint) if m else {}
    detail.update(
        {
            "entrypoint": entrypoint,
            "entrypoints": entrypoint,  # the spec's name in the management API's SkillDetail
            "schemas": {
                "input": pkg.input_schema,
                "parameter": pkg.parameter_schema,
                "output": pkg.output_schema,
            },
            "artifacts": [asdict(a) for a in pkg.artifacts],
            "runtime": asdict(m.runtime) if m and m.runtime else None,
            "automation": asdict(m.automation) if m else {},
            "files": sorted(
                str(p.relative_to(pkg.root))
                for p in pkg.root.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts
            ),
        }
    )
    return detail


def get_skill_or_404(skill_id: str) -> SkillPackage:
    pkg = context.skills().get(skill_id)
    if pkg is None:
        raise ApiError(
            404,
            ErrorCode.SKILL_NOT_FOUND,
            f"skill '{skill_id}' is not installed",
            {"skill_id": skill_id},
        )
    return pkg


def run_skill_or_404(run: Run) -> SkillPackage:
    """The skill a started run goes on with: the installed one, or, once that is uninstalled,
    the copy in the run's directory (an interactive run's next turn runs from it)."""
    try:
        return get_skill_or_404(run.skill_id)
    except ApiError:
        run_dir = context.settings().runs_dir / run.id
        snapshot = find_snapshot(run_dir, run.skill_id, engine_skill_dirs(run.engine))
        if snapshot is None:
            raise
        return load_snapshot_cached(snapshot, PATCH_MARKER)


def info_or_404(engine: str):
    if engine not in SUPPORTED_ENGINES:
        raise ApiError(
            404,
            ErrorCode.ENGINE_NOT_FOUND,
            f"unknown engine '{engine}'",
            {"engines": list(SUPPORTED_ENGINES)},
        )
    return engine_info(engine)


def engine_summary(info: EngineInfo) -> dict[str, Any]:
    """The engines route's summary plus the sandbox the engine runs in (management, UI)."""
    return {**info.summary(), "sandbox_status": SANDBOXES.get(info.engine, "none")}
