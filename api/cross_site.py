"""Requests from pages of other sites. Without tokens (the loopback default) nothing else tells
a page the browser opened from the person using the API, and a page may POST a multipart body
(a skill package) to any address without a CORS preflight: a state-changing request whose
`Origin` names another site is refused, unless SKILL_RUNNER_CORS_ORIGINS lets that origin in.
Clients that are no browser send no `Origin` and are not concerned; with tokens, a page
cannot present one it does not hold (and the UI's cookie is checked in api.auth).

A page can also make its own name resolve to 127.0.0.1 once loaded (DNS rebinding): the
browser then sees its calls as same-origin, reads every answer, and the `Host` they carry is
the page's name. So without tokens a browser's request (`Origin` or `Sec-Fetch-Site`) must
name the service by an address, `localhost` or this machine's own name."""

from __future__ import annotations

import ipaddress
import logging
import socket
from urllib.parse import urlsplit

from flask import Flask, request

from api.auth.scopes import SAFE_METHODS
from api.errors import error_response
from runner_core.error_codes import ErrorCode

log = logging.getLogger(__name__)


def refuse_cross_site(app: Flask, tokens_enabled: bool, origins: tuple[str, ...]) -> None:
    if tokens_enabled or "*" in origins:
        return

    own_names = local_names()

    @app.before_request
    def _cross_site():
        browser = "Origin" in request.headers or "Sec-Fetch-Site" in request.headers
        if browser and not local_host(request.host, own_names):
            log.warning("%s %s refused: Host %s", request.method, request.path, request.host)
            return error_response(
                403,
                ErrorCode.FORBIDDEN,
                f"without tokens a browser may reach this service by an address, 'localhost' or "
                f"this machine's name only, not '{request.host}' (a name that may point "
                "anywhere); configure tokens to serve it under a name",
                {"reason": "host_not_local"},
            )
        origin = request.headers.get("Origin")
        if request.method in SAFE_METHODS or origin is None or origin in origins:
            return None
        if urlsplit(origin).netloc == request.host:
            return None
        if origin == "null" or urlsplit(origin).scheme not in ("http", "https"):
            # what a browser's privileged code sends (Firefox's extensions and the Zotero
            # plugin: `null`; other extensions their own scheme): refusing it would refuse the
            # clients this loopback default serves. A sandboxed page can send `null` too:
            # tokens close that (docs/operating.md, Security)
            return None
        log.warning("%s %s refused: cross-site (Origin %s)", request.method, request.path, origin)
        return error_response(
            403,
            ErrorCode.FORBIDDEN,
            "a page of another site may not change anything here: without tokens only this "
            "site's own pages, clients that are no browser and SKILL_RUNNER_CORS_ORIGINS may",
            {"reason": "cross_origin"},
        )


def local_names() -> frozenset[str]:
    names = {"localhost", socket.gethostname().lower()}
    try:
        names.add(socket.getfqdn().lower())
    except OSError:  # pragma: no cover - a resolver that fails
        pass
    return frozenset(names)


def local_host(host: str, own_names: frozenset[str]) -> bool:
    """Whether a `Host` header names an address, localhost or this machine (no name a page's
    owner could point here)."""
    name = (urlsplit(f"//{host}").hostname or "").rstrip(".").lower()
    if name in own_names or name.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def protective_headers(app: Flask) -> None:
    """Every answer: no type sniffing (an artifact served as text is not run as a page), and
    no framing by another site's page (a click on a framed UI button is not the user's)."""

    @app.after_request
    def _headers(response):
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "SAMEORIGIN")
        response.headers.setdefault("Content-Security-Policy", "frame-ancestors 'self'")
        return response
