"""The run contract beyond the prompt, through the whole service with real CLIs (codex; every
engine for the dependencies): REST -> Redis -> worker -> CLI -> fake LLM.

- a hybrid skill: the engine's turn, then the skill's script, which sees the engine's final
  message and files and completes the result; a script that exits non-zero fails the run;
- `runtime.dependencies` of a prompt skill: the agent's shell imports them on each engine (uv,
  offline, from a wheel built here: not in the service's venv; codex's shell is a login shell); a dependency uv cannot find fails the run
  before the CLI starts;
- `{{ input.x }}` / `{{ parameter.x }}` in SKILL.md reach the agent rendered (its shell reads
  the run's copy); the installed skill keeps the template; one that does not render fails.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from tests.engines.harness import fake_engine_config, require_binary
from tests.helpers import TEST_SKILLS, wait_for_job
from tests.integration.services import WorkerProcess, broker_settings
from tests.packages import build_wheel

ENGINES = ["codex", "claude", "gemini", "opencode", "qwen"]  # the dependencies test runs on each
DEP_MODULE = "zqx_contract_dep"  # a wheel built by the fixture; the service's venv lacks it
SKILL_DIR = get_adapter("codex").skill_dirs[0]  # where codex finds the run's skill


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """One worker (uv offline, wheels from a folder) and one fake LLM for the module."""
    root = tmp_path_factory.mktemp("run-contract")
    wheels = root / "wheels"
    build_wheel(wheels, DEP_MODULE, value="from-the-wheel")
    script_file = root / "llm-script.json"
    script_file.write_text(json.dumps(asdict(Script(tool=False))))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        config_dir = fake_engine_config(root / "engine-config", llm, ENGINES)
        worker = WorkerProcess(
            settings,
            "engines",
            settings.data_dir / "worker.log",
            concurrency=2,
            extra_env={
                "SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir),
                "UV_FIND_LINKS": str(wheels),
                "UV_NO_INDEX": "1",
                "UV_OFFLINE": "1",
            },
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


def echo_variant(settings, skill_id: str, *, body: str | None = None, **runner) -> Path:
    """Install a copy of the echo-prompt test skill as `skill_id`, with `runner` merged into
    its runner.json and `body` as its SKILL.md body."""
    dest = settings.skills_dir / skill_id
    shutil.copytree(TEST_SKILLS / "echo-prompt", dest)
    manifest = json.loads((dest / "assets" / "runner.json").read_text())
    manifest.update(id=skill_id, **runner)
    manifest["entrypoint"]["prompts"] = {"codex": "Use the " + skill_id + " skill."}
    (dest / "assets" / "runner.json").write_text(json.dumps(manifest))
    description = f'description: "Test skill {skill_id}: echo the text and its length."'
    head = f"---\nname: {skill_id}\n{description}\n---\n"
    (dest / "SKILL.md").write_text(head + (body or f"# {skill_id}\n"))
    return dest


def run_job(
    service, skill_id: str, script: Script, engine: str = "codex", **body
) -> tuple[dict, dict, str]:
    """Run one job with the LLM following `script`: (status, result, what the CLI sent)."""
    require_binary(get_adapter(engine))
    service["script"].write_text(json.dumps(asdict(script)))
    client, llm = service["client"], service["llm"]
    seen = len(llm.requests)
    payload = {"skill_id": skill_id, "engine": engine, "input": {"text": "hello"}, **body}
    payload["runtime_options"] = {"no_cache": True}
    rid = client.post("/v1/jobs", json=payload).json["request_id"]
    try:
        status = wait_for_job(client, rid, timeout=120, interval=0.1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {client.get(f'/v1/jobs/{rid}/logs').json}") from None
    result = client.get(f"/v1/jobs/{rid}/result").json["result"]
    sent = "\n".join(r.raw for r in llm.requests[seen:])
    return status, result, sent


# The agent writes a file and answers a draft that lacks `length`: the script completes it.
HYBRID_AGENT = Script(
    command="printf 'a file of the agent' > artifacts/agent.txt",
    final_text='Draft: {"text": "hello", "by": "agent"}',
)


def test_hybrid_script_completes_the_engine_output(service):
    status, result, _sent = run_job(service, "hybrid-echo", HYBRID_AGENT)
    assert status["status"] == "succeeded", (status, result)
    assert result["data"] == {
        "text": "hello",
        "length": 5,
        "engine": "codex",
        "draft": {
            "text": "hello",
            "by": "agent",
        },  # the engine's final message, as the script read it
    }
    assert sorted(result["artifacts"]) == ["artifacts/agent.txt", "artifacts/summary.txt"]
    run_dir = service["settings"].runs_dir / status["run_id"]
    summary = (run_dir / "artifacts" / "summary.txt").read_text()
    assert summary == "agent wrote: a file of the agent\n"  # the script ran after the agent
    assert (run_dir / "logs" / "script_stdout.txt").read_text() == "summary written\n"
    assert (run_dir / "raw" / "engine_message.txt").read_text().startswith("Draft: {")
    assert status["token_usage"]["input_tokens"] > 0  # the engine's turn is still recorded


def test_hybrid_script_exiting_non_zero_fails_the_run(service):
    status, result, _sent = run_job(service, "hybrid-echo", HYBRID_AGENT, parameter={"fail": True})
    assert status["status"] == "failed", (status, result)
    error = status["error"]
    assert error["code"] == "SKILL_SCRIPT_FAILED", error
    assert error["exit_code"] == 3 and error["step"] == "script"
    assert "refusing: the parameter fail is set" in error["script_stderr"]
    assert "after the engine" in error["message"]
    assert result["data"] is None


@pytest.mark.parametrize("engine", ENGINES)
def test_prompt_skill_dependencies_are_importable_in_the_agents_shell(service, engine):
    assert importlib.util.find_spec(DEP_MODULE) is None  # the service's own venv lacks it
    if not (service["settings"].skills_dir / "deps-prompt").is_dir():  # one skill, each engine
        echo_variant(
            service["settings"],
            "deps-prompt",
            runtime={"language": "python", "dependencies": [f"{DEP_MODULE}==0.1.0"]},
        )
    # The tool call imports the module and needs VIRTUAL_ENV, else it writes no result.
    agent = Script(
        command=f"python -c \"import json, os, {DEP_MODULE} as m; os.environ['VIRTUAL_ENV']; "
        "json.dump(dict(text=m.VALUE, length=14), open('result/result.json', 'w'))\"",
        final_text="Written to result/result.json.",
    )
    status, result, sent = run_job(service, "deps-prompt", agent, engine)
    assert status["status"] == "succeeded", (status, result, sent[-3000:])
    assert result["data"] == {"text": "from-the-wheel", "length": 14}
    cache = service["settings"].data_dir / "uv-cache"
    assert cache.is_dir() and any(cache.iterdir())  # uv's cache, shared by runs


def test_a_dependency_uv_cannot_provide_fails_before_the_cli_starts(service):
    echo_variant(
        service["settings"],
        "deps-missing",
        runtime={"language": "python", "dependencies": ["zqx_no_such_package==1.0"]},
    )
    status, result, sent = run_job(service, "deps-missing", Script(tool=False, final_text="{}"))
    assert status["status"] == "failed", (status, result)
    assert status["error"]["code"] == "DEPENDENCIES_UNAVAILABLE", status["error"]
    assert "zqx-no-such-package" in status["error"]["stderr"].lower().replace("_", "-")
    assert sent == ""  # the CLI never ran


TEMPLATED_BODY = "# templated\n\nThe text is RENDERED<{{ input.text }}|{{ parameter.mark }}>.\n"


def test_skill_md_references_reach_the_agent_rendered(service):
    skill = echo_variant(service["settings"], "templated-prompt", body=TEMPLATED_BODY)
    (skill / "assets" / "parameter.schema.json").write_text(
        json.dumps({"type": "object", "properties": {"mark": {"type": "string"}}})
    )
    agent = Script(
        command=f"cat {SKILL_DIR}/templated-prompt/SKILL.md",
        final_text='{"text": "hello", "length": 5}',
    )
    status, result, sent = run_job(service, "templated-prompt", agent, parameter={"mark": "m1"})
    assert status["status"] == "succeeded", (status, result)
    assert "The text is RENDERED<hello|m1>." in sent  # what the agent's shell read
    assert "{{ input.text }}" not in sent
    assert (skill / "SKILL.md").read_text().endswith(TEMPLATED_BODY)  # the installed skill
    masters = service["settings"].skill_copies_dir.glob("templated-prompt.*/files/SKILL.md")
    assert all(m.read_text().endswith(TEMPLATED_BODY) for m in masters)


def test_skill_md_that_does_not_render_fails_the_run(service):
    echo_variant(service["settings"], "broken-template", body="Use {{ input.no_such_field }}.\n")
    status, result, sent = run_job(service, "broken-template", Script(tool=False, final_text="{}"))
    assert status["status"] == "failed", (status, result)
    assert status["error"]["code"] == "SKILL_MD_TEMPLATE_ERROR", status["error"]
    assert "no_such_field" in status["error"]["message"]
    assert sent == ""  # the CLI never ran
