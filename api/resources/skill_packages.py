"""Skill packages: install or update a skill from a zip, and query an install."""

from __future__ import annotations

from flask.views import MethodView

from api.blueprint import Blueprint
from api.context import db_session
from api.install_service import install_package, load_install
from api.schemas.packages import InstallStatus, package_form_doc

blp = Blueprint(
    "skill_packages",
    __name__,
    url_prefix="/v1/skill-packages",
    description="Install and update skills",
)


@blp.route("")
class SkillPackages(MethodView):
    @blp.doc(**package_form_doc(with_request=False))
    @blp.response(200, InstallStatus)
    def post(self):
        """Install a skill, or update it to a higher version (multipart `package` or raw zip)."""
        with db_session() as session:
            return install_package(session)


@blp.route("/<install_id>")
class SkillPackageInstall(MethodView):
    @blp.response(200, InstallStatus)
    def get(self, install_id: str):
        """Status of one install: succeeded or failed (with every error), versions, archive."""
        with db_session() as session:
            return load_install(session, install_id)
