"""OpenAI Responses API (`POST /v1/responses`), as spoken by codex.

A strict `text.format` schema the provider would refuse (fake_llm.strict) is answered 400
`invalid_json_schema`, as OpenAI does, before anything is decoded.

Streams `response.created`, the output items (`response.output_item.added/done`, text deltas)
and ends with `response.completed` carrying usage; without `stream` it returns the response
object. Tool results are `function_call_output` / `custom_tool_call_output` /
`local_shell_call_output` input items.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from fake_llm.schema import format_schema
from fake_llm.script import (
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
from fake_llm.strict import strict_problem
from fake_llm.wire import Reply, content_text, json_reply, openai_error, sse_reply

TOOL_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def read_conversation(body: dict[str, Any]) -> Conversation:
    """Extract offered tools and the tool-result state from a Responses request."""
    tools: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        if tool.get("type") == "function" and tool.get("name"):
            tools[tool["name"]] = tool.get("parameters") or {}
    return Conversation.of_turns(tools, _turns(body), body.get("model", ""), format_schema(body))


def _turns(body: dict[str, Any]) -> Iterator[str | None]:
    items = body.get("input")
    for item in items if isinstance(items, list) else []:
        if item.get("type") in TOOL_OUTPUT_TYPES:
            yield _output_text(item.get("output"))
        elif item.get("role") == "user":
            yield None


def _output_text(output: Any) -> str:
    if isinstance(output, dict):
        return str(output.get("content") or output.get("output") or "")
    return content_text(output)


def output_item(answer: ToolCall | str) -> dict[str, Any]:
    """The single output item of the fake response."""
    if isinstance(answer, ToolCall):
        return {
            "type": "function_call",
            "id": answer.call_id.replace("call_", "fc_", 1),
            "status": "completed",
            "call_id": answer.call_id,
            "name": answer.name,
            "arguments": json.dumps(answer.arguments),
        }
    return {
        "type": "message",
        "id": new_id("msg"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": answer, "annotations": []}],
    }


def schema_refusal(body: dict[str, Any]) -> Reply | None:
    """OpenAI's 400 for a strict response format it cannot enforce; None when there is none."""
    text_format = (body.get("text") or {}).get("format") or {}
    if text_format.get("type") != "json_schema" or not text_format.get("strict"):
        return None
    problem = strict_problem(text_format.get("schema"))
    if problem is None:
        return None
    name = text_format.get("name", "response")
    message = f"Invalid schema for response_format '{name}': {problem}"
    error = {"message": message, "type": "invalid_request_error", "param": "text.format.schema",
             "code": "invalid_json_schema"}  # fmt: skip
    return json_reply({"error": error}, status=400)


def handle(body: dict[str, Any], script: Script) -> Reply:
    """Answer one Responses request."""
    if script.status != 200:
        return openai_error(script.status, script.error_message)
    refused = schema_refusal(body)
    if refused is not None:
        return refused
    convo = read_conversation(body)
    answer = decide(script, convo)
    item = output_item(answer)
    out_tokens = estimate_tokens(item)
    in_tokens = estimate_tokens(body)
    response = {
        "id": new_id("resp"),
        "object": "response",
        "status": "completed",
        "model": convo.model or script.model,
        "output": [item],
        "usage": {
            "input_tokens": in_tokens,
            "input_tokens_details": {"cached_tokens": cached_of(in_tokens)},
            "output_tokens": out_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_of(out_tokens)},
            "total_tokens": in_tokens + out_tokens,
        },
    }
    usage, held = token_counts(in_tokens, out_tokens), hold_sec(script, answer)
    if not body.get("stream"):
        return replace(json_reply(response), usage=usage, hold_sec=held)
    created = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "response": created}),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress"},
            },
        ),
    ]
    if not isinstance(answer, ToolCall):
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": answer,
                },
            )
        )
    events += [
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        ("response.completed", {"type": "response.completed", "response": response}),
    ]
    return replace(sse_reply(events), usage=usage, hold_sec=held)
