"""OpenAI Chat Completions (`POST /v1/chat/completions`), as spoken by opencode, kilo and qwen.

Streaming ends with a `finish_reason` chunk, a usage chunk (`choices: []`) and
`data: [DONE]`; without `stream` it returns one `chat.completion` object. Tool results are
messages with `role: "tool"`.
"""

from __future__ import annotations

import json
import time
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
    reasoning_of,
    token_counts,
)
from fake_llm.wire import Reply, content_text, json_reply, openai_error, sse_reply


def read_conversation(body: dict[str, Any]) -> Conversation:
    """Extract offered tools and the tool-result state from a Chat Completions request."""
    tools: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        fn = tool.get("function") or {}
        if fn.get("name"):
            tools[fn["name"]] = fn.get("parameters") or {}
    return Conversation.of_turns(tools, _turns(body), body.get("model", ""), format_schema(body))


def _turns(body: dict[str, Any]) -> Iterator[str | None]:
    schema_calls: set[str] = set()  # ids of the schema tool's calls
    for msg in body.get("messages") or []:
        for call in msg.get("tool_calls") or []:
            if (call.get("function") or {}).get("name") in SCHEMA_TOOLS:
                schema_calls.add(call.get("id"))
        if msg.get("role") == "tool":
            text = content_text(msg.get("content"))
            if msg.get("tool_call_id") in schema_calls:
                yield SCHEMA_CALL if schema_accepted(text, False) else SCHEMA_REFUSED
            else:
                yield text
        elif msg.get("role") == "user":
            yield None


def _message(answer: ToolCall | str) -> dict[str, Any]:
    if isinstance(answer, ToolCall):
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": answer.call_id,
                    "type": "function",
                    "function": {"name": answer.name, "arguments": json.dumps(answer.arguments)},
                }
            ],
        }
    return {"role": "assistant", "content": answer}


def handle(body: dict[str, Any], script: Script) -> Reply:
    """Answer one Chat Completions request."""
    if script.status != 200:
        return openai_error(script.status, script.error_message)
    convo = read_conversation(body)
    answer = decide(script, convo)
    message = _message(answer)
    finish = "tool_calls" if isinstance(answer, ToolCall) else "stop"
    prompt_tokens, completion_tokens = estimate_tokens(body), estimate_tokens(message)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_of(prompt_tokens)},
        "completion_tokens_details": {"reasoning_tokens": reasoning_of(completion_tokens)},
    }
    base = {
        "id": new_id("chatcmpl"),
        "created": int(time.time()),
        "model": convo.model or script.model,
    }
    counts = token_counts(prompt_tokens, completion_tokens)
    held = hold_sec(script, answer)
    if not body.get("stream"):
        reply = json_reply(
            {
                **base,
                "object": "chat.completion",
                "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            }
        )
        return replace(reply, usage=counts, hold_sec=held)
    chunk = {**base, "object": "chat.completion.chunk"}
    delta: dict[str, Any] = {"role": "assistant"}
    if isinstance(answer, ToolCall):
        delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
    else:
        delta["content"] = answer
    events: list[tuple[str | None, Any]] = [
        (None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        (None, {**chunk, "choices": [], "usage": usage}),
    ]
    return replace(sse_reply(events, done_marker=True), usage=counts, hold_sec=held)
