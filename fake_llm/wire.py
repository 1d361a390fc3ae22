"""What the protocol modules share of the wire: HTTP reply values, the SSE / JSON encodings,
the text of a request's content value and the OpenAI error body."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Reply:
    """A complete HTTP reply; streams are sent whole (SSE with a Content-Length). `usage`: the
    token counts the reply reports ({input_tokens, output_tokens}); `hold_sec`: how long the
    server waits before it sends the reply."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] | None = None
    hold_sec: float = 0.0


def json_reply(payload: Any, status: int = 200) -> Reply:
    """A JSON reply."""
    return Reply(status=status, body=json.dumps(payload).encode("utf-8"))


def sse_reply(events: list[tuple[str | None, Any]], done_marker: bool = False) -> Reply:
    """An SSE stream: each event is (event name or None, JSON data)."""
    chunks: list[str] = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        chunks.append(f"{head}data: {json.dumps(data)}\n\n")
    if done_marker:
        chunks.append("data: [DONE]\n\n")
    return Reply(
        status=200,
        body="".join(chunks).encode("utf-8"),
        content_type="text/event-stream",
        headers={"Cache-Control": "no-cache"},
    )


def content_text(content: Any) -> str:
    """The text of a message's content: the string itself, or its text parts joined."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


# OpenAI's error type and code by HTTP status (others: invalid_request_error, no code)
_OPENAI_ERRORS = {
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


def openai_error(status: int, message: str) -> Reply:
    """The error reply of both OpenAI APIs (Responses, Chat Completions), shaped as OpenAI's:
    the HTTP status is not in the body, whose `code` is a name or null."""
    kind, code = _OPENAI_ERRORS.get(status, ("invalid_request_error", None))
    error = {"message": message, "type": kind, "param": None, "code": code}
    return json_reply({"error": error}, status=status)
