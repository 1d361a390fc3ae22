"""Qwen adapter: command building and parsing of transcripts recorded from qwen 0.15.10 run
against the fake LLM server (tests/engines/transcripts/qwen_*)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from runner_core.engines import qwen
from tests.helpers import engine_context, recorded

CONFIG = {
    "base_url": "http://127.0.0.1:9/v1",
    "api_key": "k",
    "model": "m1",
    "settings": {"privacy": {"usageStatisticsEnabled": False}},
}

context = partial(engine_context, config=CONFIG)


def test_command_uses_openai_auth_and_stream_json(tmp_path: Path) -> None:
    argv = qwen.ADAPTER.build_command(context(tmp_path, session_id="sid-1")).argv
    start = argv.index("--auth-type")  # after the program: the CLI, or node and its script
    assert argv[start : start + 4] == ["--auth-type", "openai", "--yolo", "--output-format"]
    assert argv[argv.index("--output-format") + 1] == "stream-json"
    assert argv[argv.index("--resume") + 1] == "sid-1"
    assert argv[-1] == "--prompt=do it"


def test_provider_env_and_per_run_home(tmp_path: Path) -> None:
    spec = qwen.ADAPTER.build_command(context(tmp_path))
    assert spec.env["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert spec.env["OPENAI_API_KEY"] == "k"
    assert spec.env["OPENAI_MODEL"] == "m1"
    # HOME must differ from the working dir: qwen skips project skills when they are equal.
    assert spec.env["HOME"] == str(tmp_path / ".home") != str(spec.cwd)
    settings = json.loads(spec.files[".home/.qwen/settings.json"])
    assert settings["privacy"]["usageStatisticsEnabled"] is False


def test_tool_call_and_final_json_are_parsed() -> None:
    out = qwen.ADAPTER.parse_output(recorded("qwen_tool_json", 0))
    assert out.error is None
    assert out.session_id
    assert out.parsed_json["ok"] is True
    assert [c["name"] for c in out.tool_calls] == ["run_shell_command"]
    assert out.tool_calls[0]["status"] == "success"
    assert out.usage["total_tokens"] > 0


def test_api_error_text_with_exit_zero_is_a_model_api_error() -> None:
    out = qwen.ADAPTER.parse_output(recorded("qwen_http400", 0))
    assert out.exit_code == 0
    assert out.error is not None and out.error.code == "MODEL_API_ERROR"
    assert out.error.details["status"] == 400
    assert out.parsed_json is None


def test_missing_key_is_auth_missing() -> None:
    out = qwen.ADAPTER.parse_output(recorded("qwen_auth_missing", 1))
    assert out.error is not None and out.error.code == "AUTH_MISSING"


def test_an_api_error_in_the_result_events_error_is_typed_with_its_status():
    """qwen 0.24 moved `[API Error: ...]` from the result text to `error.message`."""
    event = {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "result": "",
        "error": {"message": "[API Error: 400 bad request]"},
    }
    error = qwen.result_error(event)
    assert error is not None and error.code == "MODEL_API_ERROR"
    assert error.details["status"] == 400
    older = {"type": "result", "subtype": "success", "result": "[API Error: 429 slow down]"}
    assert qwen.result_error(older).details["status"] == 429
