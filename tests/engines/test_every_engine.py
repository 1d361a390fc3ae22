"""The scenarios every engine goes through, for real against the fake LLM server: where the
prompt goes (argv, or stdin when too long), a failed model call and a missing key.

Adding an engine means adding a row to ENGINES; its own module keeps what only it does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from fake_llm import Script
from runner_core.engines import get_adapter
from runner_core.engines.config import load_engine_config
from tests.engines.harness import ScenarioResult

Scenario = Callable[..., ScenarioResult]
NO_KEY = {"api_key": None, "api_key_env": "UNSET_FAKE_KEY_VAR"}


@dataclass(frozen=True)
class Engine:
    """How one CLI is run in these scenarios and what it is expected to do."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)  # merged into every run's config
    http_error_seconds: float = 15.0  # an HTTP 400 is reported within this time
    # the exit codes an HTTP 400 may end the CLI with, where they are known (every version the
    # engine matrix runs: docs/engine-matrix.md)
    http_error_exits: tuple[int, ...] | None = None
    # a missing key: True, reported before any request; False, no request check; None, no test
    auth_before_requests: bool | None = False

    @property
    def final(self) -> str:
        return json.dumps({"status": "ok", "engine": self.name})


def _opencode_offline() -> dict[str, Any]:
    """The shipped defaults keep opencode off the network (no update check, no plugin install)."""
    shipped = load_engine_config("opencode", skill_dir=None, user=None)
    return {"env": shipped.get("env", {}), "settings": shipped.get("settings", {})}


ENGINES = [
    Engine("claude", http_error_seconds=10.0),
    Engine("codex", http_error_seconds=10.0),
    Engine("gemini", auth_before_requests=True),
    # API failures exit 0 up to 0.15, 1 from 0.24 on
    Engine("qwen", http_error_exits=(0, 1), auth_before_requests=True),
    Engine(
        "opencode", config=_opencode_offline(), http_error_exits=(1,), auth_before_requests=None
    ),
]


each_engine = pytest.mark.parametrize("engine", ENGINES, ids=lambda engine: engine.name)


@each_engine
def test_a_prompt_starting_with_a_dash_reaches_the_model(
    scenario: Scenario, engine: Engine
) -> None:
    prompt = "- use the probe skill --now"
    run = scenario(
        get_adapter(engine.name),
        Script(tool=False, final_text=engine.final),
        prompt=prompt,
        config=engine.config,
    )
    assert run.spec.stdin is None
    assert run.output.error is None, run.stderr[-2000:]
    assert prompt in run.request_text


@each_engine
def test_a_prompt_too_long_for_argv_is_read_from_stdin(scenario: Scenario, engine: Engine) -> None:
    prompt = "ZQXLONG55 Use the probe skill. " + "pad " * 40_000 + "TAILTOKEN91"
    run = scenario(
        get_adapter(engine.name),
        Script(tool=False, final_text=engine.final),
        prompt=prompt,
        config=engine.config,
    )
    assert run.spec.stdin == prompt
    assert run.output.error is None, run.stderr[-2000:]
    assert run.output.parsed_json == json.loads(engine.final)
    assert "ZQXLONG55" in run.request_text and "TAILTOKEN91" in run.request_text


@each_engine
def test_http_400_is_a_model_api_error_quickly(scenario: Scenario, engine: Engine) -> None:
    run = scenario(
        get_adapter(engine.name),
        Script(status=400, error_message="bad request"),
        config=engine.config,
        timeout=30,
    )
    assert run.output.error is not None and run.output.error.code == "MODEL_API_ERROR"
    assert run.output.error.details.get("status") == 400
    if engine.http_error_exits is not None:
        assert run.output.exit_code in engine.http_error_exits
    assert run.seconds < engine.http_error_seconds


@pytest.mark.parametrize(
    "engine",
    [e for e in ENGINES if e.auth_before_requests is not None],
    ids=lambda engine: engine.name,
)
def test_without_api_key_is_auth_missing(scenario: Scenario, engine: Engine) -> None:
    run = scenario(
        get_adapter(engine.name), Script(), config={**engine.config, **NO_KEY}, timeout=30
    )
    assert run.output.error is not None and run.output.error.code == "AUTH_MISSING"
    if engine.auth_before_requests:
        assert not run.requests
