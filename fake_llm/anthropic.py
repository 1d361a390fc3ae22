"""Anthropic Messages API (`POST /v1/messages`, `/v1/messages/count_tokens`), as spoken by
claude.

Streams `message_start`, one content block (`content_block_start/delta/stop`, text or
tool_use with `input_json_delta`), `message_delta` with the stop reason and `message_stop`.
Tool results are `tool_result` blocks inside a user message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from fake_llm.schema import SCHEMA_TOOLS, format_schema, schema_accepted
from fake_llm.script import (
    SCHEMA_CALL,
    SCHEMA_REFUSED,
    Conversation,
    Script,
    ToolCall,
    cached_of,
    decide,
    estimate_tokens,
    hold_sec,
    new_id,
    token_counts,
)
from fake_llm.wire import Reply, content_text, json_reply, sse_reply

# claude's reminder after a text answer under --json-schema: not the user speaking
ENFORCE_NOTE = "[structured-output-enforce]"
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def read_conversation(body: dict[str, Any]) -> Conversation:
    """Extract offered tools and the tool-result state from a Messages request."""
    tools = {
        t["name"]: t.get("input_schema") or {} for t in body.get("tools") or [] if t.get("name")
    }
    return Conversation.of_turns(tools, _turns(body), body.get("model", ""), format_schema(body))


def _turns(body: dict[str, Any]) -> Iterator[str | None]:
    schema_calls: set[str] = set()  # ids of the schema tool's calls
    for msg in body.get("messages") or []:
        if msg.get("role") == "assistant" and isinstance(msg.get("content"), list):
            schema_calls |= {b.get("id") for b in msg["content"] if b.get("name") in SCHEMA_TOOLS}
        if msg.get("role") != "user":
            continue
        blocks = msg.get("content")
        if not isinstance(blocks, list):
            yield None
            continue
        # A resumed claude session merges the old tool result and the new prompt into one
        # user message: walk its blocks in order. System reminders are not user turns.
        for block in blocks:
            if block.get("type") == "tool_result":
                text = content_text(block.get("content"))
                accepted = schema_accepted(text, bool(block.get("is_error")))
                if block.get("tool_use_id") in schema_calls:
                    yield SCHEMA_CALL if accepted else SCHEMA_REFUSED
                else:
                    yield text
            elif block.get("type") == "text" and not block.get("text", "").startswith(
                ("<system-reminder>", ENFORCE_NOTE)
            ):
                yield None


def _block(answer: ToolCall | str) -> dict[str, Any]:
    if isinstance(answer, ToolCall):
        return {
            "type": "tool_use",
            "id": answer.call_id.replace("call_", "toolu_", 1),
            "name": answer.name,
            "input": answer.arguments,
        }
    return {"type": "text", "text": answer}


def handle(path: str, body: dict[str, Any], script: Script) -> Reply:
    """Answer one Messages (or count_tokens) request."""
    if path.endswith("/count_tokens"):
        return json_reply({"input_tokens": estimate_tokens(body)})
    if script.status != 200:
        kind = ERROR_TYPES.get(script.status, "api_error")
        return json_reply(
            {"type": "error", "error": {"type": kind, "message": script.error_message}},
            status=script.status,
        )
    convo = read_conversation(body)
    answer = decide(script, convo)
    block = _block(answer)
    stop = "tool_use" if isinstance(answer, ToolCall) else "end_turn"
    in_tokens = estimate_tokens(body)
    # Anthropic counts cache reads beside input_tokens, not inside them
    usage = {
        "input_tokens": in_tokens - cached_of(in_tokens),
        "output_tokens": estimate_tokens(block),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached_of(in_tokens),
    }
    message = {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": convo.model or script.model,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    counts = token_counts(in_tokens, usage["output_tokens"], reasoning=False)
    held = hold_sec(script, answer)
    if not body.get("stream"):
        return replace(json_reply(message), usage=counts, hold_sec=held)
    if isinstance(answer, ToolCall):
        start_block = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(answer.arguments)}
    else:
        start_block, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": answer}
    started = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**usage, "output_tokens": 1},
    }
    reply = sse_reply(
        [
            ("message_start", {"type": "message_start", "message": started}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": start_block},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )
    return replace(reply, usage=counts, hold_sec=held)
