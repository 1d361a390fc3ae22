"""The media type of a request body. A route takes the types its OpenAPI requestBody lists; a
body of another type is 415 UNSUPPORTED_MEDIA_TYPE, instead of a 422 for fields the route
never read from it or a 400 for a zip it did not find. A request without a body, and a route
that documents none, are not checked."""

from __future__ import annotations

from typing import Any

from flask import Flask, request
from flask_smorest import Api
from flask_smorest.spec.plugins import FlaskPlugin

from api.errors import ApiError
from runner_core.error_codes import ErrorCode

JSON = "application/json"
ZIP = "application/zip"
RAW_ZIP = "application/octet-stream"  # a raw zip body as api/zip_bodies.py reads it


def takes(documented: list[str], mimetype: str) -> bool:
    """Whether a body of `mimetype` is one of the `documented` types: application/json also
    takes the `+json` types, application/zip an octet stream."""
    if mimetype in documented:
        return True
    if JSON in documented and mimetype.startswith("application/") and mimetype.endswith("+json"):
        return True
    return ZIP in documented and mimetype == RAW_ZIP


def body_types(spec: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    """(OpenAPI path, method) -> the media types its requestBody lists."""
    return {
        (path, method): list(op["requestBody"].get("content", {}))
        for path, ops in spec.get("paths", {}).items()
        for method, op in ops.items()
        if isinstance(op, dict) and "requestBody" in op
    }


def has_body() -> bool:
    length = request.content_length  # None for a chunked body
    return bool(length) or "chunked" in request.headers.get("Transfer-Encoding", "").lower()


def check_body_types(app: Flask, api: Api) -> None:
    """Refuse (415) a request body of a type its route does not take, once for every route."""
    table: dict[tuple[str, str], list[str]] = {}  # read from the document on first use

    @app.before_request
    def _body_type() -> None:
        rule = request.url_rule
        if rule is None or not has_body():
            return
        if not table:
            table.update(body_types(api.spec.to_dict()))
        documented = table.get((FlaskPlugin.flaskpath2openapi(rule.rule), request.method.lower()))
        if documented is None or takes(documented, request.mimetype):
            return
        sent = request.mimetype or "none"
        raise ApiError(
            415,
            ErrorCode.UNSUPPORTED_MEDIA_TYPE,
            f"this route takes a body of type {' or '.join(documented)}, not {sent} "
            "(the Content-Type header)",
            {"content_type": request.mimetype or None, "accepted": documented},
        )
