"""A run's engine config is checked again when its worker sets the CLI up: an operator's config
file changed after the job was created fails the run with ENGINE_CONFIG_INVALID, naming the
setting, instead of handing the CLI a config it refuses (ENGINE_FAILED)."""

from __future__ import annotations

import json
import shutil

import pytest

from runner_core.engines.config import CONFIG_DIR_ENV, REPO_CONFIG_DIR, EngineConfigError
from runner_core.runtime_options import RuntimeOptions
from worker.execution.engine import checked_config


@pytest.fixture
def config_dir(tmp_path, monkeypatch):
    copy = shutil.copytree(REPO_CONFIG_DIR, tmp_path / "engine-config")
    monkeypatch.setenv(CONFIG_DIR_ENV, str(copy))
    return copy


def test_a_setting_of_the_wrong_type_in_the_operators_file_is_refused_at_start(
    config_dir, tmp_path
):
    skill = tmp_path / "skill"
    skill.mkdir()
    options = RuntimeOptions.from_dict({})
    assert checked_config("codex", None, options, skill)["settings"]  # loads as shipped
    default = config_dir / "codex" / "default.json"
    changed = json.loads(default.read_text())
    changed["settings"]["model_reasoning_effort"] = ["high"]
    default.write_text(json.dumps(changed))
    with pytest.raises(EngineConfigError) as exc:
        checked_config("codex", None, options, skill)
    assert "settings.model_reasoning_effort" in str(exc.value)
    assert "codex expects a string, got an array" in str(exc.value)


def test_a_request_value_of_the_right_type_still_wins(config_dir, tmp_path):
    options = RuntimeOptions.from_dict({"codex_config": {"model_reasoning_effort": "low"}})
    config = checked_config("codex", None, options, tmp_path)
    assert config["settings"]["model_reasoning_effort"] == "low"
