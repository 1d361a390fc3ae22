"""Flask config built from the shared service settings."""

from __future__ import annotations

from typing import Any

from runner_core.settings import Settings, load_settings


def build_config(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Flask config dict; `overrides` (tests) may set SETTINGS or any Flask key."""
    overrides = dict(overrides or {})
    settings: Settings = overrides.pop("SETTINGS", None) or load_settings()
    config = {
        "SETTINGS": settings,
        "API_TITLE": "Agent Skill Runner",
        "API_VERSION": "v1",
        "OPENAPI_VERSION": "3.0.3",
        "OPENAPI_URL_PREFIX": "/",
        "OPENAPI_JSON_PATH": "openapi.json",
        "OPENAPI_SWAGGER_UI_PATH": "/docs",
        "OPENAPI_SWAGGER_UI_URL": "/docs-static/",
        # JSON bodies and forms; the zip endpoints raise it for their own request
        "MAX_CONTENT_LENGTH": settings.max_request_bytes,
        "JSON_SORT_KEYS": False,
    }
    config.update(overrides)
    return config
