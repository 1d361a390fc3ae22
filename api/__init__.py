"""The REST API: Flask app factory wiring config, SQL, the queue client and blueprints."""

from __future__ import annotations

import logging
import os
from typing import Any

from flask import Flask, send_from_directory
from flask_smorest import Api

from api.auth import openapi_security, require_token
from api.auth.audit import record_audited
from api.auth.scopes import ScopePlugin
from api.auth.session import install_sessions
from api.config import build_config
from api.cors import allow_origins
from api.cross_site import protective_headers, refuse_cross_site
from api.errors import http_exception_response, register_error_handlers
from api.jobs.queue_bound import QueueBound
from api.json_bodies import JSONProvider
from api.logs import configure_logging, tag_request_lines
from api.media_types import check_body_types
from api.metrics import register_metrics
from api.queue import CeleryQueue
from api.schemas import ErrorBody
from api.schemas.output_fields import UtcDateTime
from api.url_converters import CONVERTERS
from runner_core.api_tokens import TokenRegistry
from runner_core.event_bus import EventHub, EventPublisher
from runner_core.finish_events import FinishWatcher
from runner_core.metrics import use_metrics_dir
from runner_core.settings import DEMO_LLM_WARNING
from runner_core.skills import SkillRegistry
from runner_core.store.db import make_engine, make_sessionmaker
from runner_core.sweep_mark import SweepMark


class RunnerApi(Api):
    """flask-smorest Api whose HTTP errors use the API's error body (also in the document)."""

    ERROR_SCHEMA = ErrorBody

    def handle_http_exception(self, error):
        return http_exception_response(error)


def max_waiters() -> int:
    """How many long polls (wait_sec) one API process lets wait at once: under gevent a waiter
    is a greenlet (bounded by WEB_CONNECTIONS); under gthread it holds one of WEB_THREADS, and
    one thread is left free for other requests."""
    if os.environ.get("WEB_WORKER_CLASS", "gevent") == "gevent":
        return max(1, int(os.environ.get("WEB_CONNECTIONS", "1000")) // 2)
    return max(1, int(os.environ.get("WEB_THREADS", "4")) - 1)


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Build the app. Tests pass {"SETTINGS": ..., "QUEUE": FakeQueue()}."""
    app = Flask(__name__)
    app.json = JSONProvider(app)  # request.get_json refuses a lone surrogate as the parser does
    app.config.update(build_config(config))
    settings = app.config["SETTINGS"]
    use_metrics_dir(settings.metrics_dir, settings.data_dir)  # before prometheus_client loads
    configure_logging(settings)
    if settings.demo_llm:
        logging.getLogger(__name__).warning(DEMO_LLM_WARNING, settings.demo_llm)
    engine = make_engine(settings.database_url)
    app.extensions["db"] = make_sessionmaker(engine)
    app.extensions["db_engine"] = engine  # Core connections for the POSTs' few statements
    app.extensions["skills"] = SkillRegistry(settings.skills_dir)
    app.extensions["queue"] = app.config.get("QUEUE") or CeleryQueue(
        settings.broker_url, settings.task_events or settings.task_sent_events
    )
    app.extensions["queue_bound"] = QueueBound()
    app.extensions["finish_watcher"] = FinishWatcher(settings.broker_url, max_waiters=max_waiters())
    app.extensions["event_publisher"] = EventPublisher(settings.broker_url)
    app.extensions["event_hub"] = EventHub(settings.broker_url)
    app.extensions["sweep_mark"] = SweepMark(settings.broker_url)
    register_error_handlers(app)
    tag_request_lines(app)
    register_metrics(app)
    tokens = TokenRegistry(settings.api_tokens, settings.tokens_file)
    require_token(app, tokens)
    refuse_cross_site(app, tokens.enabled, settings.cors_origins)
    protective_headers(app)
    if tokens.enabled:
        install_sessions(app, settings.data_dir)
    record_audited(app)
    allow_origins(app, settings.cors_origins)
    app.config.update(openapi_security(tokens.enabled))
    app.url_map.converters.update(CONVERTERS)  # before the routes that use them
    api = RunnerApi(app, spec_kwargs={"extra_plugins": [ScopePlugin(tokens.enabled)]})
    api.register_field(UtcDateTime, "string", None)  # documented as a plain string
    from api.resources import (
        cleanup,
        engines,
        health,
        job_routes,
        management,
        memory,
        run_files,
        skill_packages,
        skills,
        system,
        temp_skill_runs,
    )

    for module in (
        health,
        skills,
        skill_packages,
        cleanup,
        job_routes,
        run_files,
        temp_skill_runs,
        engines,
        management,
        system,
        memory,
    ):
        api.register_blueprint(module.blp)
    check_body_types(app, api)  # after the auth hooks: a 401 comes first
    from api.ui import bp as ui_blueprint

    app.register_blueprint(ui_blueprint)  # the web UI: pages only, not in the OpenAPI
    _serve_swagger_assets(app)
    return app


def _serve_swagger_assets(app: Flask) -> None:
    """Serve Swagger UI from the installed bundle, so /docs works with no network."""
    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:  # pragma: no cover - optional
        return

    @app.get("/docs-static/<path:filename>")
    def swagger_static(filename: str):
        return send_from_directory(swagger_ui_path, filename)
