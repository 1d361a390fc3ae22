"""Claude adapter: command building and parsing of transcripts recorded from claude 2.1.197
run against the fake LLM server (tests/engines/transcripts/claude_*)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from runner_core.engines import claude
from tests.helpers import TRANSCRIPTS, engine_context, recorded

CONFIG = {"base_url": "http://127.0.0.1:9", "api_key": "k", "model": "m1"}

context = partial(engine_context, config=CONFIG)


def test_command_prints_stream_json_with_preapproved_tools(tmp_path: Path) -> None:
    argv = claude.ADAPTER.build_command(context(tmp_path)).argv
    assert argv[1:5] == ["--print", "--output-format", "stream-json", "--verbose"]
    tools = argv[argv.index("--allowedTools") + 1].split(",")
    assert {"Bash", "Read", "Write", "Skill"} <= set(tools)
    assert argv[-2:] == ["--", "do it"]


def test_auto_mode_disallows_asking_the_user(tmp_path: Path) -> None:
    auto = claude.ADAPTER.build_command(context(tmp_path)).argv
    interactive = claude.ADAPTER.build_command(context(tmp_path, execution_mode="interactive")).argv
    assert auto[auto.index("--disallowedTools") + 1] == "AskUserQuestion"
    assert "--disallowedTools" not in interactive


def test_per_run_home_provider_and_quiet_env(tmp_path: Path) -> None:
    spec = claude.ADAPTER.build_command(context(tmp_path))
    assert spec.env["HOME"] == str(tmp_path / ".claude-home")
    assert spec.env["CLAUDE_CONFIG_DIR"] == str(tmp_path / ".claude-home" / ".claude")
    assert spec.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert spec.env["ANTHROPIC_API_KEY"] == "k"
    assert spec.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert spec.env["DISABLE_AUTOUPDATER"] == "1"
    assert spec.stdin is None and spec.cwd == tmp_path


def test_config_env_is_passed_and_settings_are_written(tmp_path: Path) -> None:
    config = {"api_key": "k", "env": {"CLAUDE_CODE_MAX_RETRIES": "0"}, "settings": {"model": "x"}}
    spec = claude.ADAPTER.build_command(context(tmp_path, config=config))
    assert spec.env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert json.loads(spec.files[".claude-home/.claude/settings.json"]) == {"model": "x"}


def test_model_from_context_beats_config(tmp_path: Path) -> None:
    argv = claude.ADAPTER.build_command(context(tmp_path, model="m2")).argv
    assert argv[argv.index("--model") + 1] == "m2"


def test_skills_are_discovered_in_claude_skills() -> None:
    assert claude.ADAPTER.skill_dirs == (".claude/skills",)


def test_parse_tool_call_and_final_json() -> None:
    out = claude.ADAPTER.parse_output(recorded("claude_tool_json", 0))
    assert out.error is None
    assert out.session_id and out.session_id == out.envelope["session_id"]
    assert out.parsed_json == {"status": "ok", "engine": "fake-model"}
    assert [(c["name"], c["is_error"]) for c in out.tool_calls] == [("Bash", False)]
    assert "made-by-agent.txt" in out.tool_calls[0]["input"]["command"]
    assert out.usage["input_tokens"] > 0 and "cost_usd" in out.usage


def test_parse_appended_resume_log_reads_the_last_invocation() -> None:
    out = claude.ADAPTER.parse_output(recorded("claude_resume", 0))
    first = json.loads((TRANSCRIPTS / "claude_resume.stdout").read_text().splitlines()[0])
    assert out.session_id == first["session_id"]
    assert len(out.tool_calls) == 1
    assert out.error is None and out.parsed_json is not None


@pytest.mark.parametrize(("name", "status"), [("claude_http400", 400), ("claude_http401", 401)])
def test_parse_is_error_result_is_model_api_error_with_status(name: str, status: int) -> None:
    out = claude.ADAPTER.parse_output(recorded(name, 1))
    assert out.error is not None and out.error.code == "MODEL_API_ERROR"
    assert out.error.details["status"] == status
    assert out.parsed_json is None


def test_parse_killed_while_retrying_is_model_api_error() -> None:
    out = claude.ADAPTER.parse_output(recorded("claude_http401_killed", None, timed_out=True))
    assert out.error is not None and out.error.code == "MODEL_API_ERROR"
    assert out.error.details["status"] == 401 and out.error.details["timed_out"] is True
    assert out.session_id


def test_parse_missing_key_is_auth_missing() -> None:
    out = claude.ADAPTER.parse_output(recorded("claude_auth_missing", 1))
    assert out.error is not None and out.error.code == "AUTH_MISSING"
