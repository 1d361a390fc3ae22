"""Engines: installed CLIs, versions, auth readiness and models."""

from __future__ import annotations

from flask.views import MethodView

from api.blueprint import Blueprint
from api.catalog import info_or_404
from api.schemas import EngineModels
from api.schemas.management import EngineDetail, EngineSummary
from runner_core.engines.catalog import all_engines, model_objects

blp = Blueprint("engines", __name__, url_prefix="/v1/engines", description="Engine CLIs")


@blp.route("")
class Engines(MethodView):
    @blp.alt_response(200, schema=EngineSummary(many=True), success=True)
    def get(self):
        """List engines: cli_version, installed, auth_ready, models_count."""
        return [info.summary() for info in all_engines()]


@blp.route("/<engine>")
class Engine(MethodView):
    @blp.alt_response(200, schema=EngineDetail, success=True)
    def get(self, engine: str):
        """One engine in detail (binary path, models, last error)."""
        return info_or_404(engine).detail()


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
