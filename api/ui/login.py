"""The UI's login: paste an API token, get a session cookie (api.auth.session); log out. Only
where tokens are configured; without them the UI is open and these pages send you on."""

from __future__ import annotations

from flask import Blueprint, make_response, redirect, render_template, request, url_for

from api import auth
from api.auth.session import end_session, same_origin, session_principal, start_session
from runner_core.api_tokens import token_hash


def _next_page() -> str:
    """Where to go after the login: a UI page only (never another site)."""
    target = request.values.get("next", "")
    return target if target.startswith("/ui/") and "//" not in target else url_for("ui.skills")


def login():
    registry = auth.registry()
    if not registry.enabled:
        return redirect(url_for("ui.skills"))
    if request.method == "GET":
        # a link from another site arrives without the Strict cookie; the redirect here has it
        if session_principal(registry) is not None:
            return redirect(_next_page())
        return render_template("login.html", next=_next_page(), error=None, nav="login")
    if not same_origin():
        return render_template("login.html", next=_next_page(), error="cross-site login"), 403
    token = request.form.get("token", "").strip()
    principal = registry.find(token) if token else None
    if principal is None:
        error = "That token is not valid." if token else "Paste a token."
        return render_template("login.html", next=_next_page(), error=error, nav="login"), 401
    response = make_response(redirect(_next_page()))
    start_session(response, token_hash(token))
    return response


def logout():
    response = make_response(redirect(url_for("ui.login")))
    if same_origin():
        end_session(response)
    return response


def signed_in():
    """The token name the pages show (None: no tokens configured)."""
    return {"signed_in": auth.caller()}


def add_login_routes(bp: Blueprint) -> None:
    """GET/POST /ui/login, POST /ui/logout, and who is signed in for every page."""
    bp.add_url_rule("/login", view_func=login, methods=["GET", "POST"])
    bp.add_url_rule("/logout", view_func=logout, methods=["POST"])
    bp.context_processor(signed_in)
