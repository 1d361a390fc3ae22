"""OpenCode adapter: command building and parsing of transcripts recorded from opencode 1.18.33
run against the fake LLM server (tests/engines/transcripts/opencode_*)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from runner_core.engines import opencode
from tests.helpers import TRANSCRIPTS, engine_context, printed, recorded

CONFIG = {
    "base_url": "http://127.0.0.1:9/v1",
    "api_key": "secret-key",
    "model": "m1",
    "env": {"OPENCODE_DISABLE_AUTOUPDATE": "1"},
    "settings": {"autoupdate": False},
}

context = partial(engine_context, config=CONFIG)


def written_config(spec) -> dict:
    return json.loads(spec.files["opencode.json"])


def test_command_selects_the_runner_provider(tmp_path: Path) -> None:
    spec = opencode.ADAPTER.build_command(context(tmp_path, session_id="ses_1"))
    assert spec.argv[1:4] == ["run", "--format", "json"]
    assert spec.argv[spec.argv.index("-m") + 1] == "runner/m1"
    assert spec.argv[spec.argv.index("-s") + 1] == "ses_1"
    assert spec.argv[-2:] == ["--", "do it"]


def test_provider_block_refers_to_the_key_without_writing_it(tmp_path: Path) -> None:
    spec = opencode.ADAPTER.build_command(context(tmp_path))
    provider = written_config(spec)["provider"]["runner"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"]["baseURL"] == "http://127.0.0.1:9/v1"
    assert "m1" in provider["models"]
    assert "secret-key" not in spec.files["opencode.json"]
    assert spec.env[opencode.KEY_ENV] == "secret-key"
    assert spec.env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    assert spec.env["HOME"].startswith(str(tmp_path))


def test_question_permission_is_denied_in_auto_mode(tmp_path: Path) -> None:
    spec = opencode.ADAPTER.build_command(context(tmp_path, execution_mode="auto"))
    assert written_config(spec)["permission"]["question"] == "deny"


def test_question_permission_is_allowed_in_interactive_mode(tmp_path: Path) -> None:
    spec = opencode.ADAPTER.build_command(context(tmp_path, execution_mode="interactive"))
    assert written_config(spec)["permission"]["question"] == "allow"


def test_without_base_url_the_model_is_used_as_given(tmp_path: Path) -> None:
    config = {"model": "anthropic/claude-x", "api_key": "k", "api_key_env": "ANTHROPIC_API_KEY"}
    spec = opencode.ADAPTER.build_command(context(tmp_path, config=config))
    assert spec.argv[spec.argv.index("-m") + 1] == "anthropic/claude-x"
    assert "provider" not in written_config(spec)
    assert spec.env["ANTHROPIC_API_KEY"] == "k"


def test_run_dir_is_made_a_git_root(tmp_path: Path) -> None:
    spec = opencode.ADAPTER.build_command(context(tmp_path))
    assert ".git/HEAD" in spec.files


def test_tool_call_and_final_json_are_parsed() -> None:
    out = opencode.ADAPTER.parse_output(recorded("opencode_tool_json", 0))
    assert out.error is None
    assert out.session_id and out.session_id.startswith("ses_")
    assert out.parsed_json["ok"] is True
    assert [c["name"] for c in out.tool_calls] == ["bash"]
    assert out.tool_calls[0]["status"] == "completed"
    assert out.usage["input"] > 0 and out.usage["output"] > 0


def test_http_400_is_a_model_api_error() -> None:
    out = opencode.ADAPTER.parse_output(recorded("opencode_http400", 1))
    assert out.error is not None and out.error.code == "MODEL_API_ERROR"
    assert out.error.details["status"] == 400
    assert out.session_id


def test_http_401_is_a_model_api_error_with_its_status() -> None:
    out = opencode.ADAPTER.parse_output(recorded("opencode_http401", 1))
    assert out.error is not None and out.error.code == "MODEL_API_ERROR"
    assert out.error.details["status"] == 401


def test_appended_log_of_a_resumed_turn_yields_the_last_answer(tmp_path: Path) -> None:
    ok = (TRANSCRIPTS / "opencode_tool_json.stdout").read_text()
    second = ok.replace('{\\"ok\\": true', '{\\"ok\\": false')
    out = opencode.ADAPTER.parse_output(printed(tmp_path, 0, ok + second))
    assert out.parsed_json["ok"] is False


def test_new_sessions_are_named_so_opencode_asks_no_title_of_the_model(tmp_path: Path) -> None:
    argv = opencode.ADAPTER.build_command(context(tmp_path)).argv
    assert argv[argv.index("--title") + 1] == f"skill {context(tmp_path).skill_id}"
    assert argv.index("--title") < argv.index("--")
    resumed = opencode.ADAPTER.build_command(context(tmp_path, session_id="ses_1")).argv
    assert "--title" not in resumed and resumed[resumed.index("-s") + 1] == "ses_1"
