"""qwen for real against the fake LLM server (Chat Completions); the scenarios
every engine shares (prompt passing, HTTP 400, missing key) are in test_every_engine.py."""

from __future__ import annotations

import json
from collections.abc import Callable

from fake_llm import Script
from runner_core.engines import get_adapter
from tests.engines.harness import MARKER_FILE, PROBE_COMMAND, PROBE_TOKEN, ScenarioResult

ADAPTER = get_adapter("qwen")
FINAL = '{"status": "ok", "engine": "qwen"}'

Scenario = Callable[..., ScenarioResult]


def test_qwen_runs_shell_tool_and_returns_final_json(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(command=PROBE_COMMAND, final_text=FINAL))
    out = run.output
    assert out.error is None, (out.error, run.stderr[-2000:])
    assert out.exit_code == 0
    assert (run.run_dir / MARKER_FILE).read_text() == "probe"
    assert out.parsed_json == json.loads(FINAL)
    assert out.session_id
    assert [c["name"] for c in out.tool_calls] == ["run_shell_command"]
    assert out.usage.get("input_tokens", 0) > 0
    assert (
        out.tokens is not None
        and out.tokens["input_tokens"] > 0
        and out.tokens["output_tokens"] > 0
    )


def test_qwen_advertises_the_installed_skill_to_the_model(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(tool=False, final_text=FINAL))
    assert run.output.error is None, run.stderr[-2000:]
    assert PROBE_TOKEN in run.request_text
    assert all(r.path == "/v1/chat/completions" for r in run.requests if r.method == "POST")


def test_qwen_resume_continues_the_same_session(scenario: Scenario) -> None:
    first = scenario(ADAPTER, Script(command=PROBE_COMMAND, final_text=FINAL))
    second = scenario(
        ADAPTER,
        Script(command=PROBE_COMMAND, final_text=FINAL),
        prompt="again",
        run_dir=first.run_dir,
        session_id=first.output.session_id,
        log_name="logs2",
    )
    assert second.output.error is None, second.stderr[-2000:]
    assert second.output.session_id == first.output.session_id
    assert "again" in second.request_text
