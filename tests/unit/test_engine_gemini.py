"""Gemini adapter: command building and parsing of transcripts recorded from gemini 0.61.0
run against the fake LLM server (tests/engines/transcripts/gemini_*)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner_core.engines import gemini
from runner_core.engines.base import EngineContext, ProcessResult
from tests.helpers import TRANSCRIPTS, recorded


def context(tmp_path: Path, **overrides: object) -> EngineContext:
    values: dict = {
        "run_dir": tmp_path,
        "skill_id": "demo",
        "prompt": "do it",
        "config": {
            "base_url": "http://127.0.0.1:9",
            "api_key": "k",
            "model": "m1",
            "settings": {"general": {"enableAutoUpdate": False}},
        },
    }
    values.update(overrides)
    return EngineContext(**values)


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


def test_prompt_starting_with_a_dash_stays_one_value(tmp_path: Path) -> None:
    spec = gemini.ADAPTER.build_command(context(tmp_path, prompt="- step one --x"))
    assert spec.argv[-1] == "--prompt=- step one --x"


def test_request_model_beats_config_model_and_resume_is_passed(tmp_path: Path) -> None:
    spec = gemini.ADAPTER.build_command(context(tmp_path, model="m2", session_id="sid-1"))
    assert spec.argv[spec.argv.index("-m") + 1] == "m2"
    assert spec.argv[spec.argv.index("--resume") + 1] == "sid-1"


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


def test_missing_binary_is_cli_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("runner_core.engines.invocation.resolve_binary", lambda name: None)
    monkeypatch.setattr("runner_core.engines.failures.resolve_binary", lambda name: None)
    assert gemini.ADAPTER.build_command(context(tmp_path)).argv[0] == "gemini"
    (tmp_path / "empty").write_text("")
    result = ProcessResult(127, tmp_path / "empty", tmp_path / "empty", 0.0, 0.0)
    out = gemini.ADAPTER.parse_output(result)
    assert out.error is not None and out.error.code == "CLI_NOT_INSTALLED"


def test_other_nonzero_exit_is_engine_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("runner_core.engines.failures.resolve_binary", lambda name: tmp_path / name)
    (tmp_path / "err").write_text("boom\n")
    (tmp_path / "out").write_text("")
    out = gemini.ADAPTER.parse_output(
        ProcessResult(3, tmp_path / "out", tmp_path / "err", 0.0, 0.0)
    )
    assert out.error is not None and out.error.code == "ENGINE_FAILED"
    assert "boom" in out.error.message


def test_appended_log_of_a_resumed_turn_yields_the_last_answer(tmp_path: Path) -> None:
    failed, ok = (TRANSCRIPTS / f"gemini_{n}.stdout" for n in ("http400", "tool_json"))
    (tmp_path / "out").write_text(failed.read_text() + ok.read_text())
    (tmp_path / "err").write_text("")
    out = gemini.ADAPTER.parse_output(
        ProcessResult(0, tmp_path / "out", tmp_path / "err", 0.0, 0.0)
    )
    assert out.error is None
    assert out.parsed_json["ok"] is True


def test_prompt_too_long_for_argv_goes_to_stdin(tmp_path: Path) -> None:
    prompt = "x" * 200_000
    spec = gemini.ADAPTER.build_command(context(tmp_path, prompt=prompt))
    assert spec.stdin == prompt
    assert not any(arg.startswith("--prompt") for arg in spec.argv)
