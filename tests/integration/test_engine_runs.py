"""Prompt entrypoint end to end: API -> Redis -> worker -> the real codex CLI -> fake LLM."""

from __future__ import annotations

import json
import shutil

import pytest

from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from runner_core.settings import REPO_ROOT
from tests.engines.harness import require_binary
from tests.integration.lifecycle_helpers import parse_iso, run_row

pytestmark = [pytest.mark.integration, pytest.mark.engines]

RESULT = {"text": "hello", "length": 5}


DEFAULT_SCRIPT = Script(
    command="printf 'made by codex' > artifacts/note.txt",
    final_text="Here you go:\n```json\n" + json.dumps(RESULT) + "\n```",
)
# First turn prints JSON missing "length"; any later turn (the N3 repair) prints valid JSON.
TWO_TURNS = Script(
    command=f"if [ -f .seen ]; then echo '{json.dumps(RESULT)}'; "
    f"else touch .seen; echo '{json.dumps({'text': 'hello'})}'; fi",
    final_text="$tool_output",
)


@pytest.fixture(scope="module")
def backend():
    """SQLite only: what is tested is the CLI's way through the worker; a run's SQL is the same
    for every entrypoint, and tests/integration/test_runs.py runs it on both databases."""
    return "sqlite"


@pytest.fixture
def script_file(tmp_path):
    path = tmp_path / "llm-script.json"
    path.write_text(json.dumps(DEFAULT_SCRIPT.__dict__))
    return path


@pytest.fixture
def llm(script_file):
    with FakeLLM(script_file) as server:  # the script is re-read on every request
        yield server


@pytest.fixture
def codex_stack(bare_stack, llm, tmp_path):
    require_binary(get_adapter("codex"))
    config_dir = tmp_path / "engine-config"
    shutil.copytree(REPO_ROOT / "deploy" / "engine-config", config_dir)
    (config_dir / "codex").mkdir(exist_ok=True)
    (config_dir / "codex" / "enforced.json").write_text(
        json.dumps({"base_url": f"{llm.base_url}/v1", "api_key": "fake-key", "model": "fake-model"})
    )
    bare_stack.start_worker(extra_env={"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir)})
    return bare_stack


def test_prompt_skill_runs_through_codex(codex_stack, llm):
    client = codex_stack.client
    rid = client.post(
        "/v1/jobs", json={"skill_id": "echo-prompt", "engine": "codex", "input": {"text": "hello"}}
    ).json["request_id"]
    status = codex_stack.wait(rid, timeout=90)
    assert status["status"] == "succeeded", (status, client.get(f"/v1/jobs/{rid}/logs").json)
    result = client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == RESULT
    assert result["artifacts"] == ["artifacts/note.txt"]
    # the skill's `network: off` holds: codex reached its model only (its network box)
    assert [w["code"] for w in result["validation_warnings"]] == ["OUTPUT_NORMALIZED_N0"]
    run_dir = codex_stack.settings.runs_dir / status["run_id"]
    prompt = (run_dir / "logs" / "prompt.txt").read_text()
    assert prompt.startswith("Use the echo-prompt skill on this text: hello")
    assert "result/result.json" in prompt  # the output contract was appended
    assert (run_dir / ".agents" / "skills" / "echo-prompt" / "SKILL.md").is_file()
    assert "echo-prompt" in llm.request_text()  # the skill was advertised to the model
    assert (run_dir / "raw" / "engine_output.txt").read_text().startswith("Here you go")
    # the CLI's start is recorded as a wall-clock time within the run (reply latency reads it)
    started_at = parse_iso(status["started_at"]).timestamp()
    engine_started = run_row(codex_stack, status["run_id"]).timings["engine_started_at"]
    assert started_at < engine_started < parse_iso(status["finished_at"]).timestamp()


def test_invalid_output_is_repaired_at_n3_when_enabled(codex_stack, script_file):
    script_file.write_text(json.dumps(TWO_TURNS.__dict__))
    client = codex_stack.client
    rid = client.post(
        "/v1/jobs",
        json={
            "skill_id": "echo-prompt",
            "engine": "codex",
            "input": {"text": "hello"},
            "runtime_options": {"repair_rounds": 1},
        },
    ).json["request_id"]
    status = codex_stack.wait(rid, timeout=90)
    assert status["status"] == "succeeded", client.get(f"/v1/jobs/{rid}/logs").json
    result = client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == RESULT
    assert "OUTPUT_REPAIRED_N3" in [w["code"] for w in result["validation_warnings"]]


def test_invalid_output_fails_with_validation_errors_when_n3_is_off(codex_stack, script_file):
    script_file.write_text(json.dumps(TWO_TURNS.__dict__))
    client = codex_stack.client
    rid = client.post(
        "/v1/jobs", json={"skill_id": "echo-prompt", "engine": "codex", "input": {"text": "hello"}}
    ).json["request_id"]
    status = codex_stack.wait(rid, timeout=90)
    assert status["status"] == "failed"
    assert status["error"]["code"] == "OUTPUT_VALIDATION_FAILED"
    assert any("length" in e["message"] for e in status["error"]["validation_errors"])
    assert status["error"]["raw_output_path"] == "raw/engine_output.txt"


def test_hard_timeout_seconds_of_skill_runners_clients_ends_a_codex_run_timeout(
    codex_stack, script_file
):
    """Skill-Runner's clients send the run's limit as runtime_options.hard_timeout_seconds:
    it is the run's time limit (the default here is minutes; the model stalls 60 s)."""
    script_file.write_text(json.dumps({**DEFAULT_SCRIPT.__dict__, "stall_sec": 60.0}))
    client = codex_stack.client
    resp = client.post(
        "/v1/jobs",
        json={
            "skill_id": "echo-prompt",
            "engine": "codex",
            "input": {"text": "slow"},
            "runtime_options": {"hard_timeout_seconds": 4, "no_cache": True},
        },
    )
    assert resp.status_code == 200, resp.json
    status = codex_stack.wait(resp.json["request_id"], timeout=40)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT", status
    took = (parse_iso(status["finished_at"]) - parse_iso(status["started_at"])).total_seconds()
    assert took < 20, took
