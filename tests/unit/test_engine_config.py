"""Engine config layering: default < skill recommended < user options < enforced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner_core.engines import config as engine_config
from runner_core.engines.config import (
    EngineConfigError,
    deep_merge,
    load_engine_config,
    resolve_api_key,
    validate_config,
)


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture()
def config_dir(tmp_path: Path) -> Path:
    root = tmp_path / "engine-config"
    write_json(
        root / "gemini" / "default.json",
        {
            "model": "default-model",
            "base_url": "http://default",
            "env": {"A": "default", "B": "default"},
            "settings": {"general": {"x": 1, "y": 1}, "privacy": {"usageStatisticsEnabled": False}},
        },
    )
    write_json(
        root / "gemini" / "enforced.json",
        {"settings": {"privacy": {"usageStatisticsEnabled": False}}},
    )
    return root


@pytest.fixture()
def skill_dir(tmp_path: Path) -> Path:
    skill = tmp_path / "skill"
    (skill / "assets").mkdir(parents=True)
    return skill


def test_default_layer_alone(config_dir: Path) -> None:
    merged = load_engine_config("gemini", skill_dir=None, user=None, config_dir=config_dir)
    assert merged["model"] == "default-model"
    assert merged["settings"]["general"] == {"x": 1, "y": 1}


def test_unknown_engine_gives_empty_config(config_dir: Path) -> None:
    assert load_engine_config("nope", skill_dir=None, user=None, config_dir=config_dir) == {}


def test_skill_toml_overrides_default_settings(config_dir: Path, skill_dir: Path) -> None:
    (skill_dir / "assets" / "gemini_config.toml").write_text("[general]\nx = 2\n", encoding="utf-8")
    merged = load_engine_config("gemini", skill_dir=skill_dir, user=None, config_dir=config_dir)
    assert merged["settings"]["general"] == {"x": 2, "y": 1}


def test_skill_settings_json_is_read_and_beats_skill_toml(
    config_dir: Path, skill_dir: Path
) -> None:
    (skill_dir / "assets" / "gemini_config.toml").write_text("[general]\nx = 2\n", encoding="utf-8")
    write_json(
        skill_dir / "assets" / "gemini_settings.json", {"general": {"x": 3}, "ui": {"theme": "a"}}
    )
    merged = load_engine_config("gemini", skill_dir=skill_dir, user=None, config_dir=config_dir)
    assert merged["settings"]["general"] == {"x": 3, "y": 1}
    assert merged["settings"]["ui"] == {"theme": "a"}


def test_skill_files_of_another_engine_are_ignored(config_dir: Path, skill_dir: Path) -> None:
    write_json(skill_dir / "assets" / "qwen_settings.json", {"general": {"x": 9}})
    merged = load_engine_config("gemini", skill_dir=skill_dir, user=None, config_dir=config_dir)
    assert merged["settings"]["general"]["x"] == 1


def test_user_options_override_skill(config_dir: Path, skill_dir: Path) -> None:
    write_json(skill_dir / "assets" / "gemini_settings.json", {"general": {"x": 3}})
    user = {
        "model": "user-model",
        "runtime_options": {"debug": True},
        "gemini_config": {"general": {"x": 4}},
    }
    merged = load_engine_config("gemini", skill_dir=skill_dir, user=user, config_dir=config_dir)
    assert merged["model"] == "user-model"
    assert merged["settings"]["general"] == {"x": 4, "y": 1}
    assert merged["runtime_options"] == {"debug": True}


def test_other_engines_user_config_is_ignored(config_dir: Path) -> None:
    merged = load_engine_config(
        "gemini", skill_dir=None, user={"qwen_config": {"general": {"x": 5}}}, config_dir=config_dir
    )
    assert merged["settings"]["general"]["x"] == 1


def test_enforced_wins_over_user(config_dir: Path) -> None:
    user = {"gemini_config": {"privacy": {"usageStatisticsEnabled": True}}}
    merged = load_engine_config("gemini", skill_dir=None, user=user, config_dir=config_dir)
    assert merged["settings"]["privacy"]["usageStatisticsEnabled"] is False


def test_enforced_wins_over_skill(config_dir: Path, skill_dir: Path) -> None:
    write_json(
        skill_dir / "assets" / "gemini_settings.json", {"privacy": {"usageStatisticsEnabled": True}}
    )
    merged = load_engine_config("gemini", skill_dir=skill_dir, user=None, config_dir=config_dir)
    assert merged["settings"]["privacy"]["usageStatisticsEnabled"] is False


def test_config_dir_from_environment(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILL_RUNNER_ENGINE_CONFIG_DIR", str(config_dir))
    assert load_engine_config("gemini", skill_dir=None, user=None)["model"] == "default-model"


def test_wrong_type_is_rejected(config_dir: Path) -> None:
    write_json(config_dir / "gemini" / "enforced.json", {"env": ["not", "a", "dict"]})
    with pytest.raises(EngineConfigError):
        load_engine_config("gemini", skill_dir=None, user=None, config_dir=config_dir)


def test_broken_skill_file_is_reported(config_dir: Path, skill_dir: Path) -> None:
    (skill_dir / "assets" / "gemini_config.toml").write_text("= broken", encoding="utf-8")
    with pytest.raises(EngineConfigError, match="gemini_config.toml"):
        load_engine_config("gemini", skill_dir=skill_dir, user=None, config_dir=config_dir)


def test_deep_merge_does_not_mutate_inputs() -> None:
    base = {"a": {"b": 1}}
    deep_merge(base, {"a": {"c": 2}})
    assert base == {"a": {"b": 1}}


def test_deep_merge_result_shares_no_dict_or_list_with_its_inputs() -> None:
    base, override = {"a": {"b": [1]}, "l": [{"x": 1}]}, {"a": {"c": {"d": 2}}}
    merged = deep_merge(base, override)
    merged["a"]["b"].append(2)
    merged["l"][0]["x"] = 9
    merged["a"]["c"]["d"] = 3
    assert base == {"a": {"b": [1]}, "l": [{"x": 1}]} and override == {"a": {"c": {"d": 2}}}


def test_a_changed_config_file_is_read_again(config_dir: Path, skill_dir: Path) -> None:
    """Layers are parsed once per version of their file: an edit (or a replaced file) is seen
    by the next load, and a caller changing its config never reaches the next caller."""
    first = load_engine_config("gemini", skill_dir=skill_dir, user=None, config_dir=config_dir)
    first["settings"]["general"]["x"] = "changed by a caller"
    first["env"]["A"] = "changed by a caller"
    again = load_engine_config("gemini", skill_dir=skill_dir, user=None, config_dir=config_dir)
    assert again["settings"]["general"]["x"] == 1 and again["env"]["A"] == "default"
    write_json(config_dir / "gemini" / "default.json", {"model": "edited-model"})
    (skill_dir / "assets" / "gemini_settings.json").write_text('{"general": {"x": 5}}')
    edited = load_engine_config("gemini", skill_dir=skill_dir, user=None, config_dir=config_dir)
    assert edited["model"] == "edited-model" and "base_url" not in edited
    assert edited["settings"]["general"] == {"x": 5}
    (skill_dir / "assets" / "gemini_settings.json").unlink()
    gone = load_engine_config("gemini", skill_dir=skill_dir, user=None, config_dir=config_dir)
    assert "general" not in gone["settings"]


@pytest.mark.parametrize(
    ("engine", "path", "value"),
    [
        ("gemini", ("settings", "privacy", "usageStatisticsEnabled"), False),
        ("gemini", ("settings", "general", "enableAutoUpdate"), False),
        ("opencode", ("env", "OPENCODE_DISABLE_AUTOUPDATE"), "1"),
        ("opencode", ("env", "OPENCODE_DISABLE_MODELS_FETCH"), "1"),
        ("opencode", ("settings", "autoupdate"), False),
        ("kilo", ("env", "KILO_DISABLE_AUTOUPDATE"), "1"),
        ("kilo", ("env", "KILO_TELEMETRY_LEVEL"), "off"),
        ("kilo", ("settings", "autoupdate"), False),
        ("qwen", ("settings", "privacy", "usageStatisticsEnabled"), False),
        ("qwen", ("settings", "general", "enableAutoUpdate"), False),
        ("iflow", ("settings", "disableAutoUpdate"), True),
    ],
)
def test_shipped_config_keeps_clis_off_the_network(
    engine: str, path: tuple[str, ...], value: object
) -> None:
    user = {f"{engine}_config": {"privacy": {"usageStatisticsEnabled": True}}}
    merged = load_engine_config(
        engine, skill_dir=None, user=user, config_dir=engine_config.REPO_CONFIG_DIR
    )
    for key in path:
        merged = merged[key]
    assert merged == value


def test_api_key_literal_beats_env_name() -> None:
    assert resolve_api_key({"api_key": "lit", "api_key_env": "K"}, {"K": "env"}) == "lit"
    assert resolve_api_key({"api_key_env": "K"}, {"K": "env"}) == "env"
    assert resolve_api_key({"api_key_env": "K"}, {}) is None


@pytest.mark.parametrize("flags", ["--liftoff-only", [1], {"a": "b"}])
def test_node_flags_must_be_a_list_of_strings(flags: object) -> None:
    with pytest.raises(EngineConfigError, match="node_flags"):
        validate_config({"node_flags": flags})


@pytest.mark.parametrize("value", ["false", 0, None])
def test_native_schema_must_be_true_or_false(value: object) -> None:
    with pytest.raises(EngineConfigError, match="native_schema"):
        validate_config({"native_schema": value})
    validate_config({"native_schema": False})
