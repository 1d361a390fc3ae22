"""Optional bearer token: with SKILL_RUNNER_API_TOKEN set, every request but the
health check and the API docs must carry `Authorization: Bearer <token>`.

Several tokens (comma-separated) are all accepted, so a token can be rotated without downtime.
Tokens are compared in constant time and never logged.
"""

from __future__ import annotations

import hmac

from flask import Flask, request

from api.errors import error_response
from runner_core.error_codes import ErrorCode

# the health check (load balancers, `skill-runner serve`) and the API's own description
PUBLIC_PATHS = ("/healthz", "/openapi.json", "/docs")
PUBLIC_PREFIXES = ("/docs/", "/docs-static/")
SCHEME = "bearerAuth"


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def presented_token(header: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None for any other form."""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def token_matches(token: str, tokens: tuple[str, ...]) -> bool:
    """Constant-time comparison against every accepted token (no early exit on a match)."""
    given = token.encode("utf-8")
    found = False
    for accepted in tokens:
        found |= hmac.compare_digest(given, accepted.encode("utf-8"))
    return found


def require_token(app: Flask, tokens: tuple[str, ...]) -> None:
    """Refuse requests without an accepted token (nothing to do when `tokens` is empty)."""
    if not tokens:
        return

    @app.before_request
    def _check_token():
        if request.method == "OPTIONS" or is_public(request.path):
            return None
        token = presented_token(request.headers.get("Authorization", ""))
        if token is not None and token_matches(token, tokens):
            return None
        message = (
            "this server needs an API token: send 'Authorization: Bearer <token>'"
            if token is None
            else "the API token is not valid"
        )
        response, status = error_response(401, ErrorCode.UNAUTHORIZED, message)
        response.headers["WWW-Authenticate"] = 'Bearer realm="skill-runner"'
        return response, status


def openapi_security(tokens: tuple[str, ...]) -> dict:
    """The Flask config that makes the OpenAPI document (and Swagger UI's Authorize button)
    describe the token; empty when no token is set."""
    if not tokens:
        return {}
    return {
        "API_SPEC_OPTIONS": {
            "components": {"securitySchemes": {SCHEME: {"type": "http", "scheme": "bearer"}}},
            "security": [{SCHEME: []}],
        }
    }
