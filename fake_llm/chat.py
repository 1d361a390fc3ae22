"""OpenAI Chat Completions (`POST /v1/chat/completions`), as spoken by opencode and qwen.

Streaming ends with a `finish_reason` chunk, a usage chunk (`choices: []`) and
`data: [DONE]`; without `stream` it returns one `chat.completion` object. Tool results are
messages with `role: "tool"`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from fake_llm.script import Conversation, Script, ToolCall, decide, estimate_tokens, new_id
from fake_llm.wire import Reply, json_reply, sse_reply


def read_conversation(body: dict[str, Any]) -> Conversation:
    """Extract offered tools and the tool-result state from a Chat Completions request."""
    tools: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        fn = tool.get("function") or {}
        if fn.get("name"):
            tools[fn["name"]] = fn.get("parameters") or {}
    pending, last_output = False, ""
    for msg in body.get("messages") or []:
        if msg.get("role") == "tool":
            pending, last_output = True, _content_text(msg.get("content"))
        elif msg.get("role") == "user":
            pending = False
    return Conversation(
        tools=tools,
        tool_result_pending=pending,
        last_tool_output=last_output,
        model=body.get("model", ""),
    )


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


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
        return json_reply(
            {
                "error": {
                    "message": script.error_message,
                    "type": "invalid_request_error",
                    "code": str(script.status),
                }
            },
            status=script.status,
        )
    convo = read_conversation(body)
    answer = decide(script, convo)
    message = _message(answer)
    finish = "tool_calls" if isinstance(answer, ToolCall) else "stop"
    prompt_tokens, completion_tokens = estimate_tokens(body), estimate_tokens(message)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    base = {
        "id": new_id("chatcmpl"),
        "created": int(time.time()),
        "model": convo.model or script.model,
    }
    if not body.get("stream"):
        return json_reply(
            {
                **base,
                "object": "chat.completion",
                "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            }
        )
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
    return sse_reply(events, done_marker=True)
