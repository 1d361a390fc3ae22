"""codex for real against the fake LLM server (Responses API): what only codex does. The
scenarios every engine shares (a tool turn, the skill listed, resume, prompt passing, failed
model calls, a missing key) are in test_every_engine.py."""

from __future__ import annotations

from collections.abc import Callable

from fake_llm import Script
from runner_core.engines import get_adapter
from runner_core.engines.config import load_engine_config
from tests.engines.harness import PROBE_TOKEN, ScenarioResult

ADAPTER = get_adapter("codex")
FINAL = '{"status": "ok", "engine": "codex"}'

Scenario = Callable[..., ScenarioResult]


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


def test_codex_http_500_is_a_model_api_error_with_its_status(scenario: Scenario) -> None:
    # codex words a 500 as "We're currently experiencing high demand...", no status, no body
    no_retries = {"stream_max_retries": 0, "request_max_retries": 0}
    run = scenario(
        ADAPTER,
        Script(tool=False, status=500, error_message="upstream broke"),
        config={"settings": {"model_providers": {"skillrunner": no_retries}}},
        timeout=30,
    )
    error = run.output.error
    assert error is not None and error.code == "MODEL_API_ERROR", run.stdout[-2000:]
    assert error.details.get("status") == 500, error
