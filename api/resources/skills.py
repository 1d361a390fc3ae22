"""Installed skills: list, detail, and (admin) delete."""

from __future__ import annotations

from dataclasses import asdict

from flask.views import MethodView
from marshmallow import Schema, fields

from api import context
from api.blueprint import Blueprint
from api.errors import ApiError
from api.schemas import SkillDetail, SkillSummary
from runner_core.error_codes import ErrorCode
from runner_core.skills import SkillPackage
from runner_core.skills.installer import installer_for

blp = Blueprint("skills", __name__, url_prefix="/v1/skills", description="Installed skills")


class SkillDeleted(Schema):
    skill_id = fields.String()
    version = fields.String(allow_none=True)
    archive_path = fields.String(
        metadata={"description": "where the removed files were archived, under the data dir"}
    )


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
    }


def skill_detail(pkg: SkillPackage) -> dict:
    m = pkg.manifest
    detail = skill_summary(pkg)
    detail.update(
        {
            "entrypoint": asdict(m.entrypoint) if m else {},
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


@blp.route("")
class Skills(MethodView):
    @blp.response(200, SkillSummary(many=True))
    def get(self):
        """List installed skills with their health."""
        return [skill_summary(p) for p in context.skills().list()]


@blp.route("/<skill_id>")
class Skill(MethodView):
    @blp.response(200, SkillDetail)
    def get(self, skill_id: str):
        """Show one skill's manifest, schemas and artifacts contract."""
        return skill_detail(get_skill_or_404(skill_id))

    @blp.response(200, SkillDeleted)
    def delete(self, skill_id: str):
        """Uninstall a skill (admin): archived under the data directory, then removed; runs
        already started keep their copy, runs that have not started yet fail SKILL_NOT_FOUND."""
        pkg = get_skill_or_404(skill_id)
        settings = context.settings()
        archived = installer_for(settings.data_dir, settings.skills_dir).uninstall(pkg)
        return {
            "skill_id": pkg.id,
            "version": pkg.version,
            "archive_path": archived.relative_to(settings.data_dir).as_posix(),
        }
