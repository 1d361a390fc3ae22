"""The JSON types of each engine CLI's well-known settings, checked on a run's merged settings
and named after the layer the wrong value came from."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonschema import Draft4Validator

from runner_core.engines import RUNNABLE_ENGINES, settings_schema
from runner_core.engines.config import EngineConfigError
from runner_core.engines.setting_types import check_setting_types


def refusal(engine: str, merged: dict, sent: dict | None = None, skill_dir: Path | None = None):
    with pytest.raises(EngineConfigError) as caught:
        check_setting_types(engine, merged, skill_dir=skill_dir, sent=sent)
    return str(caught.value)


@pytest.mark.parametrize("engine", RUNNABLE_ENGINES)
def test_every_runnable_engine_declares_a_valid_schema_that_allows_unknown_keys(engine):
    schema = settings_schema(engine)
    Draft4Validator.check_schema(schema)
    assert schema["properties"] and "additionalProperties" not in schema


@pytest.mark.parametrize(
    ("engine", "sent", "message"),
    [
        (
            "codex",
            {"model": 123},
            "runtime_options.codex_config.model: codex expects a string, got an integer",
        ),
        (
            "codex",
            {"model_reasoning_effort": ["x"]},
            "runtime_options.codex_config."
            "model_reasoning_effort: codex expects a string, got an array",
        ),
        (
            "codex",
            {"notify": ["say", 1]},
            "runtime_options.codex_config.notify[1]: codex expects a string, got an integer",
        ),
        (
            "codex",
            {"model_providers": {"p": {"stream_max_retries": 2.0}}},
            "runtime_options."
            "codex_config.model_providers.p.stream_max_retries: codex expects an integer, got a "
            "number",
        ),
        (
            "gemini",
            {"model": {"name": 5}},
            "runtime_options.gemini_config.model.name: gemini expects a string, got an integer",
        ),
        (
            "opencode",
            {"autoupdate": 1},
            "runtime_options.opencode_config.autoupdate: opencode "
            "expects a boolean or a string, got an integer",
        ),
        (
            "kilo",
            {"sandbox": {"enabled": "no"}},
            "runtime_options.kilo_config.sandbox.enabled: kilo expects a boolean, got a string",
        ),
    ],
)
def test_a_wrong_type_sent_by_the_request_is_named_with_the_requests_key(engine, sent, message):
    assert refusal(engine, sent, sent=sent) == message


def test_right_types_and_unknown_keys_pass():
    merged = {"model": "m", "analytics": {"enabled": False}, "not_a_codex_key": [1, {"a": None}]}
    check_setting_types("codex", merged, skill_dir=None, sent=merged)


def test_a_wrong_type_from_a_skill_file_is_named_by_that_file(tmp_path):
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "codex_config.toml").write_text("model = 5\n", encoding="utf-8")
    (tmp_path / "assets" / "codex_config.json").write_text('{"sandbox_mode": "read-only"}')
    message = refusal("codex", {"model": 5, "sandbox_mode": "read-only"}, {}, tmp_path)
    assert message == "assets/codex_config.toml: model: codex expects a string, got an integer"


def test_a_wrong_type_from_no_skill_or_request_layer_is_the_operators():
    message = refusal("gemini", {"privacy": {"usageStatisticsEnabled": "no"}}, {"model": {}})
    assert message.startswith("the operator's gemini config, settings.privacy.")


def test_a_request_value_that_is_not_the_merged_one_is_not_blamed():
    message = refusal("codex", {"model": 5}, sent={"model": "m"})
    assert message.startswith("the operator's codex config, settings.model:")
