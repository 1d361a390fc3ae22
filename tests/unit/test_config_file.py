"""Settings from a YAML file as well as the environment (seed 003 §10): the environment wins."""

from __future__ import annotations

import pytest

from runner_core.settings import SettingsError, load_settings


def settings_with(tmp_path, text: str, **env: str):
    path = tmp_path / "skill-runner.yaml"
    path.write_text(text)
    return load_settings({"SKILL_RUNNER_CONFIG": str(path), **env})


def test_the_file_sets_what_the_environment_leaves_unset(tmp_path):
    settings = settings_with(
        tmp_path,
        f"SKILL_RUNNER_DATA_DIR: {tmp_path / 'data'}\nPORT: 9001\nSKILL_RUNNER_REPAIR_ROUNDS: 2\n"
        "SKILL_RUNNER_CORS_ORIGINS: [https://a.example.org, https://b.example.org]\n"
        "SKILL_RUNNER_EVENTS: false\n",
        PORT="9002",
    )
    assert settings.data_dir == tmp_path / "data" and settings.repair_rounds == 2
    assert settings.port == 9002  # the environment wins
    assert settings.cors_origins == ("https://a.example.org", "https://b.example.org")
    assert settings.events is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("port: 1\n", "'port' is not a variable name"),
        ("PORT: {a: 1}\n", "PORT: a value is a string, number, boolean or list"),
        ("- PORT\n", "must map variable names to values"),
        ("PORT: [unclosed\n", "is not valid YAML"),
        ("PORT: 0\n", "PORT"),  # read like the variable: out of range
    ],
)
def test_a_bad_file_is_a_settings_error_naming_the_key(tmp_path, text, message):
    with pytest.raises(SettingsError, match=message.replace("[", r"\[").replace("{", r"\{")):
        settings_with(tmp_path, text)


def test_a_missing_file_is_a_settings_error(tmp_path):
    with pytest.raises(SettingsError, match="cannot read"):
        load_settings({"SKILL_RUNNER_CONFIG": str(tmp_path / "absent.yaml")})
