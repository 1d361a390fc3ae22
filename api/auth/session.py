"""The web UI's session: a pasted token becomes an HttpOnly, SameSite=Strict cookie holding
the token's hash and a random session id, signed with a key kept in the data directory. Each
request looks the hash up again, so a token removed from the tokens file ends its sessions too;
a logout records the session id as ended in the database (runner_core.store.ui_sessions), so a
copy of the cookie is refused by every API process, restarted ones included."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask, Response, current_app, request
from itsdangerous import BadSignature, URLSafeTimedSerializer

from api import context
from runner_core.api_tokens import Principal, TokenRegistry
from runner_core.store import ui_sessions

COOKIE = "skill_runner_session"
MAX_AGE_SEC = 12 * 3600


def session_key(data_dir: Path) -> bytes:
    """The signing key shared by every API process: made once (hard-linked into place, so
    of two processes starting together one wins and both read the same key)."""
    path = data_dir / "ui-session.key"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        draft = data_dir / f".ui-session.key.{os.getpid()}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip().encode()


def install_sessions(app: Flask, data_dir: Path) -> None:
    app.extensions["ui_sessions"] = URLSafeTimedSerializer(
        session_key(data_dir), salt="skill-runner-ui"
    )


def _serializer() -> URLSafeTimedSerializer:
    return current_app.extensions["ui_sessions"]


@dataclass(frozen=True)
class CookieSession:
    """What a valid session cookie holds: the token's hash, the session's id, and when the
    cookie expires."""

    digest: str
    sid: str
    expires_at: datetime


def start_session(response: Response, digest: str) -> None:
    """Set the session cookie of the token whose hash is `digest`, with a new session id."""
    response.set_cookie(
        COOKIE,
        _serializer().dumps({"h": digest, "sid": secrets.token_urlsafe(16)}),
        max_age=MAX_AGE_SEC,
        httponly=True,
        samesite="Strict",
        secure=request.is_secure,
        path="/",
    )


def end_session(response: Response) -> None:
    """End this request's session for every API process and delete its cookie; a missing or
    invalid cookie is only deleted."""
    session = cookie_session()
    if session is not None:
        with context.connect() as conn:
            ui_sessions.end(conn, session.sid, session.expires_at)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="Strict")


def cookie_session() -> CookieSession | None:
    """This request's session cookie, if it is signed by us, not expired and has a session id
    (the cookies made before sessions had ids count as ended: their holders log in again)."""
    raw = request.cookies.get(COOKIE)
    if not raw or "ui_sessions" not in current_app.extensions:
        return None
    try:
        payload, signed_at = _serializer().loads(raw, max_age=MAX_AGE_SEC, return_timestamp=True)
    except BadSignature:
        return None
    if not isinstance(payload, dict):
        return None
    digest, sid = payload.get("h"), payload.get("sid")
    if not isinstance(digest, str) or not isinstance(sid, str) or not 0 < len(sid) <= 64:
        return None
    return CookieSession(digest, sid, signed_at + timedelta(seconds=MAX_AGE_SEC))


def session_principal(registry: TokenRegistry) -> Principal | None:
    """The principal of this request's session cookie; None without a valid, live one (its
    token still configured, its session not ended by a logout)."""
    session = cookie_session()
    if session is None:
        return None
    principal = registry.find_hash(session.digest)
    if principal is None:
        return None
    with context.connect() as conn:
        return None if ui_sessions.has_ended(conn, session.sid) else principal


def same_origin() -> bool:
    """Whether an unsafe request comes from this site's own pages (Origin, else Referer):
    with cookie authentication the browser would send the cookie for a forged form too."""
    source = request.headers.get("Origin") or request.headers.get("Referer") or ""
    return bool(source) and urlsplit(source).netloc == request.host
