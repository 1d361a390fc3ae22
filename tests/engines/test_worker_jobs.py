"""Each real CLI through the whole service: REST -> Redis -> worker -> CLI -> fake LLM.

For codex, gemini, opencode, qwen and claude: a job that makes one shell tool call and ends
with fenced JSON succeeds with a validated result and an artifact; an invalid first answer is
repaired at N3 by resuming the session handle the CLI returned; a model API 4xx fails the run
with a typed engine error, without hanging. iflow cannot be installed here: its adapter is
tested on transcripts (tests/unit/test_engine_iflow.py).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict

import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from runner_core.prompts import PATCH_MARKER
from tests.engines.harness import fake_engine_config, require_binary
from tests.helpers import upload_body, wait_for_job
from tests.integration.services import WorkerProcess, broker_settings

ENGINES = ["codex", "gemini", "opencode", "qwen", "claude"]
RESULT = {"text": "hello", "length": 5}
SUCCESS = Script(
    command="printf 'made by the agent' > artifacts/note.txt",
    final_text="Done.\n```json\n" + json.dumps(RESULT) + "\n```",
)
# First turn prints JSON missing "length"; the resumed (repair) turn prints the valid JSON.
# The valid JSON is joined by the shell ('len''gth'), so CLIs that echo the command back (qwen)
# do not leak it into the first answer; no $(...) either, which gemini refuses to run.
TWO_TURNS = Script(
    command="""if [ -f .seen ]; then echo '{"text": "hello", "len''gth": 5}'; """
    """else touch .seen; echo '{"text": "hello"}'; fi""",
    final_text="$tool_output",
)
API_400 = Script(status=400, error_message="bad request from the test")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """One worker and one fake LLM for the module; each test sets the LLM's script."""
    root = tmp_path_factory.mktemp("engine-jobs")
    script_file = root / "llm-script.json"
    script_file.write_text(json.dumps(asdict(SUCCESS)))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        config_dir = fake_engine_config(root / "engine-config", llm, ENGINES)
        worker = WorkerProcess(
            settings,
            "engines",
            settings.data_dir / "worker.log",
            concurrency=2,
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


def run_job(
    service,
    engine: str,
    script: Script,
    skill_id: str = "echo-prompt",
    text: str = "hello",
    **options,
) -> tuple[dict, dict]:
    require_binary(get_adapter(engine))
    service["script"].write_text(json.dumps(asdict(script)))
    client = service["client"]
    rid = client.post(
        "/v1/jobs",
        json={
            "skill_id": skill_id,
            "engine": engine,
            "input": {"text": text},
            "runtime_options": {"no_cache": True, **options},
        },
    ).json["request_id"]
    try:
        status = wait_for_job(client, rid, timeout=120, interval=0.1)
    except AssertionError as exc:
        logs = client.get(f"/v1/jobs/{rid}/logs").json
        raise AssertionError(f"{engine}: {exc}: {logs}") from None
    return status, client.get(f"/v1/jobs/{rid}/result").json["result"]


@pytest.mark.parametrize("engine", ENGINES)
def test_job_runs_the_cli_and_returns_a_validated_result(service, engine):
    status, result = run_job(service, engine, SUCCESS)
    assert status["status"] == "succeeded", (status, result)
    assert result["data"] == RESULT
    assert result["artifacts"] == ["artifacts/note.txt"]
    # the tokens the CLI reported are recorded on the run
    assert status["token_usage"]["input_tokens"] > 0 < status["token_usage"]["output_tokens"]
    run_dir = service["settings"].runs_dir / status["run_id"]
    assert (run_dir / "artifacts" / "note.txt").read_text() == "made by the agent"
    first_line = (run_dir / "logs" / "prompt.txt").read_text().splitlines()[0]
    assert first_line in service["llm"].request_text()  # the rendered prompt reached the model
    # the snapshot is the copy in the CLI's skill folder, with the output contract
    skill_md = run_dir / get_adapter(engine).skill_dirs[0] / "echo-prompt" / "SKILL.md"
    assert PATCH_MARKER in skill_md.read_text() and not (run_dir / ".skill").exists()
    # ... patched in the run's own file: the shared copy its other files link to is untouched
    runner_json = skill_md.parent / "assets" / "runner.json"
    assert runner_json.stat().st_nlink >= 2 and skill_md.stat().st_nlink == 1
    for master_md in (service["settings"].skill_copies_dir).glob("echo-prompt.*/files/SKILL.md"):
        assert PATCH_MARKER not in master_md.read_text()


@pytest.mark.parametrize("engine", ENGINES)
def test_invalid_answer_is_repaired_by_resuming_the_session(service, engine):
    status, result = run_job(service, engine, TWO_TURNS, repair_rounds=1)
    assert status["status"] == "succeeded", (status, result)
    assert result["data"] == RESULT
    assert "OUTPUT_REPAIRED_N3" in [w["code"] for w in result["validation_warnings"]]
    # the repair turn's tokens are added to the first turn's
    first, _ = run_job(service, engine, SUCCESS)
    assert status["token_usage"]["input_tokens"] > first["token_usage"]["input_tokens"]
    run_dir = service["settings"].runs_dir / status["run_id"]
    assert (run_dir / "logs" / "repair_1_stdout.txt").stat().st_size > 0


# how each CLI reports an HTTP 400 is tested in test_every_engine; here the service's path
@pytest.mark.parametrize("engine", ["codex", "claude"])
def test_model_api_4xx_fails_the_run_with_a_typed_error(service, engine):
    started = time.monotonic()
    status, result = run_job(service, engine, API_400)
    assert status["status"] == "failed"
    assert status["error"]["code"] == "MODEL_API_ERROR", status["error"]
    assert status["error"]["engine"] == engine
    assert time.monotonic() - started < 60


# The shipped example skill: the agent writes its note with a shell call, then answers.
ECHO_TEXT = "  Hello   World "
ECHO_RESULT = {
    "text": ECHO_TEXT,
    "length": len(ECHO_TEXT),
    "normalized": True,
    "normalized_text": "hello world",
    "warnings": ["the text has leading or trailing whitespace"],
}
ECHO_SESSION = Script(
    command="printf '# Notes\\n\\nTwo words, extra spaces.\\n' > artifacts/notes.md",
    final_text="Here it is:\n```json\n" + json.dumps(ECHO_RESULT) + "\n```",
)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_demo_echo_example_skill_runs_on_every_engine(service, engine):
    status, result = run_job(service, engine, ECHO_SESSION, skill_id="demo-echo", text=ECHO_TEXT)
    assert status["status"] == "succeeded", (status, result)
    assert result["data"] == ECHO_RESULT
    assert result["artifacts"] == ["artifacts/notes.md"]
    notes = service["settings"].runs_dir / status["run_id"] / "artifacts" / "notes.md"
    assert notes.read_text().startswith("# Notes")
    manifest = service["client"].get(f"/v1/jobs/{status['request_id']}/artifacts").json
    assert [a["role"] for a in manifest["artifacts"]] == ["notes"], manifest


# The Zotero example: an uploaded attachment, two declared artifacts, the agent's answer.
PAPER = "Attention Is All You Need\n\nWe propose the Transformer, based solely on attention.\n"
ZOTERO_RESULT = {
    "title": "Attention Is All You Need",
    "summary": "The paper proposes the Transformer, a model based solely on attention.",
    "tags": ["attention", "transformer"],
    "attachments": [
        {"role": "notes", "filename": "notes.md"},
        {"role": "parsed", "filename": "parsed.json"},
    ],
}
ZOTERO_SESSION = Script(
    command='echo \'{"item_key": "ABCD1234"}\' > artifacts/parsed.json; '
    "echo '# Attention Is All You Need' > artifacts/notes.md",
    final_text="```json\n" + json.dumps(ZOTERO_RESULT) + "\n```",
)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_zotero_example_skill_parses_an_uploaded_attachment(service, engine):
    require_binary(get_adapter(engine))
    service["script"].write_text(json.dumps(asdict(ZOTERO_SESSION)))
    client = service["client"]
    body = {
        "skill_id": "zotero-parse-attachment",
        "engine": engine,
        "input": {"item_key": "ABCD1234"},
        "parameter": {"output_format": "md"},
        "runtime_options": {"no_cache": True},
    }
    rid = client.post("/v1/jobs", json=body).json["request_id"]
    upload = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"attachment_path.txt": PAPER}))
    assert upload.status_code == 200, upload.json
    status = wait_for_job(client, rid, timeout=120, interval=0.1)
    result = client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert status["status"] == "succeeded", (status, result)
    assert result["data"] == ZOTERO_RESULT
    assert sorted(result["artifacts"]) == ["artifacts/notes.md", "artifacts/parsed.json"]
    run_dir = service["settings"].runs_dir / status["run_id"]
    assert json.loads((run_dir / "artifacts" / "parsed.json").read_text()) == {
        "item_key": "ABCD1234"
    }
    prompt = (run_dir / "logs" / "prompt.txt").read_text()
    assert "ABCD1234" in prompt and "attachment_path" in prompt


