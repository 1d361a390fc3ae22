"""Who may call the API: with tokens configured (SKILL_RUNNER_API_TOKEN and/or
SKILL_RUNNER_TOKENS_FILE, see runner_core.api_tokens), every request but the health check, the
API docs and the UI's login page carries `Authorization: Bearer <token>` or the UI's session
cookie. The token's scopes decide what it may do (api.auth.scopes); its name owns the runs it
creates, and a token that is not admin sees only its own runs. Without tokens nothing is asked.

Tokens are looked up by their SHA-256 hash and never logged.
"""

from __future__ import annotations

import base64
import binascii
import logging
from urllib.parse import quote

from flask import Flask, current_app, g, has_request_context, redirect, request

from api.auth.scopes import SAFE_METHODS, SCHEME, required_scope
from api.auth.session import same_origin, session_principal
from api.errors import error_response
from runner_core.api_tokens import Principal, TokenRegistry
from runner_core.error_codes import ErrorCode
from runner_core.logs import bind_caller

log = logging.getLogger(__name__)

# the health check (load balancers, `skill-runner serve`), the API's own description, and
# what the UI's login page needs
PUBLIC_PATHS = ("/healthz", "/openapi.json", "/docs", "/ui/login", "/ui/logout")
PUBLIC_PREFIXES = ("/docs/", "/docs-static/", "/ui/static/")


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def presented_token(header: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or of `Basic` credentials whose
    password is the token (any user name: the Zotero plugin's management client sends Basic);
    None for any other form."""
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() == "basic" and token:
        try:
            decoded = base64.b64decode(token, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        _user, colon, password = decoded.partition(":")
        return password if colon and password else None
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def caller() -> Principal | None:
    """The principal of this request; None when the API asks for no token (or outside one)."""
    return g.get("principal") if has_request_context() else None


def owner() -> str | None:
    """The owner to stamp on what this request creates: the token's name (None: no tokens)."""
    principal = caller()
    return principal.name if principal else None


def owner_filter() -> str | None:
    """The owner a listing is limited to: None (everything) for admin tokens and without
    tokens, else the caller's own name."""
    principal = caller()
    return None if principal is None or principal.is_admin else principal.name


def may_see(run_owner: str | None) -> bool:
    """Whether the caller may see a run (or request) owned by `run_owner`."""
    limit = owner_filter()
    return limit is None or run_owner == limit


def registry() -> TokenRegistry:
    return current_app.extensions["tokens"]


def still_allowed() -> bool:
    """Whether this request's caller is still signed in: its token still in the tokens file,
    its UI session not logged out. A long response (an event stream) asks again now and then,
    so removing a token or logging out ends it too."""
    tokens = current_app.extensions.get("tokens")
    if tokens is None or not tokens.enabled:
        return True
    header = request.headers.get("Authorization")
    if header is None:
        return session_principal(tokens) is not None
    token = presented_token(header)
    return token is not None and tokens.find(token) is not None


def _refuse(status: int, code: str, message: str, details: dict | None = None):
    # the line names the token (never the token itself), so refusals can be traced
    level = logging.WARNING if status == 403 else logging.INFO
    log.log(level, "%s %s refused (%d): %s", request.method, request.path, status, message)
    response, status = error_response(status, code, message, details)
    if status == 401:
        # Bearer only: a Basic challenge would make browsers pop up their own login dialog
        # over the UI; the Zotero plugin asks for Basic credentials on any 401
        response.headers["WWW-Authenticate"] = 'Bearer realm="skill-runner"'
    return response, status


def require_token(app: Flask, tokens: TokenRegistry) -> None:
    """Authenticate and authorize every request (nothing to do when no token is configured)."""
    app.extensions["tokens"] = tokens
    if not tokens.enabled:
        return

    @app.before_request
    def _check_token():
        bind_caller(None)  # a thread serves many requests: no name carries over
        if request.method == "OPTIONS" or is_public(request.path):
            return None
        header = request.headers.get("Authorization")
        token = presented_token(header) if header is not None else None
        principal = tokens.find(token) if token is not None else None
        by_cookie = header is None
        if by_cookie:  # no Authorization header: the UI's session, if any
            principal = session_principal(tokens)
        if principal is None:
            ui_page = request.path == "/ui" or request.path.startswith("/ui/")
            if header is None and ui_page and request.method == "GET":
                return redirect(f"/ui/login?next={quote(request.full_path.rstrip('?'))}")
            message = (
                "this server needs an API token: send 'Authorization: Bearer <token>' "
                "(or Basic credentials with the token as the password)"
                if token is None
                else "the API token is not valid"
            )
            return _refuse(401, ErrorCode.UNAUTHORIZED, message)
        g.principal = principal
        bind_caller(principal.name)  # the request's log lines name the token
        if by_cookie and request.method not in SAFE_METHODS and not same_origin():
            return _refuse(
                403,
                ErrorCode.FORBIDDEN,
                "a request authenticated by the UI's session must come from the UI's own pages",
                {"reason": "cross_origin"},
            )
        endpoint = request.url_rule.endpoint if request.url_rule else None
        scope = required_scope(endpoint, request.method)
        if scope is not None and not principal.allows(scope):
            return _refuse(
                403,
                ErrorCode.FORBIDDEN,
                f"the token '{principal.name}' lacks the scope '{scope}'",
                {"required_scope": scope, "token_scopes": sorted(principal.scopes)},
            )
        return None


def openapi_security(enabled: bool) -> dict:
    """The Flask config that makes the OpenAPI document (and Swagger UI's Authorize button)
    describe the token; empty when no token is set."""
    if not enabled:
        return {}
    return {
        "API_SPEC_OPTIONS": {
            "components": {"securitySchemes": {SCHEME: {"type": "http", "scheme": "bearer"}}},
            "security": [{SCHEME: []}],
        }
    }
