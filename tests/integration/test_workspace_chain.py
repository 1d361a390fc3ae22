"""The Zotero plugin's chained workflow end to end: API -> Redis -> worker -> the real codex CLI
-> fake LLM for the engine steps, a script skill in between. Each step after the first sends
`runtime_options.workspace = {mode: "reuse", request_id, file_bindings}` and reads
`workspaceDir`/`resultJsonPath` from the status and its result document from the bundle."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from runner_core.settings import REPO_ROOT
from tests.engines.harness import require_binary

pytestmark = [pytest.mark.integration, pytest.mark.engines]

RESULT = {"text": "hello", "length": 5}


def script(command: str) -> str:
    return json.dumps(
        Script(
            command=command, final_text="Done:\n```json\n" + json.dumps(RESULT) + "\n```"
        ).__dict__
    )


@pytest.fixture
def script_file(tmp_path):
    path = tmp_path / "llm-script.json"
    path.write_text(script("printf '10 is the bound' > artifacts/note.txt"))
    return path


@pytest.fixture
def codex_stack(bare_stack, script_file, tmp_path):
    require_binary(get_adapter("codex"))
    with FakeLLM(script_file) as llm:  # the script is re-read on every request
        config_dir = tmp_path / "engine-config"
        shutil.copytree(REPO_ROOT / "deploy" / "engine-config", config_dir)
        (config_dir / "codex").mkdir(exist_ok=True)
        (config_dir / "codex" / "enforced.json").write_text(
            json.dumps(
                {"base_url": f"{llm.base_url}/v1", "api_key": "fake-key", "model": "fake-model"}
            )
        )
        bare_stack.start_worker(extra_env={"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir)})
        yield bare_stack


def bundle_names(client, rid: str) -> set[str]:
    resp = client.get(f"/v1/jobs/{rid}/bundle")
    assert resp.status_code == 200
    return set(zipfile.ZipFile(io.BytesIO(resp.data)).namelist())


def succeeded(stack, rid: str) -> dict:
    status = stack.wait(rid, timeout=90)
    assert status["status"] == "succeeded", (status, stack.client.get(f"/v1/jobs/{rid}/logs").json)
    return status


def test_three_steps_share_one_workspace(codex_stack, script_file):
    client, runs = codex_stack.client, codex_stack.settings.runs_dir
    # step 1: an engine step that writes a file
    first = client.post(
        "/v1/jobs", json={"skill_id": "echo-prompt", "engine": "codex", "input": {"text": "hi"}}
    ).json["request_id"]
    s1 = succeeded(codex_stack, first)
    assert s1["workspaceDir"] == s1["workspace_dir"] == str(runs / s1["run_id"])
    assert s1["resultJsonPath"] == str(runs / s1["run_id"] / "result/echo-prompt.1/result.json")

    # step 2: a script step whose file input is bound to step 1's file: no upload
    target = "inputs/input_file/note.txt"
    resp = client.post(
        "/v1/jobs",
        json={
            "skill_id": "demo-prime-number",
            "input": {"input_file": target},
            "runtime_options": {
                "workspace": {
                    "mode": "reuse",
                    "request_id": first,
                    "file_bindings": [
                        {
                            "input_key": "input_file",
                            "source_request_id": first,
                            "source_path": "artifacts/note.txt",
                            "target_path": target,
                        }
                    ],
                }
            },
        },
    )
    assert resp.status_code == 200, resp.json
    second = resp.json["request_id"]
    s2 = succeeded(codex_stack, second)
    assert s2["run_id"] != s1["run_id"]
    data = client.get(f"/v1/jobs/{second}/result").json["result"]["data"]
    assert data["bound"] == 10 and data["primes"] == [2, 3, 5, 7]
    run2 = runs / s2["run_id"]
    assert s2["workspaceDir"] == str(run2)
    assert s2["resultJsonPath"] == str(run2 / "result/demo-prime-number.1/result.json")
    assert (run2 / "uploads" / target).read_text() == "10 is the bound"
    assert (run2 / "artifacts/note.txt").read_text() == "10 is the bound"  # step 1's workspace
    # each run keeps its own records: step 1's document stays in step 1's run, and step 2's
    # directory holds step 1's under its namespace beside its own
    step1_doc = json.loads((runs / s1["run_id"] / "result/result.json").read_text())
    assert step1_doc["data"] == RESULT
    assert json.loads((run2 / "result/echo-prompt.1/result.json").read_text()) == step1_doc
    own = json.loads(Path(s2["resultJsonPath"]).read_text())
    assert own == json.loads((run2 / "result/result.json").read_text()) and own["data"] == data
    assert not (run2 / "logs" / "prompt.txt").exists()  # step 1's prompt is not step 2's log
    names = bundle_names(client, second)
    assert {"result/demo-prime-number.1/result.json", "result/echo-prompt.1/result.json"} <= names

    # step 3: an engine step again, in step 2's workspace, reading step 2's artifact
    script_file.write_text(script("cp artifacts/primes.md artifacts/seen.md"))
    third = client.post(
        "/v1/jobs",
        json={
            "skill_id": "echo-prompt",
            "engine": "codex",
            "input": {"text": "again"},
            "runtime_options": {"workspace": {"mode": "reuse", "request_id": second}},
        },
    ).json["request_id"]
    s3 = succeeded(codex_stack, third)
    run3 = runs / s3["run_id"]
    assert "2, 3, 5, 7" in (run3 / "artifacts/seen.md").read_text()
    # the same skill again: the next namespace of it
    assert s3["resultJsonPath"] == str(run3 / "result/echo-prompt.2/result.json")
    names = bundle_names(client, third)
    assert {
        "result/echo-prompt.1/result.json",
        "result/demo-prime-number.1/result.json",
        "result/echo-prompt.2/result.json",
    } <= names
    # step 2's files were taken over, not moved: its run is as it was
    assert json.loads((run2 / "result/result.json").read_text()) == own
    assert not (run2 / "artifacts/seen.md").exists()
