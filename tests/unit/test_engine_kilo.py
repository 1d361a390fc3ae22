"""Kilo adapter: command building and parsing of transcripts recorded from kilo 7.7.9 run
against the fake LLM server (tests/engines/transcripts/kilo_*)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from runner_core.engines import kilo
from runner_core.engines.base import CommandSpec
from runner_core.engines.live import translate_line
from tests.helpers import TRANSCRIPTS, engine_context, printed, recorded

CONFIG = {
    "base_url": "http://127.0.0.1:9/v1",
    "api_key": "secret-key",
    "model": "m1",
    "env": {"KILO_DISABLE_AUTOUPDATE": "1"},
    "settings": {"autoupdate": False},
}

context = partial(engine_context, config=CONFIG)


def written_config(spec: CommandSpec) -> dict:
    return json.loads(spec.files[f".home/{kilo.SETTINGS_PATH}"])


def test_command_runs_headless_with_auto_approval_and_the_runner_provider(tmp_path: Path) -> None:
    spec = kilo.ADAPTER.build_command(context(tmp_path, session_id="ses_1"))
    assert spec.argv[1:5] == ["run", "--format", "json", "--auto"]
    assert spec.argv[spec.argv.index("-m") + 1] == "runner/m1"
    assert spec.argv[spec.argv.index("-s") + 1] == "ses_1"
    assert spec.argv[-2:] == ["--", "do it"]


def test_settings_go_to_the_run_home_not_the_run_dir(tmp_path: Path) -> None:
    # kilo skips a project kilo.json that holds an {env:...} reference
    spec = kilo.ADAPTER.build_command(context(tmp_path))
    assert not any(path.startswith("kilo.json") for path in spec.files)
    assert spec.env["HOME"] == str(tmp_path / ".home")
    provider = written_config(spec)["provider"]["runner"]
    assert provider["options"] == {
        "baseURL": "http://127.0.0.1:9/v1",
        "apiKey": "{env:SKILL_RUNNER_KILO_API_KEY}",
    }
    assert spec.env[kilo.KEY_ENV] == "secret-key"
    assert "secret-key" not in json.dumps(spec.files)


def test_only_the_runner_provider_is_enabled_with_a_base_url(tmp_path: Path) -> None:
    assert written_config(kilo.ADAPTER.build_command(context(tmp_path)))["enabled_providers"] == [
        "runner"
    ]
    config = {"model": "anthropic/claude-x", "api_key": "k", "api_key_env": "ANTHROPIC_API_KEY"}
    spec = kilo.ADAPTER.build_command(context(tmp_path, config=config))
    assert "enabled_providers" not in written_config(spec)
    assert spec.argv[spec.argv.index("-m") + 1] == "anthropic/claude-x"
    assert spec.env["ANTHROPIC_API_KEY"] == "k"


def test_kilos_own_sandbox_is_off_in_the_run_box_whatever_the_settings(tmp_path: Path) -> None:
    config = {**CONFIG, "settings": {"sandbox": {"enabled": True, "network": "deny"}}}
    boxed = kilo.ADAPTER.build_command(context(tmp_path, config=config, boxed=True))
    assert written_config(boxed)["sandbox"] == {"enabled": False, "network": "deny"}
    unboxed = kilo.ADAPTER.build_command(context(tmp_path, config=config))
    assert written_config(unboxed)["sandbox"]["enabled"] is True


def test_question_permission_follows_the_execution_mode(tmp_path: Path) -> None:
    auto = kilo.ADAPTER.build_command(context(tmp_path, execution_mode="auto"))
    interactive = kilo.ADAPTER.build_command(context(tmp_path, execution_mode="interactive"))
    assert written_config(auto)["permission"]["question"] == "deny"
    assert written_config(interactive)["permission"]["question"] == "allow"


def test_new_sessions_are_named_and_resumed_ones_are_not(tmp_path: Path) -> None:
    argv = kilo.ADAPTER.build_command(context(tmp_path)).argv
    assert argv[argv.index("--title") + 1] == "skill demo"
    assert "--title" not in kilo.ADAPTER.build_command(context(tmp_path, session_id="s")).argv


def test_tool_call_final_json_and_usage_are_parsed() -> None:
    out = kilo.ADAPTER.parse_output(recorded("kilo_tool_json", 0))
    assert out.error is None
    assert out.session_id and out.session_id.startswith("ses_")
    assert out.parsed_json == {"status": "ok", "engine": "fake-model"}
    assert [(c["name"], c["status"]) for c in out.tool_calls] == [("bash", "completed")]
    assert out.tool_calls[0]["input"]["command"] == "printf probe > made-by-agent.txt"
    # summed over the two steps, every count kilo reports, and the cost
    steps = [
        json.loads(line)["part"]
        for line in (TRANSCRIPTS / "kilo_tool_json.stdout").read_text().splitlines()
        if '"step_finish"' in line
    ]
    assert len(steps) == 2
    assert out.usage["input"] == sum(s["tokens"]["input"] for s in steps) > 0
    assert out.usage["output"] == sum(s["tokens"]["output"] for s in steps) > 0
    assert {"reasoning", "cache_read", "cache_write", "cost"} <= set(out.usage)
    # normalized as opencode's: cache reads and writes counted into input, reasoning into output
    u = out.usage
    assert out.tokens == {
        "input_tokens": u["input"] + u["cache_read"] + u["cache_write"],
        "output_tokens": u["output"] + u["reasoning"],
        "cached_input_tokens": u["cache_read"],
        "reasoning_tokens": u["reasoning"],
        "cost_usd": u["cost"],
    }


def test_a_resumed_turn_keeps_its_session_and_answers_again() -> None:
    first = kilo.ADAPTER.parse_output(recorded("kilo_tool_json", 0))
    resumed = kilo.ADAPTER.parse_output(recorded("kilo_resume", 0))
    assert resumed.error is None and resumed.parsed_json is not None
    assert resumed.session_id and resumed.session_id != first.session_id  # another recording


def test_http_400_and_401_are_model_api_errors_with_their_status() -> None:
    for name, status in (("kilo_http400", 400), ("kilo_http401", 401)):
        out = kilo.ADAPTER.parse_output(recorded(name, 1))
        assert out.error is not None and out.error.code == "MODEL_API_ERROR", name
        assert out.error.details["status"] == status
        assert out.session_id


def test_a_turn_cut_short_counts_the_steps_it_finished(tmp_path: Path) -> None:
    lines = (TRANSCRIPTS / "kilo_tool_json.stdout").read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if "step_finish" in line)
    first_step = "\n".join(lines[: end + 1])
    out = kilo.ADAPTER.parse_output(printed(tmp_path, None, first_step, canceled=True))
    assert out.tokens is not None and out.tokens["input_tokens"] > 0
    assert out.final_text is None


def test_live_events_name_the_shell_call_and_the_answer() -> None:
    lines = (TRANSCRIPTS / "kilo_tool_json.stdout").read_text().splitlines()
    events = [event for line in lines for event in translate_line("kilo", line)]
    kinds = [kind for kind, _ in events]
    assert kinds == ["tool.call", "tool.result", "assistant.message"]
    assert events[0][1]["tool"] == "bash"
