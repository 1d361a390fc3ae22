"""Liveness and readiness."""

from __future__ import annotations

import shutil

from flask import current_app
from flask.views import MethodView
from sqlalchemy import text

from api import context
from api.blueprint import Blueprint
from api.schemas import Health as HealthBody
from runner_core.sandbox import sandbox_status
from runner_core.store.schema_revision import schema_state

blp = Blueprint("health", __name__, description="Service health")


@blp.route("/healthz")
class Health(MethodView):
    @blp.alt_response(200, schema=HealthBody, success=True)
    @blp.alt_response(503, schema=HealthBody)
    @blp.doc(security=[])  # public even when the API asks for a token (load balancers)
    def get(self):
        """Whether the API, its database and its broker answer, the database is migrated to
        this code's schema and the data directory's disk has room: 503 "degraded" when not (jobs are still accepted while the broker is away:
        the sweeper sends them later); `demo_llm` is true under `serve --demo-llm`; `sandbox`
        says what boxes runs on this host (`box`: "bwrap" or null when runs get limits only;
        `network`: "provider" when engine CLIs reach their provider only, else "open")."""
        try:
            with context.db_session() as session:
                session.execute(text("SELECT 1"))
                db = schema_state(session)  # a database behind the code fails its queries
        except Exception as exc:  # report, do not crash the probe
            db = f"error: {type(exc).__name__}"
        broker = context.queue().ping()
        settings = context.settings()
        disk = disk_state(settings)
        status = 200 if db == broker == disk == "ok" else 503
        return {
            "status": "ok" if status == 200 else "degraded",
            "database": db,
            "broker": broker,
            "disk": disk,
            "demo_llm": bool(settings.demo_llm),  # engine CLIs talk to the scripted fake LLM
            "sandbox": sandbox_status(
                settings.sandbox, settings.sandbox_bwrap, settings.engine_network
            ),
            # reported, not judged: an API is often up before its workers
            "last_sweep_sec_ago": _rounded(current_app.extensions["sweep_mark"].seconds_since()),
        }, status


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def disk_state(settings) -> str:
    """ "ok", or "low: <N> MiB free" when the disk under the data directory has less than
    SKILL_RUNNER_MIN_FREE_BYTES left (runs and uploads would soon fail with STORAGE_FULL)."""
    try:
        free = shutil.disk_usage(settings.data_dir).free
    except OSError as exc:
        return f"error: {type(exc).__name__}"
    if free < settings.min_free_bytes:
        return f"low: {free // 2**20} MiB free"
    return "ok"
