"""A run's engine configuration is checked when the job is created: a request's
`<engine>_config` or a skill's config file that would fail the run once its CLI is set up is a
400 ENGINE_CONFIG_INVALID naming the key, and nothing is queued."""

from __future__ import annotations

import json

import pytest

from tests.packages import echo_skill, package_upload


def post(client, engine_config, skill="echo-prompt", engine="codex"):
    return client.post(
        "/v1/jobs",
        json={
            "skill_id": skill,
            "engine": engine,
            "input": {"text": "hello"},
            "runtime_options": {f"{engine}_config": engine_config},
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


@pytest.mark.parametrize(
    ("engine", "config", "named", "expected"),
    [
        ("codex", {"model": 123}, "runtime_options.codex_config.model", "a string"),
        (
            "codex",
            {"model_reasoning_effort": ["x"]},
            "runtime_options.codex_config.model_reasoning_effort",
            "a string",
        ),
        (
            "codex",
            {"sandbox_workspace_write": {"network_access": "yes"}},
            "runtime_options.codex_config.sandbox_workspace_write.network_access",
            "a boolean",
        ),
        ("gemini", {"model": {"name": 5}}, "runtime_options.gemini_config.model.name", "a string"),
        ("opencode", {"snapshot": "x"}, "runtime_options.opencode_config.snapshot", "a boolean"),
    ],
)
def test_a_known_setting_of_the_wrong_type_is_refused_naming_key_type_and_engine(
    client, queue, engine, config, named, expected
):
    resp = post(client, config, engine=engine)
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "ENGINE_CONFIG_INVALID"
    assert f"{named}: {engine} expects {expected}" in error["message"]
    assert error["details"]["engine"] == engine
    assert queue.sent == []


@pytest.mark.parametrize(
    ("engine", "config"),
    [
        ("codex", {"model": "gpt-5.2-codex", "model_reasoning_effort": "low"}),
        (
            "codex",
            {"approval_policy": "never", "sandbox_workspace_write": {"network_access": True}},
        ),
        ("gemini", {"model": {"name": "gemini-2.5-pro"}, "general": {"enableAutoUpdate": False}}),
        ("opencode", {"snapshot": False, "autoupdate": "notify"}),
    ],
)
def test_known_settings_of_the_right_type_are_taken(client, queue, engine, config):
    assert post(client, config, engine=engine).status_code == 200
    assert len(queue.sent) == 1


@pytest.mark.parametrize(
    ("engine", "config"),
    [("codex", {"some_future_setting": 123}), ("gemini", {"someFutureGroup": {"x": [1]}})],
)
def test_a_setting_the_service_does_not_know_is_left_to_the_cli(client, queue, engine, config):
    assert post(client, config, engine=engine).status_code == 200
    assert len(queue.sent) == 1


def test_a_wrong_type_in_a_skills_config_file_is_named_by_that_file(client, queue, skills_root):
    (skills_root / "echo-prompt" / "assets" / "codex_config.toml").write_text("model = 5\n")
    resp = post(client, {})
    assert resp.status_code == 400, resp.json
    assert (
        "assets/codex_config.toml: model: codex expects a string" in resp.json["error"]["message"]
    )
    assert queue.sent == []


def test_a_request_setting_of_the_right_type_overrides_a_skills_wrong_one(
    client, queue, skills_root
):
    (skills_root / "echo-prompt" / "assets" / "codex_config.toml").write_text("model = 5\n")
    assert post(client, {"model": "gpt-5.2-codex"}).status_code == 200


def test_a_one_off_runs_wrong_typed_setting_is_refused_too(client, queue):
    prompt = {"type": "prompt", "prompts": {"codex": "Echo {{ input.text }}"}}
    files = echo_skill(runner={"engines": ["codex"], "entrypoint": prompt})
    data = package_upload(files)
    data["request"] = json.dumps(
        {
            "engine": "codex",
            "input": {"text": "hi"},
            "runtime_options": {"codex_config": {"model_reasoning_effort": ["x"]}},
        }
    )
    resp = client.post("/v1/temp-skill-runs", data=data)
    assert resp.status_code == 400, resp.json
    assert "runtime_options.codex_config.model_reasoning_effort" in resp.json["error"]["message"]
    assert resp.json["error"]["code"] == "ENGINE_CONFIG_INVALID" and queue.sent == []
