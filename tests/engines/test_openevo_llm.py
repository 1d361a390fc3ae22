"""A skill.json llm skill through the real codex CLI and the fake LLM: prompt.md is the
instruction, the input (defaults applied) and the output schema go with it, and the answer goes
through the whole output chain, N3 repair included."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict

import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from tests.engines.harness import fake_engine_config, require_binary
from tests.helpers import wait_for_job
from tests.integration.openevo_stack import OPENEVO_SKILLS
from tests.integration.services import WorkerProcess, broker_settings

REVIEW = {
    "issues": [{"severity": "high", "message": "hard-coded secret"}],
    "passed": False,
    "summary": "one problem",
}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("openevo-llm")
    script_file = root / "llm-script.json"
    script_file.write_text(json.dumps(asdict(Script())))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        shutil.copytree(OPENEVO_SKILLS, settings.skills_dir, dirs_exist_ok=True)
        config_dir = fake_engine_config(root / "engine-config", llm)
        worker = WorkerProcess(
            settings,
            "openevo-llm",
            settings.data_dir / "worker.log",
            extra_env={"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir)},
        )
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        try:
            yield {
                "client": app.test_client(),
                "script": script_file,
                "settings": settings,
                "llm": llm,
            }
        finally:
            worker.stop()


def review(service, script: Script, **options) -> tuple[dict, dict]:
    require_binary(get_adapter("codex"))
    service["script"].write_text(json.dumps(asdict(script)))
    client = service["client"]
    resp = client.post(
        "/v1/jobs",
        json={
            "skill_id": "code_review",
            "input": {"code": "password = 'hunter2'"},
            "runtime_options": {"no_cache": True, **options},
        },
    )
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    status = wait_for_job(client, rid, timeout=120, interval=0.1)
    return status, client.get(f"/v1/jobs/{rid}/result").json["result"]


def test_llm_skill_runs_through_codex(service):
    status, result = review(
        service,
        Script(command="echo reviewed", final_text="```json\n" + json.dumps(REVIEW) + "\n```"),
    )
    assert status["status"] == "succeeded", (status, result)
    assert status["engine"] == "codex"  # the first engine of the llm skill, none asked for
    assert result["data"] == REVIEW
    prompt = (service["settings"].runs_dir / status["run_id"] / "logs" / "prompt.txt").read_text()
    assert prompt.startswith("You review code.")  # prompt.md is the instruction
    assert '"severity": "all"' in prompt  # the input, its default applied
    assert '"passed"' in prompt and "# Output contract" in prompt
    assert "You review code." in service["llm"].request_text()


def test_an_answer_violating_output_is_repaired(service):
    # first turn: "passed" is missing; the resumed (repair) turn answers in full
    wrong = {"issues": [], "summary": "fine"}
    script = Script(
        command="if [ -f .seen ]; then echo '" + json.dumps(REVIEW) + "'; "
        "else touch .seen; echo '" + json.dumps(wrong) + "'; fi",
        final_text="$tool_output",
    )
    status, result = review(service, script, repair_rounds=1)
    assert status["status"] == "succeeded", (status, result)
    assert result["data"] == REVIEW
    assert "OUTPUT_REPAIRED_N3" in [w["code"] for w in result["validation_warnings"]]


def test_without_repair_the_violation_fails_the_run(service):
    script = Script(command="echo x", final_text=json.dumps({"issues": [], "summary": "s"}))
    status, _result = review(service, script)
    assert status["status"] == "failed" and status["error"]["code"] == "OUTPUT_VALIDATION_FAILED"


def test_the_headline_example_skill_runs_through_codex(service):
    require_binary(get_adapter("codex"))
    answer = {"headline": "Workers drain the queue"}
    script = Script(command="echo drafting", final_text=json.dumps(answer))
    service["script"].write_text(json.dumps(asdict(script)))
    client = service["client"]
    body = {"skill_id": "headline", "input": {"text": "Workers take runs from the queue."}}
    rid = client.post("/v1/jobs", json={**body, "runtime_options": {"no_cache": True}}).json[
        "request_id"
    ]
    status = wait_for_job(client, rid, timeout=120, interval=0.1)
    assert status["status"] == "succeeded", status
    assert client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == answer
    prompt = (service["settings"].runs_dir / status["run_id"] / "logs" / "prompt.txt").read_text()
    assert prompt.startswith("# headline") and '"style": "plain"' in prompt  # default applied
