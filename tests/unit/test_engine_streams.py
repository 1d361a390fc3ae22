"""Parsing helpers the adapters share: HTTP status from error text and the
Claude-style stream-json reader used by claude and qwen."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner_core.engines.claude_stream import read_stream
from runner_core.engines.failures import http_status
from runner_core.engines.streams import json_lines

TRANSCRIPTS = Path(__file__).parents[1] / "engines" / "transcripts"


@pytest.mark.parametrize(("text", "status"), [
    ("unexpected status 401 Unauthorized: fake 401, url: http://127.0.0.1:39749/v1/responses", 401),
    ("exceeded retry limit, last status: 429 Too Many Requests", 429),
    ('[API Error: {"error":{"code":400,"message":"bad request fake"}}]', 400),
    ("API Error: 503 upstream", 503),
    ("Request failed with status code 404", 404),
    ("port 4000 refused, then 502", 502),
    ("status 500 after a 404", 500),
    ("connection reset", None),
])
def test_http_status_prefers_the_number_named_as_status(text: str, status: int | None) -> None:
    assert http_status(text) == status


def _events(*names: str) -> list[dict]:
    return json_lines("".join((TRANSCRIPTS / f"{name}.stdout").read_text() for name in names))


def test_read_stream_collects_answer_tool_calls_and_result() -> None:
    stream = read_stream(_events("claude_tool_json"), lambda block: {"done": True})
    assert stream.result is not None and stream.text == stream.result["result"]
    assert stream.session_id == stream.init["session_id"]
    assert [(c["name"], c["done"]) for c in stream.tool_calls] == [("Bash", True)]
    assert stream.usage["input_tokens"] > 0


def test_read_stream_reads_only_the_last_invocation_of_an_appended_log() -> None:
    failed, ok = _events("qwen_http400"), _events("qwen_tool_json")
    stream = read_stream(failed + ok, lambda block: {})
    assert stream.events == ok
    assert json.loads(stream.text)["ok"] is True
    assert read_stream(ok + failed, lambda block: {}).tool_calls == []
