"""The demo LLM's sessions (`serve --demo-llm`): each example skill through the whole service
on every installed engine, the CLIs pointed at the scripted server by the same engine config
the switch writes (launcher.demo_llm.write_engine_config)."""

from __future__ import annotations

import json

import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM
from fake_llm.demo import NO_SESSION, demo_script
from launcher.demo_llm import write_engine_config
from runner_core.engines import get_adapter
from runner_core.settings import REPO_ROOT
from tests.engines.harness import require_binary
from tests.helpers import upload_body, wait_for_job
from tests.integration.services import WorkerProcess, broker_settings

ENGINES = ["codex", "gemini", "opencode", "kilo", "qwen", "claude"]
# The demo LLM's sessions sit above the wire format, and demo_echo speaks each engine's wire;
# the longer sessions run on two wires (Responses, Messages): each run of a node or bun CLI
# costs seconds of CPU, and every CLI's upload and resume paths are tested in test_worker_jobs
# and test_interactive_jobs.
TWO_WIRES = ["codex", "claude"]
TEXT = "  Hello,   Demo World "
PAPER = (
    "Attention Is All You Need\n\nWe propose the Transformer, a network based solely on "
    "attention. Attention replaces recurrence. The Transformer trains faster.\n"
)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """A worker whose engine CLIs talk to the demo LLM, and an API client."""
    root = tmp_path_factory.mktemp("demo-llm")
    script_file = root / "script.json"
    script_file.write_text(json.dumps(demo_script()))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        config_dir = write_engine_config(
            REPO_ROOT / "deploy" / "engine-config", root / "engine-config", llm.base_url
        )
        worker = WorkerProcess(
            settings,
            "demo",
            settings.data_dir / "worker.log",
            concurrency=2,
            extra_env={"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir)},
        )
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        try:
            yield {"client": app.test_client(), "settings": settings, "llm": llm}
        finally:
            worker.stop()


def finish(service, engine: str, rid: str) -> tuple[dict, dict]:
    client = service["client"]
    try:
        status = wait_for_job(client, rid, timeout=120, interval=0.1)
    except AssertionError as exc:
        raise AssertionError(
            f"{engine}: {exc}: {client.get(f'/v1/jobs/{rid}/logs').json}"
        ) from None
    result = client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert status["status"] == "succeeded", (engine, status, result)
    return status, result


@pytest.mark.parametrize("engine", ENGINES)
def test_demo_echo_session_answers_from_the_jobs_own_input(service, engine):
    require_binary(get_adapter(engine))
    body = {"skill_id": "demo-echo", "engine": engine, "input": {"text": TEXT}}
    rid = service["client"].post("/v1/jobs", json=body).json["request_id"]
    status, result = finish(service, engine, rid)
    assert result["data"] == {
        "text": TEXT,
        "length": len(TEXT),
        "normalized": True,
        "normalized_text": "hello, demo world",
        "warnings": ["the text has leading or trailing whitespace"],
    }
    # valid as the agent wrote it; `network: off` enforced: the engine reached its model only
    assert result["validation_warnings"] == []
    notes = service["client"].get(f"/v1/jobs/{rid}/artifacts/notes.md")
    assert notes.status_code == 200 and b'normalized: "hello, demo world"' in notes.data


@pytest.mark.parametrize("engine", TWO_WIRES)
def test_zotero_session_parses_the_uploaded_attachment(service, engine):
    require_binary(get_adapter(engine))
    client = service["client"]
    body = {
        "skill_id": "zotero-parse-attachment",
        "engine": engine,
        "input": {"item_key": "ABCD1234"},
        "parameter": {"output_format": "md"},
    }
    rid = client.post("/v1/jobs", json=body).json["request_id"]
    upload = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"attachment_path.txt": PAPER}))
    assert upload.status_code == 200, upload.json
    status, result = finish(service, engine, rid)
    data = result["data"]
    assert data["title"] == "Attention Is All You Need"
    assert data["summary"].startswith("We propose the Transformer")
    assert {"attention", "transformer"} <= set(data["tags"])
    assert [a["role"] for a in data["attachments"]] == ["notes", "parsed"]  # md first
    parsed = json.loads(client.get(f"/v1/jobs/{rid}/artifacts/parsed.json").data)
    assert parsed["item_key"] == "ABCD1234" and parsed["title"] == data["title"]
    roles = [a["role"] for a in client.get(f"/v1/jobs/{rid}/artifacts").json["artifacts"]]
    assert sorted(roles) == ["notes", "parsed"]


def test_another_skill_gets_no_session_and_fails_its_schema(service):
    require_binary(get_adapter("codex"))
    body = {"skill_id": "echo-prompt", "engine": "codex", "input": {"text": "hi"}}
    rid = service["client"].post("/v1/jobs", json=body).json["request_id"]
    status = wait_for_job(service["client"], rid, timeout=120, interval=0.1)
    assert status["status"] == "failed", status
    assert status["error"]["code"] == "OUTPUT_VALIDATION_FAILED", status["error"]
    assert (
        NO_SESSION
        in (service["settings"].runs_dir / status["run_id"] / "logs" / "stdout.txt").read_text()
    )


@pytest.mark.parametrize("engine", TWO_WIRES)
def test_choose_summary_session_asks_and_finishes_with_the_reply(service, engine):
    require_binary(get_adapter(engine))
    client = service["client"]
    body = {
        "skill_id": "demo-choose-summary",
        "engine": engine,
        "input": {"text": PAPER},
        "runtime_options": {"execution_mode": "interactive"},
    }
    rid = client.post("/v1/jobs", json=body).json["request_id"]
    waiting = wait_for_job(client, rid, 120, ("waiting_user", "succeeded", "failed"), 0.1)
    assert waiting["status"] == "waiting_user", (engine, waiting)
    pending = client.get(f"/v1/jobs/{rid}/interaction/pending").json["pending"]
    assert pending["kind"] == "choose_one" and len(pending["options"]) >= 2, pending["prompt"]
    second = pending["options"][1]
    answer = {"interaction_id": pending["interaction_id"], "response": second["value"]}
    assert client.post(f"/v1/jobs/{rid}/interaction/reply", json=answer).status_code == 200
    _status, result = finish(service, engine, rid)
    assert result["data"]["chosen"] == "2" and result["data"]["chosen_by"] == "user"
    assert result["data"]["summary"] == second["label"].split(": ", 1)[1]
