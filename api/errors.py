"""One error body for every error: {"error": {code, message, details, request_id}}."""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any

from flask import Flask, g, jsonify, request
from sqlalchemy.exc import OperationalError
from werkzeug.exceptions import HTTPException

from runner_core.error_codes import ErrorCode
from runner_core.secret_values import redact
from runner_core.workspace import disk_full

log = logging.getLogger(__name__)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

# The code of an HTTP error werkzeug or flask-smorest raises; werkzeug names any other status.
HTTP_CODES = {
    400: ErrorCode.INVALID_REQUEST,
    401: ErrorCode.UNAUTHORIZED,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    413: ErrorCode.PAYLOAD_TOO_LARGE,
    415: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    416: ErrorCode.REQUESTED_RANGE_NOT_SATISFIABLE,
    422: ErrorCode.REQUEST_VALIDATION_FAILED,
    500: ErrorCode.INTERNAL_ERROR,
    507: ErrorCode.STORAGE_FULL,
}


class ApiError(Exception):
    """Raised by views: becomes the API's error body with this status and code."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.details = details or {}
        self.request_id = request_id
        self.retry_after = retry_after  # seconds, sent as Retry-After


def error_response(
    status: int, code: str, message: str, details: Any = None, request_id: str | None = None
):
    body = {
        "error": {
            "code": code,
            "message": redact(message),
            "details": details or {},
            "request_id": request_id or g.get("http_request_id"),
        }
    }
    return jsonify(body), status


def http_exception_response(exc: HTTPException):
    """Shape werkzeug/flask-smorest HTTP errors (404, 405, 422...) as the API's error body."""
    status = exc.code or 500
    data = getattr(exc, "data", None) or {}
    details: dict[str, Any] = {}
    if "messages" in data:
        details["fields"] = data["messages"]
    message = (
        data.get("message") or _field_summary(data.get("messages")) or exc.description or exc.name
    )
    response, status = error_response(
        status, HTTP_CODES.get(status, exc.name.upper().replace(" ", "_")), message, details
    )
    # what the status needs said beside the body: Allow (405), Content-Range (416)
    for name, value in [*exc.get_headers(), *dict(data.get("headers") or {}).items()]:
        if name.lower() != "content-type":
            response.headers[name] = value
    return response, status


def _field_summary(messages: Any, limit: int = 3) -> str | None:
    """The first few field errors of a request as one line, e.g.
    "json.skill_id: Missing data for required field." (all of them stay in details)."""
    found: list[str] = []

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, path if key == "_schema" else [*path, str(key)])
        elif isinstance(node, (list, tuple)) and node and all(isinstance(v, str) for v in node):
            found.append(f"{'.'.join(path) or 'body'}: {' '.join(node)}")
        elif isinstance(node, (list, tuple)):
            for value in node:
                walk(value, path)
        elif node is not None:
            found.append(f"{'.'.join(path) or 'body'}: {node}")

    walk(messages, [])
    if not found:
        return None
    more = f" (and {len(found) - limit} more)" if len(found) > limit else ""
    return "; ".join(found[:limit]) + more


def register_error_handlers(app: Flask) -> None:
    """Install the request-id hook and the handlers for ApiError, HTTP errors and crashes."""

    @app.before_request
    def _request_id() -> None:
        given = request.headers.get("X-Request-ID", "")  # echoed and logged: a safe token only
        g.http_request_id = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex

    @app.after_request
    def _echo_request_id(response):
        if g.get("http_request_id"):
            response.headers["X-Request-ID"] = g.http_request_id
        return response

    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError):
        response, status = error_response(
            exc.status, exc.code, exc.message, exc.details, exc.request_id
        )
        if exc.retry_after is not None:
            response.headers["Retry-After"] = str(exc.retry_after)
        return response, status

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception):
        if isinstance(exc, HTTPException):
            return http_exception_response(exc)
        if isinstance(exc, OperationalError):  # down, unreachable or locked: try again later
            log.warning("database unavailable: %s", exc.orig if exc.orig else exc)
            response, status = error_response(
                503,
                ErrorCode.DATABASE_UNAVAILABLE,
                "the database does not answer; retry later",
                {"type": type(exc.orig or exc).__name__},
            )
            response.headers["Retry-After"] = "5"
            return response, status
        if disk_full(exc):  # nothing half-written is kept (the writers clean up after themselves)
            log.error("no space left on the server's disk: %s", exc)
            response, status = error_response(
                507,
                ErrorCode.STORAGE_FULL,
                "the server's disk is full; nothing of this request was kept, retry later",
                {},
            )
            response.headers["Retry-After"] = "60"
            return response, status
        log.exception("unhandled error")
        return error_response(
            500,
            ErrorCode.INTERNAL_ERROR,
            "internal error; see the server log",
            {"type": type(exc).__name__},
        )
