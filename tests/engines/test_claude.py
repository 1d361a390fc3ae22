"""claude for real against the fake LLM server (Anthropic Messages); the scenarios
every engine shares (prompt passing, HTTP 400, missing key) are in test_every_engine.py."""

from __future__ import annotations

import json
from collections.abc import Callable

from fake_llm import Script
from runner_core.engines import get_adapter
from tests.engines.harness import (
    MARKER_FILE,
    PROBE_BODY_TOKEN,
    PROBE_COMMAND,
    PROBE_TOKEN,
    ScenarioResult,
)

ADAPTER = get_adapter("claude")
FINAL = '{"status": "ok", "engine": "claude"}'
NO_RETRIES = {"env": {"CLAUDE_CODE_MAX_RETRIES": "0"}}

Scenario = Callable[..., ScenarioResult]


def test_claude_runs_shell_tool_and_returns_final_json(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(command=PROBE_COMMAND, final_text=FINAL))
    out = run.output
    assert out.error is None, (out.error, run.stderr[-2000:])
    assert out.exit_code == 0
    assert (run.run_dir / MARKER_FILE).read_text() == "probe"
    assert out.parsed_json == json.loads(FINAL)
    assert out.session_id
    assert [c["name"] for c in out.tool_calls] == ["Bash"]
    assert out.tool_calls[0]["is_error"] is False
    assert out.envelope["subtype"] == "success"
    assert (
        out.tokens is not None
        and out.tokens["input_tokens"] > 0
        and out.tokens["output_tokens"] > 0
    )


def test_claude_advertises_the_installed_skill_to_the_model(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(tool=False, final_text=FINAL))
    assert PROBE_TOKEN in run.request_text
    assert PROBE_BODY_TOKEN not in run.request_text  # listed, not yet activated
    assert all(r.path == "/v1/messages" for r in run.requests)


def test_claude_resume_continues_the_same_session(scenario: Scenario) -> None:
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


def test_claude_http_401_is_a_model_api_error_quickly(scenario: Scenario) -> None:
    run = scenario(
        ADAPTER, Script(status=401, error_message="bad key"), config=NO_RETRIES, timeout=30
    )
    assert run.output.error is not None
    assert run.output.error.code == "MODEL_API_ERROR"
    assert run.output.error.details.get("status") == 401
    assert run.seconds < 10
