"""Liveness and readiness."""
from __future__ import annotations

from flask import current_app
from flask.views import MethodView
from sqlalchemy import text

from api.blueprint import Blueprint

blp = Blueprint("health", __name__, description="Service health")


@blp.route("/healthz")
class Health(MethodView):
    def get(self):
        """Whether the API, its database and its broker answer: 503 "degraded" when one does
        not (jobs are still accepted while the broker is away: the sweeper sends them later)."""
        try:
            with current_app.extensions["db"]() as session:
                session.execute(text("SELECT 1"))
            db = "ok"
        except Exception as exc:  # report, do not crash the probe
            db = f"error: {type(exc).__name__}"
        broker = current_app.extensions["queue"].ping()
        status = 200 if db == broker == "ok" else 503
        return {"status": "ok" if status == 200 else "degraded", "database": db,
                "broker": broker}, status
