"""Gemini adapter: command building and parsing of transcripts recorded from gemini 0.61.0
run against the fake LLM server (tests/engines/transcripts/gemini_*)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from runner_core.engines import gemini
from tests.helpers import engine_context, recorded

CONFIG = {
    "base_url": "http://127.0.0.1:9",
    "api_key": "k",
    "model": "m1",
    "settings": {"general": {"enableAutoUpdate": False}},
}

context = partial(engine_context, config=CONFIG)


def test_command_runs_headless_with_stream_json(tmp_path: Path) -> None:
    spec = gemini.ADAPTER.build_command(context(tmp_path))
    assert spec.argv[1:] == [
        "--yolo",
        "--output-format",
        "stream-json",
        "-m",
        "m1",
        "--prompt=do it",
    ]
    assert spec.cwd == tmp_path


def test_request_model_beats_config_model(tmp_path: Path) -> None:
    spec = gemini.ADAPTER.build_command(context(tmp_path, model="m2"))
    assert spec.argv[spec.argv.index("-m") + 1] == "m2"


def test_settings_go_to_a_per_run_home(tmp_path: Path) -> None:
    spec = gemini.ADAPTER.build_command(context(tmp_path))
    assert spec.env["HOME"] == str(tmp_path / ".home")
    settings = json.loads(spec.files[".home/.gemini/settings.json"])
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["general"]["enableAutoUpdate"] is False


def test_provider_and_trust_env(tmp_path: Path) -> None:
    env = gemini.ADAPTER.build_command(context(tmp_path)).env
    assert env["GEMINI_API_KEY"] == "k"
    assert env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"
    assert env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    assert env["TMPDIR"].startswith(str(tmp_path))


def test_tool_call_and_final_json_are_parsed() -> None:
    out = gemini.ADAPTER.parse_output(recorded("gemini_tool_json", 0))
    assert out.error is None
    assert out.session_id and len(out.session_id) == 36
    assert out.parsed_json["ok"] is True
    assert [c["name"] for c in out.tool_calls] == ["run_shell_command"]
    assert out.tool_calls[0]["status"] == "success"
    assert out.usage["tool_calls"] == 1 and out.usage["total_tokens"] > 0


def test_http_400_is_a_model_api_error() -> None:
    out = gemini.ADAPTER.parse_output(recorded("gemini_http400", 144))
    assert out.error is not None
    assert out.error.code == "MODEL_API_ERROR"
    assert out.error.details["status"] == 400
    assert out.session_id


def test_missing_key_is_auth_missing() -> None:
    out = gemini.ADAPTER.parse_output(recorded("gemini_auth_missing", 41))
    assert out.error is not None and out.error.code == "AUTH_MISSING"
