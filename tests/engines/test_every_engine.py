"""The scenarios every engine goes through, for real against the fake LLM server: a shell tool
call and a final JSON answer, then the session resumed; the installed skill listed to the model
and where the prompt goes (argv, or stdin when too long); a failed model call and a missing key.

Adding an engine means adding a row to ENGINES; its own module (test_<engine>.py, where it has
one) keeps what only it does.
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
from tests.engines.harness import (
    MARKER_FILE,
    PROBE_BODY_TOKEN,
    PROBE_COMMAND,
    PROBE_TOKEN,
    ScenarioResult,
    counted_as_sent,
)

Scenario = Callable[..., ScenarioResult]
NO_KEY = {"api_key": None, "api_key_env": "UNSET_FAKE_KEY_VAR"}


@dataclass(frozen=True)
class Engine:
    """How one CLI is run in these scenarios and what it is expected to do."""

    name: str
    tool_call: dict[str, Any]  # what the one tool call of a shell turn holds (among its keys)
    model_path: str  # where its model requests go (the start of their path)
    config: dict[str, Any] = field(default_factory=dict)  # merged into every run's config
    session_prefix: str = ""  # how its session ids start
    # the config under which an HTTP 401 is reported at once; None: not tested
    no_retries: dict[str, Any] | None = None
    # one model request per step, none on the side (opencode and kilo name the session with
    # --title; without it, they ask the model for a title first)
    one_request_per_step: bool = False
    # an HTTP 400 (and a 401, see no_retries) is reported within this many seconds (a CLI
    # that retries takes minutes; its own start takes up to ~17 s on a slow, loaded machine)
    http_error_seconds: float = 25.0
    # the exit codes an HTTP 400 may end the CLI with, where they are known (every version the
    # engine matrix runs: docs/engine-matrix.md)
    http_error_exits: tuple[int, ...] | None = None
    # a missing key: True, reported before any request; False, no request check; None, no test
    auth_before_requests: bool | None = False

    @property
    def final(self) -> str:
        return json.dumps({"status": "ok", "engine": self.name})


def shipped_offline(engine: str) -> dict[str, Any]:
    """The shipped defaults keep opencode and kilo off the network (no update check, no plugin
    install, no telemetry)."""
    shipped = load_engine_config(engine, skill_dir=None, user=None)
    return {"env": shipped.get("env", {}), "settings": shipped.get("settings", {})}


ENGINES = [
    Engine(
        "claude",
        tool_call={"name": "Bash", "is_error": False},
        model_path="/v1/messages",
        no_retries={"env": {"CLAUDE_CODE_MAX_RETRIES": "0"}},
        http_error_seconds=10.0,
    ),
    Engine(
        "codex",
        tool_call={"type": "command_execution"},
        model_path="/v1/responses",
        no_retries={
            "settings": {
                "model_providers": {
                    "skillrunner": {"stream_max_retries": 0, "request_max_retries": 0}
                }
            }
        },
        http_error_seconds=10.0,
    ),
    Engine(
        "gemini",
        tool_call={"name": "run_shell_command"},
        model_path="/v1beta/models/",
        auth_before_requests=True,
    ),
    Engine(
        "qwen",
        tool_call={"name": "run_shell_command"},
        model_path="/v1/chat/completions",
        http_error_exits=(0, 1),  # API failures exit 0 up to 0.15, 1 from 0.24 on
        auth_before_requests=True,
    ),
    Engine(
        "opencode",
        tool_call={"name": "bash"},
        model_path="/v1/chat/completions",
        config=shipped_offline("opencode"),
        session_prefix="ses_",
        one_request_per_step=True,
        http_error_exits=(1,),
        auth_before_requests=None,
    ),
    Engine(
        "kilo",
        tool_call={"name": "bash"},
        model_path="/v1/chat/completions",
        config=shipped_offline("kilo"),
        session_prefix="ses_",
        one_request_per_step=True,
        # kilo starts slowly (a 170 MB single-file binary: ~25 s of CPU per run on a busy
        # 2-core machine); test_kilo.py checks that an HTTP 401 is not retried
        http_error_seconds=150.0,
        http_error_exits=(1,),
        auth_before_requests=None,  # no key: kilo sends its requests without one
    ),
]


each_engine = pytest.mark.parametrize("engine", ENGINES, ids=lambda engine: engine.name)


def model_requests(run: ScenarioResult) -> list[str]:
    """The paths of the run's requests to the model (POSTs; not the model list)."""
    return [r.path for r in run.requests if r.method == "POST"]


def tool_turn(scenario: Scenario, engine: Engine, **kwargs: Any) -> ScenarioResult:
    """One turn in which the model calls the shell tool (running the probe), then answers."""
    script = Script(command=PROBE_COMMAND, final_text=engine.final)
    return scenario(get_adapter(engine.name), script, config=engine.config, **kwargs)


