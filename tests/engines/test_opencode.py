"""opencode for real against the fake LLM server (Chat Completions); the scenarios
every engine shares (prompt passing, HTTP 400, missing key) are in test_every_engine.py."""

from __future__ import annotations

import json
from collections.abc import Callable

from fake_llm import Script
from runner_core.engines import get_adapter
from runner_core.engines.config import load_engine_config
from tests.engines.harness import MARKER_FILE, PROBE_COMMAND, PROBE_TOKEN, ScenarioResult

ADAPTER = get_adapter("opencode")
FINAL = '{"status": "ok", "engine": "opencode"}'
# The shipped defaults keep opencode off the network (no update check, no plugin install).
SHIPPED = load_engine_config("opencode", skill_dir=None, user=None)
OFFLINE = {"env": SHIPPED.get("env", {}), "settings": SHIPPED.get("settings", {})}

Scenario = Callable[..., ScenarioResult]


def test_opencode_runs_shell_tool_and_returns_final_json(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(command=PROBE_COMMAND, final_text=FINAL), config=OFFLINE)
    out = run.output
    assert out.error is None, (out.error, run.stderr[-2000:])
    assert out.exit_code == 0
    assert (run.run_dir / MARKER_FILE).read_text() == "probe"
    assert out.parsed_json == json.loads(FINAL)
    assert out.session_id and out.session_id.startswith("ses_")
    assert [c["name"] for c in out.tool_calls] == ["bash"]
    assert out.usage.get("input", 0) > 0
    assert (
        out.tokens is not None
        and out.tokens["input_tokens"] > 0
        and out.tokens["output_tokens"] > 0
    )


def test_opencode_advertises_the_installed_skill_to_the_model(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(tool=False, final_text=FINAL), config=OFFLINE)
    assert run.output.error is None, run.stderr[-2000:]
    assert PROBE_TOKEN in run.request_text
    # the run names its session (--title), so opencode does not ask the model for a title
    assert len([r for r in run.requests if r.method == "POST"]) == 1


def test_opencode_resume_continues_the_same_session(scenario: Scenario) -> None:
    first = scenario(ADAPTER, Script(command=PROBE_COMMAND, final_text=FINAL), config=OFFLINE)
    second = scenario(
        ADAPTER,
        Script(command=PROBE_COMMAND, final_text=FINAL),
        prompt="again",
        config=OFFLINE,
        run_dir=first.run_dir,
        session_id=first.output.session_id,
        log_name="logs2",
    )
    assert second.output.error is None, second.stderr[-2000:]
    assert second.output.session_id == first.output.session_id
    assert "again" in second.request_text
    assert "--title" not in second.spec.argv
    # one model request per turn (the tool call, the answer), none for a title
    assert [len([r for r in x.requests if r.method == "POST"]) for x in (first, second)] == [2, 2]
