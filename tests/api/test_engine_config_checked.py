"""A run's engine configuration is checked when the job is created: a request's
`<engine>_config` or a skill's config file that would fail the run once its CLI is set up is a
400 ENGINE_CONFIG_INVALID naming the key, and nothing is queued."""

from __future__ import annotations

import pytest


def post(client, engine_config, skill="echo-prompt"):
    return client.post(
        "/v1/jobs",
        json={
            "skill_id": skill,
            "engine": "codex",
            "input": {"text": "hello"},
            "runtime_options": {"codex_config": engine_config},
        },
    )


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"model_reasoning_effort": None}, "runtime_options.codex_config.model_reasoning_effort"),
        ({"tools": {"web_search": None}}, "runtime_options.codex_config.tools.web_search"),
    ],
)
def test_a_setting_without_a_value_is_refused_naming_it(client, queue, config, named):
    resp = post(client, config)
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "ENGINE_CONFIG_INVALID" and named in error["message"]
    assert error["details"]["engine"] == "codex"
    assert queue.sent == []


def test_a_valid_setting_is_taken(client, queue):
    assert post(client, {"model_reasoning_effort": "high"}).status_code == 200
    assert len(queue.sent) == 1


def test_a_skills_config_file_that_does_not_load_is_refused_naming_it(client, queue, skills_root):
    (skills_root / "echo-prompt" / "assets" / "codex_config.json").write_text("[1, 2]")
    resp = post(client, {})
    assert resp.status_code == 400, resp.json
    assert resp.json["error"]["code"] == "ENGINE_CONFIG_INVALID"
    assert "codex_config.json" in resp.json["error"]["message"]
    assert queue.sent == []
