"""Installed skills: list, detail, and (admin) delete."""

from __future__ import annotations

from flask.views import MethodView
from marshmallow import Schema, fields

from api import context
from api.blueprint import Blueprint
from api.catalog import get_skill_or_404, matches_labels, skill_detail, skill_summary
from api.schemas import SkillDetail, SkillListArgs, SkillSummary
from runner_core.skills.installer import installer_for

blp = Blueprint("skills", __name__, url_prefix="/v1/skills", description="Installed skills")


class SkillDeleted(Schema):
    skill_id = fields.String()
    version = fields.String(allow_none=True)
    archive_path = fields.String(
        metadata={"description": "where the removed files were archived, under the data dir"}
    )


@blp.route("")
class Skills(MethodView):
    @blp.arguments(SkillListArgs(), location="query")
    @blp.response(200, SkillSummary(many=True))
    def get(self, args: dict):
        """List installed skills with their health, their category, tags and author; filter by
        `category`, `tag` or words (`q`)."""
        summaries = [skill_summary(p) for p in context.skills().list()]
        return [
            s
            for s in summaries
            if matches_labels(s, args.get("category"), args.get("tag"), args.get("q"))
        ]


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