def answer_turn(scenario: Scenario, engine: Engine, **kwargs: Any) -> ScenarioResult:
    """One turn in which the model answers at once, calling no tool."""
    script = Script(tool=False, final_text=engine.final)
    return scenario(get_adapter(engine.name), script, config=engine.config, **kwargs)


@each_engine
def test_a_shell_tool_turn_ends_in_parsed_json_and_its_resumed_session_continues(
    scenario: Scenario, engine: Engine
) -> None:
    # one session for both checks: each run of a CLI costs seconds of CPU (kilo's ~15)
    first = tool_turn(scenario, engine)
    out = first.output
    assert out.error is None, (out.error, first.stderr[-2000:])
    assert out.exit_code == 0
    assert (first.run_dir / MARKER_FILE).read_text() == "probe"
    assert out.parsed_json == json.loads(engine.final)
    assert out.session_id and out.session_id.startswith(engine.session_prefix)
    assert [{k: call.get(k) for k in engine.tool_call} for call in out.tool_calls] == [
        engine.tool_call
    ]
    assert out.tokens is not None
    assert out.tokens["input_tokens"] > 0 and out.tokens["output_tokens"] > 0
    if engine.one_request_per_step:
        assert len(model_requests(first)) == 2

    (first.run_dir / MARKER_FILE).unlink()
    second = tool_turn(
        scenario, engine, prompt="again", run_dir=first.run_dir, session_id=out.session_id
    )
    assert second.output.error is None, second.stderr[-2000:]
    assert second.output.session_id == out.session_id
    assert (first.run_dir / MARKER_FILE).exists()
    assert "again" in second.request_text
    assert PROBE_COMMAND in second.request_text  # the first turn's history was sent again
    if engine.one_request_per_step:
        assert len(model_requests(second)) == 2
    # each turn counts its own tokens and cost, not the session's running total
    assert counted_as_sent(out.tokens, first.usage), (out.tokens, first.usage)
    turn = second.output.tokens
    assert counted_as_sent(turn, second.usage), (turn, second.usage)
    if out.tokens.get("cost_usd") and turn:
        assert turn["cost_usd"] < 1.5 * out.tokens["cost_usd"], (turn, out.tokens)


@each_engine
def test_a_prompt_starting_with_a_dash_reaches_the_model_with_the_skill_listed_unread(
    scenario: Scenario, engine: Engine
) -> None:
    prompt = "- use the probe skill --now"
    run = answer_turn(scenario, engine, prompt=prompt)
    assert run.spec.stdin is None
    assert run.output.error is None, run.stderr[-2000:]
    assert prompt in run.request_text
    assert PROBE_TOKEN in run.request_text
    assert PROBE_BODY_TOKEN not in run.request_text  # listed, not yet activated
    assert all(path.startswith(engine.model_path) for path in model_requests(run))
    if engine.one_request_per_step:
        assert len(model_requests(run)) == 1


@pytest.mark.parametrize(
    "engine", [e for e in ENGINES if e.no_retries is not None], ids=lambda engine: engine.name
)
def test_http_401_is_a_model_api_error_quickly(scenario: Scenario, engine: Engine) -> None:
    run = scenario(
        get_adapter(engine.name),
        Script(status=401, error_message="bad key"),
        config={**engine.config, **(engine.no_retries or {})},
        timeout=engine.http_error_seconds + 15,
    )
    assert run.output.error is not None and run.output.error.code == "MODEL_API_ERROR"
    assert run.output.error.details.get("status") == 401
    assert run.seconds < engine.http_error_seconds


@each_engine
def test_a_prompt_too_long_for_argv_is_read_from_stdin(scenario: Scenario, engine: Engine) -> None:
    prompt = "ZQXLONG55 Use the probe skill. " + "pad " * 40_000 + "TAILTOKEN91"
    run = answer_turn(scenario, engine, prompt=prompt)
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
        timeout=engine.http_error_seconds + 15,
    )
    assert run.output.error is not None and run.output.error.code == "MODEL_API_ERROR"
    assert run.output.error.details.get("status") == 400
    assert "bad request" in run.output.error.message  # the provider's words, not its JSON
    assert '"error"' not in run.output.error.message
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


@each_engine
def test_a_turn_stopped_mid_call_counts_the_tokens_of_the_answers_before(
    scenario: Scenario, engine: Engine
) -> None:
    # two answers (tool calls), then the final answer is held until the CLI is stopped
    script = Script(command="echo step", final_text=engine.final, rounds=2, stall_sec=300)
    run = scenario(
        get_adapter(engine.name),
        script,
        config=engine.config,
        stop_when=lambda llm: llm.holding > 0,
    )
    assert run.process.canceled and run.output.final_text is None
    assert run.usage["input_tokens"] > 0  # the fake LLM answered before it held
    assert counted_as_sent(run.output.tokens, run.usage), (run.output.tokens, run.usage)
