"""Gemini API (`/v1beta/models/{m}:streamGenerateContent?alt=sse`, `:generateContent`,
`:countTokens`), as spoken by gemini-cli.

A stream is a single SSE `data:` candidate carrying `finishReason`. Tool results are
`functionResponse` parts. Side requests that ask for JSON (`responseMimeType:
application/json` with a schema, e.g. gemini-cli's next-speaker check) get a minimal object
that satisfies the schema instead of the script's text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from fake_llm.script import (
    Conversation,
    Script,
    ToolCall,
    cached_of,
    decide,
    estimate_tokens,
    hold_sec,
    reasoning_of,
    token_counts,
)
from fake_llm.wire import Reply, json_reply, sse_reply

STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def read_conversation(body: dict[str, Any], model: str) -> Conversation:
    """Extract offered tools and the tool-result state from a Gemini request."""
    tools: dict[str, dict[str, Any]] = {}
    for group in body.get("tools") or []:
        for decl in group.get("functionDeclarations") or []:
            if decl.get("name"):
                tools[decl["name"]] = (
                    decl.get("parametersJsonSchema") or decl.get("parameters") or {}
                )
    return Conversation.of_turns(tools, _turns(body), model)


def _turns(body: dict[str, Any]) -> Iterator[str | None]:
    for content in body.get("contents") or []:
        parts = content.get("parts") or []
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if responses:
            yield _response_text(responses[-1].get("response"))
        elif content.get("role") == "user" and any("text" in p for p in parts):
            yield None


def _response_text(response: Any) -> str:
    if isinstance(response, dict) and isinstance(response.get("output"), str):
        return response["output"]
    return response if isinstance(response, str) else json.dumps(response)


def minimal_instance(schema: dict[str, Any]) -> Any:
    """A small value satisfying a JSON schema (first enum value, required keys filled)."""
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        keys = schema.get("required") or list(props)
        return {k: minimal_instance(props.get(k) or {}) for k in keys}
    return {"array": [], "boolean": False, "integer": 0, "number": 0}.get(kind, "ok")


def _parts(answer: ToolCall | str) -> list[dict[str, Any]]:
    if isinstance(answer, ToolCall):
        return [{"functionCall": {"name": answer.name, "args": answer.arguments}}]
    return [{"text": answer}]


def handle(model: str, method: str, body: dict[str, Any], script: Script) -> Reply:
    """Answer one Gemini model call; `method` is the part after the colon."""
    if method == "countTokens":
        return json_reply({"totalTokens": estimate_tokens(body)})
    if script.status != 200:
        return json_reply(
            {
                "error": {
                    "code": script.status,
                    "message": script.error_message,
                    "status": STATUS_NAMES.get(script.status, "UNKNOWN"),
                }
            },
            status=script.status,
        )
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    side = config.get("responseMimeType") == "application/json" and isinstance(schema, dict)
    if side and isinstance(schema, dict):  # a side request (the next-speaker check): never held
        answer: ToolCall | str = json.dumps(minimal_instance(schema))
    else:
        answer = decide(script, read_conversation(body, model))
    prompt_tokens = estimate_tokens(body)
    out_tokens = estimate_tokens(_parts(answer))
    payload = {
        "candidates": [
            {
                "content": {"role": "model", "parts": _parts(answer)},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        # Gemini counts thoughts beside the candidates, cached content inside the prompt
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "cachedContentTokenCount": cached_of(prompt_tokens),
            "candidatesTokenCount": out_tokens - reasoning_of(out_tokens),
            "thoughtsTokenCount": reasoning_of(out_tokens),
            "totalTokenCount": prompt_tokens + out_tokens,
        },
        "modelVersion": model,
    }
    counts = token_counts(prompt_tokens, out_tokens)
    reply = (
        sse_reply([(None, payload)]) if method == "streamGenerateContent" else json_reply(payload)
    )
    return replace(reply, usage=counts, hold_sec=0.0 if side else hold_sec(script, answer))
