"""A composite's engine and model reach its llm steps: a service where only claude reaches a
model (the fake LLM) runs a composite whose llm step is nested one composite down, with the
job's engine and model, through the real worker and the real claude CLI."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict

import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from runner_core.settings import REPO_ROOT
from tests.engines.harness import FAKE_KEY, require_binary
from tests.helpers import wait_for_job
from tests.integration.openevo_stack import OPENEVO_SKILLS
from tests.integration.services import WorkerProcess, broker_settings

REVIEW = {"issues": [], "passed": True, "summary": "looks fine"}
MODEL = "claude-haiku-4-5"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("composite-engines")
    script_file = root / "llm-script.json"
    answer = Script(command="echo reviewed", final_text=json.dumps(REVIEW))
    script_file.write_text(json.dumps(asdict(answer)))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        shutil.copytree(OPENEVO_SKILLS, settings.skills_dir, dirs_exist_ok=True)
        config_dir = root / "engine-config"
        shutil.copytree(REPO_ROOT / "deploy" / "engine-config", config_dir)
        # only claude reaches a model, and the model is the request's (none enforced)
        enforced = {"base_url": llm.base_url, "api_key": FAKE_KEY}
        (config_dir / "claude" / "enforced.json").write_text(json.dumps(enforced))
        worker = WorkerProcess(
            settings,
            "composite-engines",
            settings.data_dir / "worker.log",
            extra_env={"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir)},
        )
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        try:
            yield {"client": app.test_client(), "llm": llm}
        finally:
            worker.stop()


def children_of(client, result: dict) -> list[dict]:
    """The status of each step's child run of a composite's result, in step order."""
    return [client.get(f"/v1/jobs/{step['request_id']}").json for step in result["steps"]]


def test_a_nested_llm_step_runs_on_the_composites_engine_and_model(service):
    require_binary(get_adapter("claude"))
    client = service["client"]
    body = {
        "skill_id": "nested_review",
        "engine": "claude",
        "model": MODEL,
        "input": {"code": "x = 1"},
        "runtime_options": {"no_cache": True},
    }
    resp = client.post("/v1/jobs", json=body)
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    status = wait_for_job(client, rid, timeout=180, interval=0.2)
    result = client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert status["status"] == "succeeded", (status, result)
    assert result["data"] == {"summary": "looks fine"}
    assert status["engine"] is None  # the composite itself runs on no engine
    assert status["warnings"] == []
    (inner,) = children_of(client, result)
    assert inner["engine"] is None and inner["model"] == MODEL  # handed on to its steps
    inner_result = client.get(f"/v1/jobs/{inner['request_id']}/result").json["result"]
    loud, review = children_of(client, inner_result)
    assert (loud["skill_id"], loud["engine"], loud["model"]) == ("shout", None, None)
    assert (review["skill_id"], review["engine"], review["model"]) == (
        "code_review",
        "claude",
        MODEL,
    )
    calls = [r for r in service["llm"].requests if r.path.startswith("/v1/messages")]
    assert calls, "claude never reached the fake LLM"
    assert {r.body.get("model") for r in calls if isinstance(r.body, dict)} == {MODEL}
    assert "X = 1" in service["llm"].request_text()  # the code step's output went in


def test_an_index_file_composites_call_runs_on_its_engine_and_model(service):
    require_binary(get_adapter("claude"))
    client = service["client"]
    body = {
        "skill_id": "review_in_code",
        "engine": "claude",
        "model": MODEL,
        "input": {"code": "y = 2"},
        "runtime_options": {"no_cache": True},
    }
    resp = client.post("/v1/jobs", json=body)
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    status = wait_for_job(client, rid, timeout=180, interval=0.2)
    result = client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert status["status"] == "succeeded", (status, result)
    assert result["data"] == {"summary": "looks fine"}
    assert status["engine"] is None and status["warnings"] == []
    calls = client.get(f"/v1/jobs/{rid}/events/history").json
    started = [e for e in calls["events"] if e.get("type") == "step.started"]
    (call,) = [e["data"]["request_id"] for e in started]
    child = client.get(f"/v1/jobs/{call}").json
    assert (child["skill_id"], child["engine"], child["model"]) == ("code_review", "claude", MODEL)
