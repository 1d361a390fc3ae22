"""Which scope each route asks for: reading is `read`, changing is `submit`, and the routes
that act on the whole service (installs, metrics, the audit log) are `admin`. The OpenAPI
document states each operation's scope from the same table (ScopePlugin)."""

from __future__ import annotations

from typing import Any

from apispec import BasePlugin

from runner_core.api_tokens import ADMIN, READ, SUBMIT

SCHEME = "bearerAuth"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# asked `admin` whatever the method: every route of these blueprints (installing skills)...
ADMIN_BLUEPRINTS = frozenset({"skill_packages"})
# ...and these endpoints (blueprint.View, or a plain view's name)
ADMIN_ENDPOINTS = frozenset({"management.Audit", "metrics"})
# ...and these (endpoint, method) pairs
ADMIN_OPERATIONS = frozenset({("skills.Skill", "DELETE"), ("engines.Upgrade", "POST")})
# (endpoint, method) pairs that only read although not a safe method (the handshake's POST)
READ_OPERATIONS = frozenset({("system.Handshake", "POST")})
# endpoints that need no token (the UI's login page and assets; the docs go by path)
PUBLIC_ENDPOINTS = frozenset({"ui.login", "ui.logout", "ui.static", "health.Health"})


def required_scope(endpoint: str | None, method: str) -> str | None:
    """The scope a request to `endpoint` with `method` needs; None: any accepted token (a
    path that matches no route answers 404 to a caller with a valid token)."""
    if endpoint is None:
        return None
    if endpoint in ADMIN_ENDPOINTS or endpoint.partition(".")[0] in ADMIN_BLUEPRINTS:
        return ADMIN
    if (endpoint, method.upper()) in ADMIN_OPERATIONS:
        return ADMIN
    if (endpoint, method.upper()) in READ_OPERATIONS:
        return READ
    return READ if method.upper() in SAFE_METHODS else SUBMIT


class ScopePlugin(BasePlugin):
    """Adds `x-required-scope` to every operation (OpenAPI 3.0 lets a bearer scheme's
    requirement carry no scopes); an open one gets an empty security requirement when tokens
    are configured."""

    def __init__(self, with_security: bool) -> None:
        self.with_security = with_security

    def operation_helper(self, path=None, operations=None, **kwargs: Any) -> None:
        rule = kwargs.get("rule")
        if rule is None or operations is None:
            return
        for method, operation in operations.items():
            if rule.endpoint in PUBLIC_ENDPOINTS:
                if self.with_security:
                    operation["security"] = []
                continue
            operation["x-required-scope"] = required_scope(rule.endpoint, method)
