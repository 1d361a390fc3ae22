"""Engines: installed CLIs, versions, auth readiness and models."""

from __future__ import annotations

from flask.views import MethodView

from api.blueprint import Blueprint
from api.catalog import info_or_404
from api.engine_upgrades import latest_upgrade, request_upgrade, upgrade_statuses
from api.schemas import EngineModels
from api.schemas.management import (
    EngineDetail,
    EngineSummary,
    EngineUpgrade,
    EngineUpgradeRequest,
)
from runner_core.engines.catalog import all_engines, model_objects

blp = Blueprint("engines", __name__, url_prefix="/v1/engines", description="Engine CLIs")


@blp.route("")
class Engines(MethodView):
    @blp.alt_response(200, schema=EngineSummary(many=True), success=True)
    def get(self):
        """List engines: cli_version, installed, auth_ready, models_count, upgrade_status."""
        statuses = upgrade_statuses()
        return [
            {**info.summary(), "upgrade_status": statuses.get(info.engine, "idle")}
            for info in all_engines()
        ]


@blp.route("/<engine>")
class Engine(MethodView):
    @blp.alt_response(200, schema=EngineDetail, success=True)
    def get(self, engine: str):
        """One engine in detail (binary path, models, last error, upgrade_status)."""
        info = info_or_404(engine)
        return {**info.detail(), "upgrade_status": upgrade_statuses().get(engine, "idle")}


@blp.route("/<engine>/upgrade")
class Upgrade(MethodView):
    @blp.arguments(EngineUpgradeRequest())
    @blp.response(202, EngineUpgrade)
    def post(self, body: dict, engine: str):
        """Install a version of the engine's CLI (admin): a worker runs `npm install` of it into
        the engines folder; 409 while runs of the engine are active or an upgrade is."""
        return request_upgrade(engine, body["version"])

    @blp.response(200, EngineUpgrade)
    def get(self, engine: str):
        """The engine's newest upgrade with the tail of npm's output (`status: idle`: none)."""
        return latest_upgrade(engine)


@blp.route("/<engine>/models")
class Models(MethodView):
    @blp.alt_response(200, schema=EngineModels, success=True)
    def get(self, engine: str):
        """Models offered for `engine` as objects (`id`, codex: name@reasoning_effort;
        `provider_id`, `model`, `supported_effort`, `display_name`), their ids in `model_ids`."""
        info = info_or_404(engine)
        return {
            "engine": engine,
            "default_model": info.default_model,
            "models": model_objects(engine, info.models),
            "model_ids": info.models,
        }
