"""A run's budget through the whole service with each real CLI: REST -> Redis -> worker -> CLI
-> fake LLM. The model makes one slow tool call after another; once the answers' tokens (what the
CLI wrote after each answer) reach the budget, in tokens or in USD from the operator's price
table, the CLI's process group is stopped and the run ends failed BUDGET_EXCEEDED, keeping its
logs and the tokens it spent."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from tests.engines.harness import RUN_SECONDS, fake_engine_config, require_binary
from tests.helpers import wait_for_job
from tests.integration.services import WorkerProcess, broker_settings

ROUNDS = 12  # tool calls the model would make, a second each
SLOW = Script(command="sleep 1; echo step", final_text='{"text": "x", "length": 1}', rounds=ROUNDS)
PRICES = {"codex": {"input": 10.0, "output": 40.0}}  # USD per million tokens
ENGINES = ["codex", "gemini", "opencode", "qwen", "claude", "kilo"]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("budgets")
    script_file = root / "llm-script.json"
    script_file.write_text(json.dumps(asdict(SLOW)))
    prices = root / "prices.yaml"
    prices.write_text(json.dumps(PRICES))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        config_dir = fake_engine_config(root / "engine-config", llm, ENGINES)
        worker = WorkerProcess(
            settings,
            "budgets",
            settings.data_dir / "worker.log",
            concurrency=1,
            extra_env={
                "SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir),
                "SKILL_RUNNER_PRICES_FILE": str(prices),
                "SKILL_RUNNER_KILL_GRACE_SEC": "2",
            },
        )
        settings = settings.__class__(**{**settings.__dict__, "prices_file": prices})
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        try:
            yield {"client": app.test_client(), "llm": llm, "settings": settings}
        finally:
            worker.stop()


# codex's prompt is ~20k tokens an answer: 60k is reached after a few answers; the other CLIs'
# prompts differ in size, and a budget of one token is reached by their first answer.
CASES = [
    ("codex", {"max_tokens": 60_000}),
    ("codex", {"max_usd": 0.6}),
    *[(engine, {"max_tokens": 1}) for engine in ENGINES if engine != "codex"],
]


@pytest.mark.parametrize(
    ("engine", "budget"),
    CASES,
    ids=[f"{engine}-{'tokens' if 'max_tokens' in b else 'usd'}" for engine, b in CASES],
)
def test_a_run_that_reaches_its_budget_mid_turn_is_stopped(service, engine, budget):
    require_binary(get_adapter(engine))
    client, llm = service["client"], service["llm"]
    before = len(llm.usage)
    resp = client.post(
        "/v1/jobs",
        json={
            "skill_id": "echo-prompt",
            "engine": engine,
            "input": {"text": "hello"},
            # the run's own time limit as long as the wait: the skill's 60 s is short for
            # kilo's start on a slow, loaded machine (harness.RUN_SECONDS)
            "runtime_options": {
                "no_cache": True,
                "budget": budget,
                "timeout_sec": int(RUN_SECONDS.get(engine, 60)),
            },
        },
    )
    assert resp.status_code == 200, resp.json
    timeout = RUN_SECONDS.get(engine, 120)
    status = wait_for_job(client, resp.json["request_id"], timeout=timeout, interval=0.2)
    assert status["status"] == "failed", status
    error = status["error"]
    assert error["code"] == "BUDGET_EXCEEDED", error
    assert error["budget"] == budget
    answers = len(llm.usage) - before
    least = 2 if budget.get("max_tokens", 0) > 1 else 1
    assert least <= answers < ROUNDS, answers  # stopped well before the model was done
    usage = status["token_usage"]
    spent = usage["input_tokens"] + usage["output_tokens"]
    assert error["spent"]["tokens"] == spent
    if "max_tokens" in budget:
        assert spent >= budget["max_tokens"]
    else:  # the price table's cost, recorded with the tokens
        assert usage["cost_usd"] >= budget["max_usd"]
        assert error["spent"]["usd"] == usage["cost_usd"]
    run_dir = service["settings"].runs_dir / status["run_id"]
    assert "step" in (run_dir / "logs" / "stdout.txt").read_text()  # its logs are kept
