"""Secrets and an agent CLI: the worker holds a provider key (the codex run's, by name), other
provider keys, an API token and a webhook secret. The agent's shell command prints its own
environment, every parent's /proc/<pid>/environ and its HOME's files. The key the CLI uses is in
the CLI's own environment (unavoidable: the CLI sends it to the provider), so the agent finds it,
and it reaches the model's side; it is masked in the run's logs, events and bundle all the same.
No other secret is found anywhere, the fake model's requests included."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from dataclasses import asdict

import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from runner_core.settings import REPO_ROOT
from tests.engines.harness import FAKE_MODEL, require_binary
from tests.helpers import wait_for_job
from tests.integration.services import WorkerProcess, broker_settings

KEY = "sk-fake-codex-key-9d3b7a1e"
OTHER_SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-fake-5c2e8f0b4a",
    "GEMINI_API_KEY": "AIza-fake-gemini-1f7d3b9e",
    "SKILL_RUNNER_API_TOKEN": "api-token-fake-0e6c2a8d4f1b",
    "SKILL_RUNNER_WEBHOOK_SECRET": "whsec-fake-8a4c0e6b2d",
}
HUNT = (
    'env; p=$PPID; while [ "$p" -gt 1 ]; do echo "== parent $p"; '
    "tr '\\0' '\\n' < /proc/$p/environ; p=$(awk '{print $4}' /proc/$p/stat); done; "
    'find "$HOME" -type f -size -100k -exec cat {} + 2>/dev/null; true'
)
RESULT = {"text": "hello", "length": 5}
SCRIPT = Script(command=HUNT, final_text="Done.\n```json\n" + json.dumps(RESULT) + "\n```")


@pytest.fixture
def codex_run(tmp_path):
    """(client, settings, request id, fake LLM) of a finished codex run of the hunt."""
    require_binary(get_adapter("codex"))
    script_file = tmp_path / "llm-script.json"
    script_file.write_text(json.dumps(asdict(SCRIPT)))
    with FakeLLM(script_file) as llm, broker_settings(tmp_path) as settings:
        config_dir = tmp_path / "engine-config"
        shutil.copytree(REPO_ROOT / "deploy" / "engine-config", config_dir)
        (config_dir / "codex" / "enforced.json").write_text(
            json.dumps(
                {
                    "base_url": f"{llm.base_url}/v1",
                    "api_key_env": "OPENAI_API_KEY",
                    "model": FAKE_MODEL,
                }
            )
        )
        worker = WorkerProcess(
            settings,
            "secrets-engine",
            settings.data_dir / "worker-secrets-engine.log",
            concurrency=1,
            extra_env={
                "SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir),
                "OPENAI_API_KEY": KEY,
                **OTHER_SECRETS,
            },
        )
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        client = app.test_client()
        try:
            rid = client.post(
                "/v1/jobs",
                json={
                    "skill_id": "echo-prompt",
                    "engine": "codex",
                    "input": {"text": "hello"},
                    "runtime_options": {"no_cache": True, "debug": True},
                },
            ).json["request_id"]
            status = wait_for_job(client, rid, timeout=120, interval=0.1)
            assert status["status"] == "succeeded", (
                status,
                client.get(f"/v1/jobs/{rid}/logs").json,
            )
            yield client, settings, rid, llm, worker
        finally:
            worker.stop()


def test_the_cli_key_is_masked_and_no_other_secret_is_found(codex_run):
    client, settings, rid, llm, worker = codex_run
    texts = {
        "logs": client.get(f"/v1/jobs/{rid}/logs").get_data(as_text=True),
        "range": client.get(f"/v1/jobs/{rid}/logs/range?stream=stdout&byte_from=0").get_data(
            as_text=True
        ),
        "events": client.get(f"/v1/jobs/{rid}/events/history").get_data(as_text=True),
        "service log": (settings.data_dir / "logs" / "skill_runner.log").read_text(),
        "worker output": worker.log_path.read_text(),
    }
    with zipfile.ZipFile(io.BytesIO(client.get(f"/v1/jobs/{rid}/bundle").data)) as debug_zip:
        names = debug_zip.namelist()
        for n in names:
            texts[f"debug bundle {n}"] = debug_zip.read(n).decode("utf-8", "replace")
    tree = client.get(f"/v1/management/runs/{rid}/files").json["entries"]
    for entry in (e for e in tree if e["type"] == "file"):
        texts[entry["path"]] = client.get(
            f"/v1/management/runs/{rid}/file", query_string={"path": entry["path"]}
        ).get_data(as_text=True)
    # the hunt ran and printed the CLI's environment, where the key is: masked, same length
    assert "== parent" in texts["logs"] and "*" * len(KEY) in texts["logs"]
    assert {name for name, text in texts.items() if KEY in text} == set()
    everything = "\n".join(texts.values()) + llm.request_text()
    assert [name for name, value in OTHER_SECRETS.items() if value in everything] == []
    # what the model was sent holds the key the CLI itself has: the honest limit
    assert KEY in llm.request_text()
