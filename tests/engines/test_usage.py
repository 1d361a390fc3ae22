"""Tokens and cost through the whole service for each real CLI: REST -> Redis -> worker -> CLI
-> fake LLM. The fake LLM reports cached input and reasoning in each wire format; a run records
what its CLI passes on (input with cached, output with reasoning, cost where the CLI prices the
run or the operator's price table names the model), and shows it in the job's status, its
result, the management state, the terminal event (the turn's share) and /metrics, by engine,
model and API token name."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict

import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from tests.engines.harness import fake_engine_config, require_binary
from tests.helpers import TOKENS, bearer, wait_for_job, write_tokens_file
from tests.integration.services import WorkerProcess, broker_settings

# kilo reads its usage with opencode's functions; its counts are checked at the adapter
# (test_kilo.py), where a run costs the same ~15 s of CPU and no worker
ENGINES = ["codex", "gemini", "opencode", "qwen", "claude"]
SUCCESS = Script(command="echo step", final_text='{"text": "hello", "length": 5}')
BOTH = {"input_tokens", "output_tokens"}
# what each CLI passes on beside input and output
REPORTED = {
    "codex": BOTH | {"cached_input_tokens", "reasoning_tokens"},
    "gemini": BOTH | {"cached_input_tokens", "reasoning_tokens"},
    "opencode": BOTH | {"cached_input_tokens", "reasoning_tokens"},
    "qwen": BOTH | {"cached_input_tokens"},
    "claude": BOTH | {"cached_input_tokens"},
}
# the operator prices codex's runs (by engine: a job naming no model runs the engine's default);
# the others keep their CLI's own figure (claude)
PRICES = {"codex": {"input": 2.0, "cached_input": 0.5, "output": 8.0}}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("usage")
    script_file = root / "llm-script.json"
    script_file.write_text(json.dumps(asdict(SUCCESS)))
    prices = root / "prices.yaml"
    prices.write_text(json.dumps({"models": PRICES}))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        config_dir = fake_engine_config(root / "engine-config", llm, ENGINES)
        worker = WorkerProcess(
            settings,
            "usage",
            settings.data_dir / "worker.log",
            concurrency=1,  # one run at a time: the fake LLM's answers are the run's
            extra_env={
                "SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir),
                "SKILL_RUNNER_PRICES_FILE": str(prices),
            },
        )
        tokens = write_tokens_file(root / "tokens.jsonl", TOKENS)
        api_settings = dataclasses.replace(settings, tokens_file=tokens, prices_file=prices)
        app = create_app({"SETTINGS": api_settings, "QUEUE": CeleryQueue(settings.broker_url)})
        try:
            yield {"client": app.test_client(), "llm": llm}
        finally:
            worker.stop()


def sent_counts(answers: list[dict[str, int]], keys: set[str]) -> dict[str, int]:
    return {key: sum(a.get(key, 0) for a in answers) for key in keys}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_run_records_the_tokens_and_cost_its_cli_reported(service, engine):
    require_binary(get_adapter(engine))
    client, llm = service["client"], service["llm"]
    before = len(llm.usage)
    resp = client.post(
        "/v1/jobs",
        headers=bearer("alice"),
        json={
            "skill_id": "echo-prompt",
            "engine": engine,
            "input": {"text": "hello"},
            "runtime_options": {"no_cache": True},
        },
    )
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    status = wait_for_job(client, rid, timeout=120, interval=0.1, headers=bearer("alice"))
    assert status["status"] == "succeeded", status
    usage = status["token_usage"]
    answers = llm.usage[before:]
    assert len(answers) >= 2  # the tool call and the final answer
    counted = {k: v for k, v in usage.items() if k != "cost_usd"}
    assert counted == sent_counts(answers, REPORTED[engine])
    assert usage["cached_input_tokens"] > 0
    if engine == "codex":  # the operator's price table
        cost = (
            (usage["input_tokens"] - usage["cached_input_tokens"]) * 2.0
            + usage["cached_input_tokens"] * 0.5
            + usage["output_tokens"] * 8.0
        ) / 1_000_000
        assert usage["cost_usd"] == pytest.approx(cost, abs=1e-6)
    elif engine == "claude":  # claude prices the run itself
        assert usage["cost_usd"] > 0
    # the same counts in the result, the management state and the terminal event
    assert (
        client.get(f"/v1/jobs/{rid}/result", headers=bearer("alice")).json["token_usage"] == usage
    )
    state = client.get(f"/v1/management/runs/{rid}", headers=bearer("alice")).json
    assert state["token_usage"] == usage
    events = client.get(f"/v1/jobs/{rid}/events/history", headers=bearer("alice")).json["events"]
    (terminal,) = [e for e in events if (e.get("data") or {}).get("terminal")]
    assert terminal["data"]["token_usage"] == usage  # one turn: all of it


def test_metrics_count_tokens_and_cost_by_engine_model_and_token_name(service):
    """After the runs above: counters labelled with the engine, the model and alice's name."""
    require_binary(get_adapter("codex"))
    text = service["client"].get("/metrics", headers=bearer("root")).get_data(as_text=True)
    lines = [line for line in text.splitlines() if line.startswith("skill_runner_tokens_total{")]
    for kind in ("input", "cached_input", "output", "reasoning"):
        wanted = f'engine="codex",kind="{kind}",model="default",token_name="alice"'
        found = [line for line in lines if wanted in line]
        assert found and float(found[0].rsplit(" ", 1)[1]) > 0, (kind, lines)
    cost = [line for line in text.splitlines() if line.startswith("skill_runner_cost_usd_total{")]
    assert any('engine="codex"' in line and 'token_name="alice"' in line for line in cost), cost
