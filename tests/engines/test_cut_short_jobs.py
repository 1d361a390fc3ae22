"""A codex run cut short through the whole service keeps the tokens it spent: REST -> Redis ->
worker -> codex -> fake LLM. The model answers a few tool calls, then holds its next answer;
the run ends at its time limit, on a cancel, or on a signal to its pool process (Flower's
revoke with terminate, Celery's soft time limit), and its `token_usage` is what the fake LLM
reported for the answers it sent (codex logs them in its session log after each answer; its
JSON stream prints them only when the turn completes)."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import asdict

import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from tests.engines.harness import fake_engine_config, require_binary
from tests.helpers import wait_for, wait_for_job
from tests.integration.services import WorkerProcess, broker_settings

ROUNDS = 4  # tool calls answered before the model stalls
STALLING = Script(command="echo step", final_text='{"text": "x", "length": 1}', rounds=ROUNDS)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """One worker and one fake LLM for the module (the engine tier's usual setup, for codex)."""
    require_binary(get_adapter("codex"))
    root = tmp_path_factory.mktemp("cut-short")
    script_file = root / "llm-script.json"
    script_file.write_text(json.dumps(asdict(STALLING)))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        config_dir = fake_engine_config(root / "engine-config", llm)
        worker = WorkerProcess(
            settings,
            "cut-short",
            settings.data_dir / "worker.log",
            concurrency=1,
            extra_env={
                "SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir),
                "SKILL_RUNNER_KILL_GRACE_SEC": "2",
            },
        )
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        try:
            yield {"client": app.test_client(), "script": script_file, "llm": llm}
        finally:
            worker.stop()


def start_stalling_run(service, stall_sec: float, **options) -> tuple[str, int]:
    """A codex job whose model stalls after ROUNDS answers; (request id, the number of answers
    the fake LLM had sent before)."""
    service["script"].write_text(json.dumps(asdict(STALLING) | {"stall_sec": stall_sec}))
    sent_before = len(service["llm"].usage)
    resp = service["client"].post(
        "/v1/jobs",
        json={
            "skill_id": "echo-prompt",
            "engine": "codex",
            "input": {"text": "hello"},
            "runtime_options": {"no_cache": True, **options},
        },
    )
    assert resp.status_code == 200, resp.json
    return resp.json["request_id"], sent_before


def wait_for_the_stall(service, holding_before: int) -> None:
    """Until the model holds its answer after ROUNDS tool calls."""
    wait_for(lambda: service["llm"].holding > holding_before, 60, interval=0.1)


def reported_since(service, sent_before: int) -> dict[str, int]:
    """The token counts of the answers the fake LLM sent this run, added up."""
    answers = service["llm"].usage[sent_before:]
    assert len(answers) == ROUNDS, answers
    # codex passes every count on: input, cached input, output, reasoning
    return {key: sum(a[key] for a in answers) for key in answers[0]}


def test_a_run_that_times_out_records_the_tokens_it_used(service):
    holding = service["llm"].holding
    rid, sent_before = start_stalling_run(service, stall_sec=300, timeout_sec=15)
    wait_for_the_stall(service, holding)
    status = wait_for_job(service["client"], rid, timeout=60, interval=0.2)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT", status
    assert status["token_usage"] == reported_since(service, sent_before), status


def test_a_canceled_run_records_the_tokens_it_used(service):
    holding = service["llm"].holding
    rid, sent_before = start_stalling_run(service, stall_sec=300)
    wait_for_the_stall(service, holding)
    assert service["client"].post(f"/v1/jobs/{rid}/cancel").json["accepted"] is True
    status = wait_for_job(service["client"], rid, timeout=30, interval=0.2)
    assert status["status"] == "canceled", status
    assert status["token_usage"] == reported_since(service, sent_before), status


@pytest.mark.parametrize(
    "sig, status, code",
    [
        (signal.SIGTERM, "canceled", "CANCELED_BY_USER"),  # Flower's revoke with terminate
        (signal.SIGUSR1, "failed", "TIMEOUT"),  # Celery's soft time limit
    ],
)
def test_a_run_whose_pool_process_is_signaled_records_the_tokens_it_used(
    service, sig, status, code
):
    holding = service["llm"].holding
    rid, sent_before = start_stalling_run(service, stall_sec=300)
    wait_for_the_stall(service, holding)
    running = service["client"].get(f"/v1/jobs/{rid}").json
    os.kill(int(running["worker"].rsplit(":", 1)[1]), sig)
    ended = wait_for_job(service["client"], rid, timeout=30, interval=0.2)
    assert ended["status"] == status and ended["error"]["code"] == code, ended
    assert ended["token_usage"] == reported_since(service, sent_before), ended


def test_a_run_that_times_out_while_its_model_calls_fail_says_so(service):
    # the provider answers 500 to every call; codex retries until the run's time limit
    failing = Script(status=500, error_message="upstream overloaded")
    service["script"].write_text(json.dumps(asdict(failing)))
    resp = service["client"].post(
        "/v1/jobs",
        json={
            "skill_id": "echo-prompt",
            "engine": "codex",
            "input": {"text": "hello"},
            "runtime_options": {"no_cache": True, "timeout_sec": 6},
        },
    )
    assert resp.status_code == 200, resp.json
    status = wait_for_job(service["client"], resp.json["request_id"], timeout=60, interval=0.2)
    error = status["error"]
    assert status["status"] == "failed" and error["code"] == "TIMEOUT", status
    assert "model calls were failing" in error["message"], error
    assert error["engine_error"]["code"] == "MODEL_API_ERROR", error
