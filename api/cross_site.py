"""Requests from pages of other sites. Without tokens (the loopback default) nothing else tells
a page the browser opened from the person using the API, and a page may POST a multipart body
(a skill package) to any address without a CORS preflight: a state-changing request whose
`Origin` names another site is refused, unless SKILL_RUNNER_CORS_ORIGINS lets that origin in.
Clients that are no browser send no `Origin` and are not concerned; with tokens, a page
cannot present one it does not hold (and the UI's cookie is checked in api.auth)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from flask import Flask, request

from api.auth.scopes import SAFE_METHODS
from api.errors import error_response
from runner_core.error_codes import ErrorCode

log = logging.getLogger(__name__)


def refuse_cross_site(app: Flask, tokens_enabled: bool, origins: tuple[str, ...]) -> None:
    if tokens_enabled or "*" in origins:
        return

    @app.before_request
    def _cross_site():
        origin = request.headers.get("Origin")
        if request.method in SAFE_METHODS or origin is None or origin in origins:
            return None
        if urlsplit(origin).netloc == request.host:
            return None
        log.warning("%s %s refused: cross-site (Origin %s)", request.method, request.path, origin)
        return error_response(
            403,
            ErrorCode.FORBIDDEN,
            "a page of another site may not change anything here: without tokens only this "
            "site's own pages, clients that are no browser and SKILL_RUNNER_CORS_ORIGINS may",
            {"reason": "cross_origin"},
        )
