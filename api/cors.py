"""Browser clients on other origins (SKILL_RUNNER_CORS_ORIGINS), through flask-cors."""

from __future__ import annotations

from flask import Flask


def allow_origins(app: Flask, origins: tuple[str, ...]) -> None:
    """CORS for browser clients on other origins (SKILL_RUNNER_CORS_ORIGINS); none by default.
    Preflights need no token; errors carry the headers too, so a page can read why."""
    if not origins:
        return
    from flask_cors import CORS

    CORS(
        app,
        origins="*" if "*" in origins else list(origins),
        max_age=600,
        allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
        expose_headers=["X-Request-ID", "Retry-After", "Content-Disposition"],
    )
