"""Engines endpoints read the layered engine config and the installed CLIs."""

from __future__ import annotations

import json

import pytest

from runner_core.engines import SUPPORTED_ENGINES, catalog


@pytest.fixture
def engine_config(tmp_path, monkeypatch):
    root = tmp_path / "engine-config"
    (root / "codex").mkdir(parents=True)
    (root / "codex" / "default.json").write_text(
        json.dumps(
            {
                "model": "gpt-5.2-codex@high",
                "api_key_env": "TEST_CODEX_KEY",
                "models": ["gpt-5.2-codex@low", "gpt-5.2-codex@high"],
            }
        )
    )
    monkeypatch.setenv("SKILL_RUNNER_ENGINE_CONFIG_DIR", str(root))
    return root


def test_engines_list_every_supported_engine(client, engine_config):
    body = client.get("/v1/engines").json
    assert [e["engine"] for e in body] == list(SUPPORTED_ENGINES)
    assert set(body[0]) == {
        "engine",
        "cli_version",
        "binary_path",
        "tested",
        "tested_versions",
        "installed",
        "auth_ready",
        "models_count",
        "retired",
        "retired_reason",
        "upgrade_status",
    }
    assert {e["upgrade_status"] for e in body} == {"idle"}  # none was asked for


def test_models_come_from_the_config_layers(client, engine_config):
    body = client.get("/v1/engines/codex/models").json
    assert body["engine"] == "codex" and body["default_model"] == "gpt-5.2-codex@high"
    assert body["model_ids"] == ["gpt-5.2-codex@low", "gpt-5.2-codex@high"]
    assert body["models"][0] == {
        "id": "gpt-5.2-codex@low",
        "display_name": "gpt-5.2-codex (low)",
        "provider_id": "openai",
        "provider": "openai",
        "model": "gpt-5.2-codex",
        "reasoning_effort": "low",
        "supported_effort": ["low", "high"],
        "deprecated": False,
    }
    assert [m["id"] for m in body["models"]] == body["model_ids"]
    detail = client.get("/v1/engines/codex").json
    assert detail["models"] == body["models"] and detail["model_ids"] == body["model_ids"]


def test_auth_ready_follows_the_key_variable(client, engine_config, monkeypatch):
    assert client.get("/v1/engines/codex").json["auth_ready"] is False
    monkeypatch.setenv("TEST_CODEX_KEY", "k")
    assert client.get("/v1/engines/codex").json["auth_ready"] is True


def test_unknown_engine_is_404(client):
    resp = client.get("/v1/engines/nope/models")
    assert resp.status_code == 404 and resp.json["error"]["code"] == "ENGINE_NOT_FOUND"


def test_missing_cli_is_reported_not_raised(client, engine_config):
    detail = client.get("/v1/engines/iflow").json
    assert detail["installed"] is False and detail["cli_version"] is None
    assert "not installed" in detail["last_error"]


def test_an_operator_chosen_cli_is_shown_with_whether_its_version_was_tested(
    client, engine_config, tmp_path, monkeypatch
):
    """SKILL_RUNNER_<ENGINE>_BIN picks the CLI file; the list shows its path and version, and
    `tested` says whether that version is among those the engine tests passed on."""
    chosen = tmp_path / "iflow-0.9.1" / "iflow"
    chosen.parent.mkdir()
    chosen.write_text("#!/bin/sh\necho 'iFlow CLI 0.9.1'\n")
    chosen.chmod(0o755)
    tested_file = tmp_path / "tested-versions.json"
    monkeypatch.setattr(catalog, "TESTED_VERSIONS", tested_file)
    monkeypatch.setenv("SKILL_RUNNER_IFLOW_BIN", str(chosen))

    def iflow() -> dict:
        return next(e for e in client.get("/v1/engines").json if e["engine"] == "iflow")

    assert iflow() | {"tested_versions": None} == iflow() | {
        "binary_path": str(chosen),
        "cli_version": "iFlow CLI 0.9.1",
        "installed": True,
        "tested": False,
        "tested_versions": None,
    }
    tested_file.write_text(json.dumps({"iflow": ["0.8.0", "0.9.1"]}))
    assert iflow()["tested"] is True and iflow()["tested_versions"] == ["0.8.0", "0.9.1"]
    tested_file.write_text(json.dumps({"iflow": ["0.8.0"]}))
    assert iflow()["tested"] is False
