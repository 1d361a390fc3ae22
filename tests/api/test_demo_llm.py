"""`skill-runner serve --demo-llm`: refused when a provider key is configured, the engine config
it writes, and the flag /healthz shows."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from api import create_app
from launcher.cli import main
from launcher.demo_llm import DEMO_KEY, configured_keys, write_engine_config
from runner_core.engines import SUPPORTED_ENGINES
from runner_core.engines.config import CONFIG_DIR_ENV, load_engine_config
from runner_core.settings import REPO_ROOT

SHIPPED = REPO_ROOT / "deploy" / "engine-config"


def operator_config(tmp_path: Path, engine: str, layer: str, data: dict) -> Path:
    folder = tmp_path / "operator-config"
    (folder / engine).mkdir(parents=True, exist_ok=True)
    (folder / engine / layer).write_text(json.dumps(data))
    return folder


def test_no_key_is_found_in_the_shipped_config_and_a_clean_environment():
    assert configured_keys(SHIPPED, {"PATH": "/bin", "OPENAI_API_KEY": " "}) == []


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"])
def test_a_provider_key_in_the_environment_is_found(name):
    assert configured_keys(SHIPPED, {name: "sk-real"}) == [name]


def test_keys_named_or_held_by_the_operator_config_are_found(tmp_path):
    folder = operator_config(tmp_path, "qwen", "default.json", {"api_key_env": "MY_LLM_KEY"})
    assert configured_keys(folder, {}) == []
    assert configured_keys(folder, {"MY_LLM_KEY": "k"}) == ["MY_LLM_KEY"]
    operator_config(tmp_path, "claude", "enforced.json", {"api_key": "sk-ant"})
    assert configured_keys(folder, {}) == ["api_key in claude/enforced.json"]


def test_serve_refuses_the_demo_llm_when_a_key_is_configured(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKILL_RUNNER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv(CONFIG_DIR_ENV, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "real-key")
    assert main(["serve", "--demo-llm"]) == 2
    err = capsys.readouterr().err
    assert "--demo-llm refused: a provider key is configured (GEMINI_API_KEY)" in err
    assert not (tmp_path / "data" / "demo-llm").exists()  # nothing was started


def test_the_demo_config_points_every_engine_at_the_demo_and_keeps_the_rest(tmp_path):
    source = operator_config(
        tmp_path, "codex", "enforced.json", {"api_key_env": "OPENAI_API_KEY", "env": {"A": "1"}}
    )
    dest = write_engine_config(source, tmp_path / "demo-config", "http://127.0.0.1:5000")
    for engine in SUPPORTED_ENGINES:
        merged = load_engine_config(engine, skill_dir=None, user=None, config_dir=dest)
        assert merged["api_key"] == DEMO_KEY and merged["model"] == "demo-model"
        assert merged["base_url"].startswith("http://127.0.0.1:5000")
        assert merged["models"] == ["demo-model"]  # the default is among the models offered
    codex = load_engine_config("codex", skill_dir=None, user={"model": "gpt-5"}, config_dir=dest)
    assert codex["base_url"] == "http://127.0.0.1:5000/v1" and codex["env"] == {"A": "1"}
    assert "api_key_env" not in codex and codex["model"] == "demo-model"  # enforced wins
    claude = load_engine_config("claude", skill_dir=None, user=None, config_dir=dest)
    assert claude["base_url"] == "http://127.0.0.1:5000"  # the CLI adds /v1 itself
    # written again over an old copy: nothing of the old copy is left
    (dest / "stale.json").write_text("{}")
    write_engine_config(source, dest, "http://127.0.0.1:5001")
    assert not (dest / "stale.json").exists()


def test_healthz_says_when_the_demo_llm_is_on(settings, queue):
    demo = dataclasses.replace(settings, demo_llm="http://127.0.0.1:5000")
    resp = create_app({"SETTINGS": demo, "QUEUE": queue}).test_client().get("/healthz")
    assert resp.status_code == 200 and resp.json["demo_llm"] is True


def test_with_the_demo_config_its_default_model_is_offered_and_taken(
    tmp_path, monkeypatch, settings, queue
):
    dest = write_engine_config(tmp_path / "none", tmp_path / "demo-config", "http://127.0.0.1:5000")
    monkeypatch.setenv(CONFIG_DIR_ENV, str(dest))
    client = create_app({"SETTINGS": settings, "QUEUE": queue}).test_client()
    models = client.get("/v1/engines/codex/models").json
    assert models["default_model"] in models["model_ids"]
    job = {"skill_id": "demo-echo", "engine": "codex", "input": {"text": "x"}}
    assert client.post("/v1/jobs", json={**job, "model": "demo-model"}).status_code == 200
    refused = client.post("/v1/jobs", json={**job, "model": "gpt-5.2-codex"})
    assert refused.status_code == 400 and refused.json["error"]["code"] == "MODEL_UNSUPPORTED"
