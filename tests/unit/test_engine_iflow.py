"""iFlow adapter: command building and parsing.

The iFlow CLI is not on the package registry this project installs from, so the transcripts
used here (tests/engines/transcripts/iflow_*) are NOT recorded from the real CLI: they were
written from its documented behaviour (plain text ending with an ``<Execution Info>`` JSON block
holding ``"session-id"``; ``[API Error: ...]`` lines on failure). Re-record them when the CLI
becomes available.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from runner_core.engines import iflow
from tests.helpers import engine_context, recorded

CONFIG = {
    "base_url": "http://127.0.0.1:9/v1",
    "api_key": "k",
    "model": "m1",
    "settings": {"selectedAuthType": "openai-compatible"},
}

context = partial(engine_context, config=CONFIG)


def test_command_is_yolo_thinking_prompt(tmp_path: Path) -> None:
    argv = iflow.ADAPTER.build_command(context(tmp_path)).argv
    assert argv[1:] == ["--yolo", "--thinking", "--prompt=do it"]


def test_provider_goes_to_per_run_settings_and_key_to_env(tmp_path: Path) -> None:
    spec = iflow.ADAPTER.build_command(context(tmp_path))
    settings = json.loads(spec.files[".home/.iflow/settings.json"])
    assert settings == {
        "selectedAuthType": "openai-compatible",
        "baseUrl": "http://127.0.0.1:9/v1",
        "modelName": "m1",
    }
    assert spec.env["IFLOW_apiKey"] == "k"
    assert spec.env["HOME"] == str(tmp_path / ".home")


def test_session_id_and_usage_come_from_execution_info() -> None:
    out = iflow.ADAPTER.parse_output(recorded("iflow_tool_json", 0))
    assert out.error is None
    assert out.session_id == "session-2b8f0c1e-5d7a-4c39-9e61-3f4a8d2b7c10"
    assert out.usage["total"] == 10321
    assert "<Execution Info>" not in out.final_text
    assert out.parsed_json is None  # prose around the JSON: left to the output normalizer


def test_final_text_that_is_json_is_parsed() -> None:
    out = iflow.ADAPTER.parse_output(recorded("iflow_json_only", 0))
    assert out.parsed_json == {"ok": True, "count": 3}
    assert out.session_id == "session-0f6b7c2d-1e3a-4b5c-8d9e-aa11bb22cc33"


def test_api_error_is_a_model_api_error() -> None:
    out = iflow.ADAPTER.parse_output(recorded("iflow_http400", 1))
    assert out.error is not None and out.error.code == "MODEL_API_ERROR"
    assert out.error.details["status"] == 400
    assert out.session_id == "session-9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d"


def test_missing_key_is_auth_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("runner_core.engines.failures.resolve_binary", lambda name: tmp_path / name)
    out = iflow.ADAPTER.parse_output(recorded("iflow_auth_missing", 1))
    assert out.error is not None and out.error.code == "AUTH_MISSING"
