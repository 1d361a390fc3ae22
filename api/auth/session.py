"""The web UI's session: a pasted token becomes an HttpOnly, SameSite=Strict cookie holding
the token's hash, signed with a key kept in the data directory. Each request looks the hash up
again, so a token removed from the tokens file ends its sessions too."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask, Response, current_app, request
from itsdangerous import BadSignature, URLSafeTimedSerializer

from runner_core.api_tokens import Principal, TokenRegistry

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


def start_session(response: Response, digest: str) -> None:
    """Set the session cookie of the token whose hash is `digest`."""
    response.set_cookie(
        COOKIE,
        _serializer().dumps({"h": digest}),
        max_age=MAX_AGE_SEC,
        httponly=True,
        samesite="Strict",
        secure=request.is_secure,
        path="/",
    )


def end_session(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="Strict")


def session_principal(registry: TokenRegistry) -> Principal | None:
    """The principal of this request's session cookie; None without a valid, live one."""
    raw = request.cookies.get(COOKIE)
    if not raw or "ui_sessions" not in current_app.extensions:
        return None
    try:
        digest = _serializer().loads(raw, max_age=MAX_AGE_SEC).get("h", "")
    except (BadSignature, AttributeError):
        return None
    return registry.find_hash(digest) if isinstance(digest, str) else None


def same_origin() -> bool:
    """Whether an unsafe request comes from this site's own pages (Origin, else Referer):
    with cookie authentication the browser would send the cookie for a forged form too."""
    source = request.headers.get("Origin") or request.headers.get("Referer") or ""
    return bool(source) and urlsplit(source).netloc == request.host
