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
        """Report whether the API and its database answer."""
        try:
            with current_app.extensions["db"]() as session:
                session.execute(text("SELECT 1"))
            db = "ok"
        except Exception as exc:  # report, do not crash the probe
            db = f"error: {type(exc).__name__}"
        status = 200 if db == "ok" else 503
        return {"status": "ok" if status == 200 else "degraded", "database": db}, status
