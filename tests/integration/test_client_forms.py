"""The Skill-Runner clients' request sequences end to end: API -> Redis -> worker -> the real
codex CLI -> fake LLM, on SQLite and Postgres.

- the Zotero plugin, installed skill: POST /v1/jobs {skill_id, input: {doc:
  "inputs/doc/<name>"}}, upload the file zipped at that path, poll, read the result;
- the Zotero plugin, local skill: POST /v1/jobs {skill_source: "temp_upload", ...}, upload
  `skill_package` (the skill under `<skill-id>/`) and `file`, poll /v1/jobs/{id};
- the REST e2e runner, installed skill without file inputs: POST /v1/jobs, an empty input zip
  uploaded anyway (200, nothing changes), poll, result;
- the REST e2e runner, one-off: JSON POST /v1/temp-skill-runs, upload `skill_package` and `file`
  (entries named by input key), poll /v1/temp-skill-runs/{id}, read result and bundle.
"""

from __future__ import annotations

import io
import json
import shutil
import time
import zipfile

import pytest

from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from runner_core.settings import REPO_ROOT
from tests.engines.harness import require_binary
from tests.helpers import zip_bytes

pytestmark = [pytest.mark.integration, pytest.mark.engines]

RESULT = {"text": "seen", "length": 4}
SKILL_ID = "file-prompt"


def skill_files(skill_id: str = SKILL_ID, prefix: str = "", inline: bool = False) -> dict[str, str]:
    """A codex prompt skill with one file input `doc` (.txt) and no `engines` key: every
    engine this service has (as the runner's fixture skills); `inline`: `doc` is sent inline."""
    manifest = {
        "id": skill_id,
        "version": "1.0.0",
        "execution_modes": ["auto"],
        "entrypoint": {"type": "prompt", "prompts": {"codex": "Read {{ input.doc }}."}},
        "schemas": {
            "input": "assets/input.schema.json",
            "parameter": "assets/parameter.schema.json",
            "output": "assets/output.schema.json",
        },
        "automation": {"timeout_sec": 60},
    }
    files = {
        "SKILL.md": f'---\nname: {skill_id}\ndescription: "Read a file. Used by the client '
        f'form tests."\n---\n\n# {skill_id}\n\nRead the file.\n',
        "assets/runner.json": json.dumps(manifest),
        "assets/input.schema.json": json.dumps(
            {
                "type": "object",
                "properties": {
                    "doc": {"type": "string", "x-input-source": "inline"}
                    if inline
                    else {"type": "string", "extensions": [".txt"]}
                },
                "required": ["doc"],
            }
        ),
        "assets/parameter.schema.json": json.dumps({"type": "object", "properties": {}}),
        "assets/output.schema.json": json.dumps(
            {
                "type": "object",
                "properties": {"text": {"type": "string"}, "length": {"type": "integer"}},
                "required": ["text", "length"],
            }
        ),
    }
    return {prefix + name: text for name, text in files.items()}


@pytest.fixture
def codex_stack(bare_stack, tmp_path):
    require_binary(get_adapter("codex"))
    script_file = tmp_path / "llm-script.json"
    # the agent copies the one uploaded .txt into an artifact: proof the input reached the run
    command = "cp \"$(find uploads -name '*.txt' | head -1)\" artifacts/seen.txt"
    final = "Done:\n```json\n" + json.dumps(RESULT) + "\n```"
    script_file.write_text(json.dumps(Script(command=command, final_text=final).__dict__))
    with FakeLLM(script_file) as llm:
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


def parts(package: bytes | None = None, inputs: dict[str, str] | None = None) -> dict:
    data: dict = {}
    if package is not None:
        data["skill_package"] = (io.BytesIO(package), "skill_package.zip")
    if inputs is not None:
        data["file"] = (io.BytesIO(zip_bytes(inputs)), "inputs.zip")
    return data


def poll(client, route: str, timeout: float = 90.0) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        status = client.get(route).json
        if status["status"] in ("succeeded", "failed", "canceled"):
            return status
        time.sleep(0.1)
    raise AssertionError(f"{route} still {status['status']} after {timeout}s")


def resolved_doc(stack, status: dict) -> str:
    run_dir = stack.settings.runs_dir / status["run_id"]
    return json.loads((run_dir / "resolved_input.json").read_text())["input"]["doc"]


def seen(stack, status: dict) -> str:
    return (stack.settings.runs_dir / status["run_id"] / "artifacts/seen.txt").read_text()


