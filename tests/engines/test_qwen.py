"""qwen for real against the fake LLM server (Chat Completions)."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from runner_core.engines import get_adapter
from runner_core.engines.config import load_engine_config
from tests.engines.harness import (
    MARKER_FILE, PROBE_COMMAND, PROBE_TOKEN, ScenarioResult, node_counts, run_scenario,
)
from tests.fake_llm import Script

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


def test_qwen_advertises_the_installed_skill_to_the_model(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(tool=False, final_text=FINAL))
    assert run.output.error is None, run.stderr[-2000:]
    assert PROBE_TOKEN in run.request_text
    assert all(r.path == "/v1/chat/completions" for r in run.requests if r.method == "POST")


def test_qwen_resume_continues_the_same_session(scenario: Scenario) -> None:
    first = scenario(ADAPTER, Script(command=PROBE_COMMAND, final_text=FINAL))
    second = scenario(ADAPTER, Script(command=PROBE_COMMAND, final_text=FINAL), prompt="again",
                      run_dir=first.run_dir, session_id=first.output.session_id, log_name="logs2")
    assert second.output.error is None, second.stderr[-2000:]
    assert second.output.session_id == first.output.session_id
    assert "again" in second.request_text


def test_qwen_http_400_with_exit_zero_is_a_model_api_error_quickly(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(status=400, error_message="bad request"), timeout=30)
    assert run.output.exit_code == 0  # qwen reports API failures as a successful result text
    assert run.output.error is not None and run.output.error.code == "MODEL_API_ERROR"
    assert run.output.error.details.get("status") == 400
    assert run.seconds < 15


def test_qwen_without_api_key_is_auth_missing(scenario: Scenario) -> None:
    run = scenario(ADAPTER, Script(), config={"api_key": None, "api_key_env": "UNSET_FAKE_KEY_VAR"},
                   timeout=30)
    assert run.output.error is not None and run.output.error.code == "AUTH_MISSING"
    assert not run.requests


def test_qwen_takes_a_prompt_starting_with_a_dash(scenario: Scenario) -> None:
    prompt = "- use the probe skill --now"
    run = scenario(ADAPTER, Script(tool=False, final_text=FINAL), prompt=prompt)
    assert run.output.error is None, run.stderr[-2000:]
    assert prompt in run.request_text


def test_qwen_takes_a_prompt_too_long_for_argv_on_stdin(scenario: Scenario) -> None:
    prompt = "Use the probe skill. " + "padding " * 20_000 + "TAILTOKEN91"
    run = scenario(ADAPTER, Script(tool=False, final_text=FINAL), prompt=prompt)
    assert run.spec.stdin == prompt
    assert run.output.error is None, run.stderr[-2000:]
    assert "TAILTOKEN91" in run.request_text


def test_qwen_runs_as_one_node_process_with_the_shipped_defaults(tmp_path: Path) -> None:
    """QWEN_CODE_NO_RELAUNCH (deploy/engine-config/qwen/default.json): the CLI does not start itself
    again as a child Node process, which costs ~1 s per run here; without it, it does."""
    shipped = load_engine_config("qwen", skill_dir=None, user=None)
    assert shipped["env"].get("QWEN_CODE_NO_RELAUNCH") == "true"
    script = Script(tool=False, final_text=FINAL)
    with node_counts(tmp_path / "shipped") as single:
        run = run_scenario(ADAPTER, tmp_path / "shipped", script, config={"env": shipped["env"]})
    assert run.output.error is None, run.stderr[-2000:]
    assert run.output.parsed_json == json.loads(FINAL)
    unset = {k: v for k, v in shipped["env"].items() if k != "QWEN_CODE_NO_RELAUNCH"}
    with node_counts(tmp_path / "relaunch") as relaunched:
        run = run_scenario(ADAPTER, tmp_path / "relaunch", script, config={"env": unset})
    assert run.output.error is None, run.stderr[-2000:]
    assert max(single) == 1 and max(relaunched) == 2, (single, relaunched)


def test_qwen_with_the_shipped_defaults_asks_the_model_once_per_turn(tmp_path: Path) -> None:
    """memory.enableManagedAutoMemory=false (deploy/engine-config/qwen/default.json): without
    it qwen may follow a run with a memory-extraction request (the whole conversation sent to
    the model again) whose result lands in the run's throwaway home."""
    shipped = load_engine_config("qwen", skill_dir=None, user=None)
    assert shipped["settings"]["memory"]["enableManagedAutoMemory"] is False
    run = run_scenario(ADAPTER, tmp_path, Script(tool=False, final_text=FINAL),
                       config={"env": shipped["env"], "settings": shipped["settings"]})
    assert run.output.error is None, run.stderr[-2000:]
    posts = [r for r in run.requests if r.method == "POST"]
    assert len(posts) == 1, [r.body[:300] for r in posts]
    assert not list((run.run_dir / ".home").rglob("memory/*.md"))


def test_qwen_runs_a_shell_tool_under_the_shipped_node_flags(tmp_path: Path) -> None:
    """node_flags ["--liftoff-only"] (deploy/engine-config/qwen/default.json): the CLI runs as
    `node --liftoff-only SCRIPT`, so V8 does not recompile the shell parser's WASM in the
    background, which the process would wait for at exit (~1 s per run with a shell call)."""
    shipped = load_engine_config("qwen", skill_dir=None, user=None)
    config = {key: shipped[key] for key in ("env", "settings", "node_flags")}
    run = run_scenario(ADAPTER, tmp_path, Script(command=PROBE_COMMAND, final_text=FINAL), config=config)
    assert Path(run.spec.argv[0]).name == "node" and run.spec.argv[1] == "--liftoff-only"
    assert run.output.error is None, run.stderr[-2000:]
    assert (run.run_dir / MARKER_FILE).read_text() == "probe"
    assert run.output.parsed_json == json.loads(FINAL)
