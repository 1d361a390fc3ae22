"""Logging of the API process: the same set-up as the worker's (runner_core.logs); a line
logged while a request about a job is served carries its request_id."""

from __future__ import annotations

from flask import Flask, g, request

from runner_core.logs import bind_caller, configure_logging, run_context

__all__ = ["configure_logging", "tag_request_lines"]


def tag_request_lines(app: Flask) -> None:
    """Bind the URL's request id (GET /v1/jobs/<request_id>/…) to the request's log lines."""

    @app.before_request
    def _enter() -> None:
        request_id = (request.view_args or {}).get("request_id")
        if request_id:
            g.log_context = run_context(None, request_id)
            g.log_context.__enter__()

    @app.teardown_request
    def _leave(_exc: BaseException | None) -> None:
        bind_caller(None)  # the thread's next lines are not this request's
        context = g.pop("log_context", None)
        if context is not None:
            context.__exit__(None, None, None)