def test_plugin_installed_skill_with_a_path_named_file_input(codex_stack):
    client = codex_stack.client
    installed = client.post(
        "/v1/skill-packages", data={"package": (io.BytesIO(zip_bytes(skill_files())), "s.zip")}
    )
    assert installed.status_code == 200, installed.json
    target = "inputs/doc/paper.txt"
    created = client.post(
        "/v1/jobs",
        json={
            "skill_id": SKILL_ID,
            "engine": "codex",
            "input": {"doc": target},
            "parameter": {},
            "runtime_options": {
                "execution_mode": "auto",
                "env": {"ZOTERO_BRIDGE_SCOPE": "{}"},
                "collect_skill_run_feedback": True,
            },
        },
    )
    assert created.status_code == 200, created.json
    rid = created.json["request_id"]
    up = client.post(f"/v1/jobs/{rid}/upload", data=parts(inputs={target: "the paper"}))
    assert up.status_code == 200, up.json
    status = poll(client, f"/v1/jobs/{rid}")
    assert status["status"] == "succeeded", (status, client.get(f"/v1/jobs/{rid}/logs").json)
    assert resolved_doc(codex_stack, status).endswith("/uploads/" + target)
    assert seen(codex_stack, status) == "the paper"
    assert client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == RESULT
    warnings = [w for w in status["warnings"] if w["code"] == "RUNTIME_OPTION_IGNORED"]
    assert [w["details"]["keys"] for w in warnings] == [["collect_skill_run_feedback"]]


def test_plugin_temp_upload_job(codex_stack):
    client = codex_stack.client
    skill_id = "file-prompt-local"
    target = "inputs/doc/note.txt"
    created = client.post(
        "/v1/jobs",
        json={
            "skill_source": "temp_upload",
            "engine": "codex",
            "effort": "default",
            "input": {"doc": target},
            "parameter": {},
        },
    )
    assert created.status_code == 200, created.json
    rid = created.json["request_id"]
    package = zip_bytes(skill_files(skill_id, prefix=f"{skill_id}/"))
    up = client.post(f"/v1/jobs/{rid}/upload", data=parts(package, {target: "a local note"}))
    assert up.status_code == 200, up.json
    status = poll(client, f"/v1/jobs/{rid}")
    assert status["status"] == "succeeded", (status, client.get(f"/v1/jobs/{rid}/logs").json)
    assert status["skill_id"] == skill_id and status["request_id"] == rid
    assert seen(codex_stack, status) == "a local note"
    assert client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == RESULT
    bundle = client.get(f"/v1/jobs/{rid}/bundle")
    assert bundle.status_code == 200
    assert "result/result.json" in zipfile.ZipFile(io.BytesIO(bundle.data)).namelist()
    assert client.get(f"/v1/skills/{skill_id}").status_code == 404  # never installed


def test_runner_two_step_temp_skill_run(codex_stack):
    client = codex_stack.client
    skill_id = "file-prompt-temp"
    created = client.post(
        "/v1/temp-skill-runs",
        json={"engine": "codex", "parameter": {}, "model": None, "runtime_options": {}},
    )
    assert created.status_code == 200, created.json
    rid = created.json["request_id"]
    package = zip_bytes(skill_files(skill_id, prefix=f"{skill_id}/"))
    up = client.post(
        f"/v1/temp-skill-runs/{rid}/upload", data=parts(package, {"doc.txt": "by key"})
    )
    assert up.status_code == 200, up.json
    base = f"/v1/temp-skill-runs/{rid}"
    status = poll(client, base)
    assert status["status"] == "succeeded", (status, client.get(f"{base}/logs").json)
    assert status["request_id"] == rid and status["run_id"]
    assert resolved_doc(codex_stack, status).endswith("/uploads/doc.txt")
    assert seen(codex_stack, status) == "by key"
    assert client.get(f"{base}/result").json["result"]["data"] == RESULT
    assert client.get(f"{base}/bundle").status_code == 200
    artifacts = client.get(f"{base}/artifacts")
    assert artifacts.status_code == 200, artifacts.json
    [seen_file] = [a for a in artifacts.json["artifacts"] if a["path"] == "artifacts/seen.txt"]
    assert seen_file["url"] == f"{base}/artifacts/artifacts/seen.txt"  # the one-off run's route
    assert client.get(seen_file["url"]).data == b"by key"


def test_runner_installed_skill_without_file_inputs_and_its_empty_upload(codex_stack):
    client = codex_stack.client
    skill_id = "inline-prompt"
    package = zip_bytes(skill_files(skill_id, inline=True))
    installed = client.post("/v1/skill-packages", data={"package": (io.BytesIO(package), "s.zip")})
    assert installed.status_code == 200, installed.json
    assert client.get(f"/v1/skills/{skill_id}").json["schemas"]["input"]  # so the runner uploads
    created = client.post(
        "/v1/jobs",
        json={
            "skill_id": skill_id,
            "engine": "codex",
            "parameter": {},
            "input": {"doc": "inline text"},
            "model": None,
            "runtime_options": {"no_cache": True},
        },
    )
    assert created.status_code == 200, created.json
    rid = created.json["request_id"]
    up = client.post(f"/v1/jobs/{rid}/upload", data=parts(inputs={}))
    assert up.status_code == 200, up.json
    assert up.json["extracted_files"] == [] and up.json["request_id"] == rid
    status = poll(client, f"/v1/jobs/{rid}")
    assert status["status"] == "succeeded", (status, client.get(f"/v1/jobs/{rid}/logs").json)
    assert client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == RESULT
    assert client.get(f"/v1/jobs/{rid}/artifacts").status_code == 200
