"""What only kilo does, for real against the fake LLM server (the scenarios every engine goes
through are in test_every_engine.py): its usage record, summed over the steps of a turn, its
settings kept in the run's HOME, and a refused key reported at once, not retried."""

from __future__ import annotations

import json
from collections.abc import Callable

from fake_llm import Script
from runner_core.engines import get_adapter
from runner_core.engines.kilo import SETTINGS_PATH
from tests.engines.harness import MARKER_FILE, PROBE_COMMAND, ScenarioResult, counted_as_sent
from tests.engines.test_every_engine import ENGINES, model_requests

KILO = next(engine for engine in ENGINES if engine.name == "kilo")


def test_a_tool_turn_reports_the_tokens_the_model_answered_with_summed_over_its_steps(
    scenario: Callable[..., ScenarioResult],
) -> None:
    run = scenario(
        get_adapter("kilo"),
        Script(command=PROBE_COMMAND, final_text=KILO.final),
        config=KILO.config,
    )
    out = run.output
    assert out.error is None, run.stderr[-2000:]
    assert (run.run_dir / MARKER_FILE).read_text() == "probe"
    assert out.parsed_json == json.loads(KILO.final)
    # two steps (the tool call, the answer); their counts add up to the fake model's
    assert counted_as_sent(out.tokens, run.usage) and run.usage["input_tokens"] > 0
    assert out.tokens["cached_input_tokens"] > 0 and out.tokens["reasoning_tokens"] > 0
    # as opencode counts them: cache reads beside input, reasoning beside output
    u = out.usage
    assert u["input"] + u["cache_read"] + u["cache_write"] == run.usage["input_tokens"]
    assert u["output"] + u["reasoning"] == run.usage["output_tokens"]
    assert {"reasoning", "cache_read", "cache_write", "cost"} <= set(out.usage)
    # the settings (with the key's {env:...} reference) live in the run's HOME, not its folder
    assert (run.run_dir / ".home" / SETTINGS_PATH).is_file()
    assert not (run.run_dir / "kilo.json").exists()


def test_http_401_is_a_model_api_error_after_one_request(
    scenario: Callable[..., ScenarioResult],
) -> None:
    run = scenario(
        get_adapter("kilo"), Script(status=401, error_message="bad key"), config=KILO.config
    )
    assert run.output.error is not None and run.output.error.code == "MODEL_API_ERROR"
    assert run.output.error.details.get("status") == 401
    assert run.output.exit_code == 1
    assert len(model_requests(run)) == 1  # no retry loop: the run ends as kilo gets the answer
    assert run.seconds < KILO.http_error_seconds
