"""Writes the audit log: after each install, cleanup, cancel or reply (answered or refused
past authentication), who did it (token name), what, to which target, and the HTTP status."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, g, request

from api import auth, context
from runner_core.store import audit

log = logging.getLogger(__name__)

# (method, the last part of an endpoint's name) -> the audited action (jobs, one-off runs and
# the management API share their views' names)
_ACTIONS = {
    ("POST", "SkillPackages"): "skill.install",
    ("DELETE", "Skill"): "skill.delete",
    ("POST", "Cleanup"): "runs.cleanup",
    ("POST", "Cancel"): "run.cancel",
    ("POST", "TempCancel"): "run.cancel",
    ("POST", "Reply"): "run.reply",
    ("POST", "TempReply"): "run.reply",
    ("POST", "Upgrade"): "engine.upgrade",
}
_DETAILS = (
    "skill_id",
    "version",
    "status",
    "accepted",
    "runs_deleted",
    "requests_deleted",
    "archive_path",
    "upgrade_id",
)


def audited_action(endpoint: str | None, method: str) -> str | None:
    if endpoint is None:
        return None
    return _ACTIONS.get((method, endpoint.rsplit(".", 1)[-1]))


def _target(action: str, body: dict[str, Any]) -> str | None:
    if action == "skill.install":
        return body.get("skill_id") or body.get("install_id")
    if action == "skill.delete":
        return (request.view_args or {}).get("skill_id")
    if action == "engine.upgrade":
        return (request.view_args or {}).get("engine")
    return (request.view_args or {}).get("request_id")


def record_audited(app: Flask) -> None:
    """Record each audited request once it has an answer (a 401 has no token to name)."""

    @app.after_request
    def _audit(response: Response) -> Response:
        endpoint = request.url_rule.endpoint if request.url_rule else None
        action = audited_action(endpoint, request.method)
        if action is None or response.status_code == 401:
            return response
        body = response.get_json(silent=True) if response.is_json else None
        body = body if isinstance(body, dict) else {}
        details = {k: body[k] for k in _DETAILS if k in body}
        if "error" in body and isinstance(body["error"], dict):
            details["error_code"] = body["error"].get("code")
        try:
            with context.connect() as conn:
                audit.record(
                    conn,
                    token_name=auth.owner(),
                    action=action,
                    target=_target(action, body),
                    status_code=response.status_code,
                    http_request_id=g.get("http_request_id"),
                    details=details,
                )
                conn.commit()
        except Exception:  # the action is done; a lost audit line must not turn it into a 500
            log.exception("audit entry not written: %s", action)
        return response
