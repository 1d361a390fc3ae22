"""codex for real against the fake LLM server (Responses API); the scenarios
every engine shares (prompt passing, HTTP 400, missing key) are in test_every_engine.py."""

from __future__ import annotations

import json
from collections.abc import Callable

from fake_llm import Script
from runner_core.engines import get_adapter
from runner_core.engines.config import load_engine_config
from tests.engines.harness import MARKER_FILE, PROBE_COMMAND, PROBE_TOKEN, ScenarioResult

ADAPTER = get_adapter("codex")
FINAL = '{"status": "ok", "engine": "codex"}'
NO_RETRIES = {
    "settings": {
        "model_providers": {"skillrunner": {"stream_max_retries": 0, "request_max_retries": 0}}
    }
}

Scenario = Callable[..., ScenarioResult]


def test_codex_runs_shell_tool_and_returns_final_json(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(command=PROBE_COMMAND, final_text=FINAL))
    out = run.output
    assert out.error is None, (out.error, run.stderr[-2000:])
    assert out.exit_code == 0
    assert (run.run_dir / MARKER_FILE).read_text() == "probe"
    assert out.parsed_json == json.loads(FINAL)
    assert out.session_id
    assert [c["type"] for c in out.tool_calls] == ["command_execution"]
    assert out.usage.get("input_tokens", 0) > 0
    assert (
        out.tokens is not None
        and out.tokens["input_tokens"] > 0
        and out.tokens["output_tokens"] > 0
    )


def test_codex_advertises_the_installed_skill_to_the_model(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(tool=False, final_text=FINAL))
    assert PROBE_TOKEN in run.request_text
    assert all(r.path == "/v1/responses" for r in run.requests)


def test_codex_resume_continues_the_same_thread(scenario: Scenario) -> None:
    first = scenario(ADAPTER, Script(command=PROBE_COMMAND, final_text=FINAL))
    (first.run_dir / MARKER_FILE).unlink()
    second = scenario(
        ADAPTER,
        Script(command=PROBE_COMMAND, final_text=FINAL),
        prompt="again",
        run_dir=first.run_dir,
        session_id=first.output.session_id,
    )
    assert second.output.error is None, second.stderr[-2000:]
    assert second.output.session_id == first.output.session_id
    assert (first.run_dir / MARKER_FILE).exists()
    assert "again" in second.request_text


def test_codex_http_401_is_a_model_api_error_quickly(scenario: Scenario) -> None:
    run = scenario(
        ADAPTER, Script(status=401, error_message="bad key"), config=NO_RETRIES, timeout=30
    )
    assert run.output.error is not None
    assert run.output.error.code == "MODEL_API_ERROR"
    assert run.output.error.details.get("status") == 401
    assert run.seconds < 10


def test_codex_with_the_shipped_defaults_lists_only_the_run_skill(scenario: Scenario) -> None:
    """skills.bundled.enabled=false (deploy/engine-config/codex/default.json): codex neither
    unpacks its bundled skills into the run's CODEX_HOME nor lists them to the model."""
    shipped = load_engine_config("codex", skill_dir=None, user=None)
    run = scenario(
        ADAPTER,
        Script(tool=False, final_text=FINAL),
        config={"settings": shipped.get("settings", {})},
    )
    assert run.output.error is None, run.stderr[-2000:]
    assert PROBE_TOKEN in run.request_text
    assert "skill-creator" not in run.request_text
    assert not (run.run_dir / ".codex-home" / "skills" / ".system").exists()


def test_codex_bundled_skills_come_back_when_enabled(scenario: Scenario) -> None:
    run = scenario(
        ADAPTER,
        Script(tool=False, final_text=FINAL),
        config={"settings": {"skills": {"bundled": {"enabled": True}}}},
    )
    assert run.output.error is None, run.stderr[-2000:]
    assert "skill-creator" in run.request_text
    assert (run.run_dir / ".codex-home" / "skills" / ".system").is_dir()