def skill_variant(service, name: str, prompt: dict) -> str:
    """echo-prompt under another name, its runner.json `entrypoint.prompt` set to `prompt`."""
    root = service["settings"].skills_dir / name
    if not root.exists():
        shutil.copytree(service["settings"].skills_dir / "echo-prompt", root)
        md = root / "SKILL.md"
        md.write_text(md.read_text().replace("name: echo-prompt", f"name: {name}", 1))
        runner = json.loads((root / "assets" / "runner.json").read_text())
        runner["id"] = name
        runner["entrypoint"]["prompt"] = prompt
        (root / "assets" / "runner.json").write_text(json.dumps(runner))
    return name


def test_the_result_file_a_skill_names_is_where_its_result_is_read(service):
    """runner.json `entrypoint.prompt.result_file` (seed 003 §5.3): the agent is told to write
    there, and the result is read from there (its final message is no JSON)."""
    skill = skill_variant(service, "echo-named-result", {"result_file": "out/answer.json"})
    written = Script(
        command="mkdir -p out && printf '%s' '" + json.dumps(RESULT) + "' > out/answer.json",
        final_text="Written to the result file.",
    )
    status, result = run_job(service, "codex", written, skill_id=skill)
    assert status["status"] == "succeeded", (status, result)
    assert result["data"] == RESULT
    run_dir = service["settings"].runs_dir / status["run_id"]
    assert f"{run_dir}/out/answer.json" in (run_dir / "logs" / "prompt.txt").read_text()
    # written outside artifacts/ and result/: listed in the manifest (seed 003 §4)
    listed = service["client"].get(f"/v1/jobs/{status['request_id']}/artifacts").json
    assert {"path": "out/answer.json", "size": len(json.dumps(RESULT))} in listed["other_writes"]
    assert not any(w["path"].startswith((".", "logs/")) for w in listed["other_writes"])


def test_result_mode_stdout_reads_the_final_message_not_a_file(service):
    skill = skill_variant(service, "echo-stdout-result", {"result_mode": "stdout"})
    stale = {"text": "from a file", "length": 11}
    printed = Script(
        command="mkdir -p result && printf '%s' '" + json.dumps(stale) + "' > result/result.json",
        final_text=json.dumps(RESULT),
    )
    status, result = run_job(service, "codex", printed, skill_id=skill)
    assert status["status"] == "succeeded", (status, result)
    assert result["data"] == RESULT
