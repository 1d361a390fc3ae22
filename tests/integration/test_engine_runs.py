"""Prompt entrypoint end to end: API -> Redis -> worker -> the real codex CLI -> fake LLM."""
from __future__ import annotations

import json
import shutil

import pytest

from runner_core.engines import get_adapter
from runner_core.settings import REPO_ROOT
from tests.engines.harness import require_binary
from tests.fake_llm import FakeLLM, Script

pytestmark = [pytest.mark.integration, pytest.mark.engines]

RESULT = {"text": "hello", "length": 5}


@pytest.fixture
def llm():
    script = Script(command="printf 'made by codex' > artifacts/note.txt",
                    final_text="Here you go:\n```json\n" + json.dumps(RESULT) + "\n```")
    with FakeLLM(script) as server:
        yield server


@pytest.fixture
def codex_stack(bare_stack, llm, tmp_path):
    require_binary(get_adapter("codex"))
    config_dir = tmp_path / "engine-config"
    shutil.copytree(REPO_ROOT / "deploy" / "engine-config", config_dir)
    (config_dir / "codex").mkdir(exist_ok=True)
    (config_dir / "codex" / "enforced.json").write_text(json.dumps(
        {"base_url": f"{llm.base_url}/v1", "api_key": "fake-key", "model": "fake-model"}))
    bare_stack.start_worker(extra_env={"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir)})
    return bare_stack


def test_prompt_skill_runs_through_codex(codex_stack, llm):
    client = codex_stack.client
    rid = client.post("/v1/jobs", json={"skill_id": "echo-prompt", "engine": "codex",
                                        "input": {"text": "hello"}}).json["request_id"]
    status = codex_stack.wait(rid, timeout=90)
    assert status["status"] == "succeeded", (status, client.get(f"/v1/jobs/{rid}/logs").json)
    result = client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == RESULT
    assert result["artifacts"] == ["artifacts/note.txt"]
    assert [w["code"] for w in result["validation_warnings"]] == ["OUTPUT_NORMALIZED_N0"]
    run_dir = codex_stack.settings.runs_dir / status["run_id"]
    prompt = (run_dir / "logs" / "prompt.txt").read_text()
    assert prompt.startswith("Use the echo-prompt skill on this text: hello")
    assert "result/result.json" in prompt  # the output contract was appended
    assert (run_dir / ".agents" / "skills" / "echo-prompt" / "SKILL.md").is_file()
    assert "echo-prompt" in llm.request_text()  # the skill was advertised to the model
    assert (run_dir / "raw" / "engine_output.txt").read_text().startswith("Here you go")
