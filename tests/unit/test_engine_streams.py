"""Parsing helpers the adapters share: HTTP status from error text, token counts (every
adapter reports them), and the Claude-style stream-json reader used by claude and qwen."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner_core.engines import get_adapter
from runner_core.engines.base import ProcessResult
from runner_core.engines.claude_stream import read_stream
from runner_core.engines.codex import classify_api_error
from runner_core.engines.failures import http_status, provider_error
from runner_core.engines.gemini import result_error as gemini_result_error
from runner_core.engines.streams import UsageKeys, json_lines, token_counts
from tests.helpers import printed

TRANSCRIPTS = Path(__file__).parents[1] / "engines" / "transcripts"


@pytest.mark.parametrize(
    ("text", "status"),
    [
        (
            "unexpected status 401 Unauthorized: fake 401, url: http://127.0.0.1:39749/v1/responses",
            401,
        ),
        ("exceeded retry limit, last status: 429 Too Many Requests", 429),
        ('[API Error: {"error":{"code":400,"message":"bad request fake"}}]', 400),
        ("API Error: 503 upstream", 503),
        ("Request failed with status code 404", 404),
        ("port 4000 refused, then 502", 502),
        ("status 500 after a 404", 500),
        ("connection reset", None),
    ],
)
def test_http_status_prefers_the_number_named_as_status(text: str, status: int | None) -> None:
    assert http_status(text) == status


def test_token_counts_take_the_cli_key_names() -> None:
    assert token_counts(
        {"input": 7, "output": 2, "total": 9}, UsageKeys(("input",), ("output",))
    ) == {
        "input_tokens": 7,
        "output_tokens": 2,
    }
    assert token_counts({"input_tokens": 5}) == {"input_tokens": 5, "output_tokens": 0}
    assert token_counts({"total": 9}) is None
    assert token_counts(None) is None


def test_token_counts_add_up_counts_reported_beside_each_other() -> None:
    keys = UsageKeys(
        input=("input", "cache_read"),
        output=("output", "reasoning"),
        cached="cache_read",
        reasoning="reasoning",
        cost="cost",
    )
    usage = {"input": 70, "cache_read": 30, "output": 8, "reasoning": 2, "cost": 0.0012345678}
    assert token_counts(usage, keys) == {
        "input_tokens": 100,
        "output_tokens": 10,
        "cached_input_tokens": 30,
        "reasoning_tokens": 2,
        "cost_usd": 0.001235,
    }
    # a count the CLI left out is not made up
    assert "reasoning_tokens" not in token_counts({"input": 1, "output": 1}, keys)


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


@pytest.mark.parametrize(
    "engine", ["claude", "codex", "gemini", "iflow", "kilo", "opencode", "qwen"]
)
def test_every_adapter_reports_the_token_counts_of_a_recorded_run(engine: str) -> None:
    name = f"{engine}_tool_json"
    result = ProcessResult(
        0, TRANSCRIPTS / f"{name}.stdout", TRANSCRIPTS / f"{name}.stderr", 0.0, 1.0
    )
    out = get_adapter(engine).parse_output(result)
    assert out.tokens is not None and set(out.tokens) == REPORTED[engine]
    assert out.tokens["input_tokens"] > 0 and out.tokens["output_tokens"] > 0


BOTH = {"input_tokens", "output_tokens"}
# what each CLI reports beside input and output (docs/engine-matrix.md, "usage fields")
REPORTED = {
    "claude": BOTH | {"cached_input_tokens", "cost_usd"},
    "codex": BOTH | {"cached_input_tokens", "reasoning_tokens"},
    "gemini": BOTH | {"cached_input_tokens", "reasoning_tokens"},
    "iflow": BOTH,
    "opencode": BOTH | {"cached_input_tokens", "reasoning_tokens", "cost_usd"},
    "kilo": BOTH | {"cached_input_tokens", "reasoning_tokens", "cost_usd"},
    "qwen": BOTH | {"cached_input_tokens"},
}


def test_iflow_token_counts_come_from_its_execution_info() -> None:
    result = ProcessResult(
        0, TRANSCRIPTS / "iflow_tool_json.stdout", TRANSCRIPTS / "iflow_tool_json.stderr", 0.0, 1.0
    )
    assert get_adapter("iflow").parse_output(result).tokens == {
        "input_tokens": 10234,
        "output_tokens": 87,
    }


def test_a_run_without_usage_has_no_token_counts(tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("")
    result = ProcessResult(1, tmp_path / "empty", tmp_path / "empty", 0.0, 1.0)
    assert all(
        get_adapter(engine).parse_output(result).tokens is None
        for engine in ("claude", "codex", "gemini", "iflow", "kilo", "opencode", "qwen")
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"error": {"message": "bad schema", "type": "invalid_request_error", '
            '"param": "text.format.schema", "code": "invalid_json_schema"}}',
            ("bad schema", None, {"provider_type": "invalid_request_error",
                                  "provider_code": "invalid_json_schema",
                                  "provider_param": "text.format.schema"}),
        ),
        (
            '[API Error: {"error":{"code":400,"message":"bad request","status":"INVALID_ARGUMENT"}}]',
            ("bad request", 400, {"provider_status": "INVALID_ARGUMENT"}),
        ),
        ("unexpected status 401 Unauthorized: nope", None),
        ('{"not": "an error"}', None),
        ("{broken", None),
    ],
)  # fmt: skip
def test_provider_error_reads_a_relayed_json_body(text: str, expected: Any) -> None:
    assert provider_error(text) == expected


def test_codex_relayed_400_body_is_the_provider_s_message_with_status_400() -> None:
    body = '{"error": {"message": "The model `x` does not exist", "type": "invalid_request_error", "param": null, "code": null}}'  # noqa: E501
    error = classify_api_error(body)
    assert error.code == "MODEL_API_ERROR"
    assert error.message == "The model `x` does not exist"
    assert error.details == {
        "status": 400,
        "timed_out": False,
        "provider_type": "invalid_request_error",
    }
    assert classify_api_error("exceeded retry limit, last status: 429").details["status"] == 429


def test_gemini_relayed_body_is_the_provider_s_message() -> None:
    error = gemini_result_error(
        {"type": "Error", "message": '[API Error: {"error":{"code":400,"message":"bad request"}}]'}
    )
    assert (error.code, error.message, error.details["status"]) == (
        "MODEL_API_ERROR",
        "bad request",
        400,
    )


def test_gemini_stopped_while_retrying_names_the_failed_call(tmp_path: Path) -> None:
    stderr = (
        "Attempt 1 failed with status 429. Retrying with backoff... _ApiError: "
        '{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}\n'
        "    at async Models.generateContentStream (chunk.js:1:1)\n"
    )
    init = {"type": "init", "session_id": "s-1", "timestamp": "2026-11-29T00:00:00Z"}
    result = printed(tmp_path, None, json.dumps(init) + "\n", stderr, timed_out=True)
    error = get_adapter("gemini").parse_output(result).error
    assert error is not None and (error.code, error.message) == ("MODEL_API_ERROR", "slow down")
    assert error.details["status"] == 429
