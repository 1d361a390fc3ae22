from __future__ import annotations

import pytest

from runner_core.settings import load_settings


@pytest.mark.parametrize("value, expected", [(None, False), ("0", False), ("1", True),
                                             ("true", True), ("no", False)])
def test_task_events_are_off_unless_asked_for(tmp_path, value, expected) -> None:
    env = {"SKILL_RUNNER_DATA_DIR": str(tmp_path)}
    if value is not None:
        env["SKILL_RUNNER_TASK_EVENTS"] = value
    assert load_settings(env).task_events is expected


def test_per_engine_running_limits_are_read_by_engine_key(tmp_path) -> None:
    settings = load_settings({"SKILL_RUNNER_DATA_DIR": str(tmp_path),
                              "SKILL_RUNNER_MAX_RUNNING_CODEX": "2",
                              "SKILL_RUNNER_MAX_RUNNING_SCRIPT": "5"})
    assert settings.running_limit("codex") == 2
    assert settings.running_limit(None) == 5
    assert settings.running_limit("gemini") == 0


def test_snapshot_mode_defaults_to_link_and_rejects_typos(tmp_path) -> None:
    from worker.executor import skill_copies
    env = {"SKILL_RUNNER_DATA_DIR": str(tmp_path)}
    linked = load_settings(env)
    assert linked.snapshot_mode == "link"
    assert skill_copies(linked).root == tmp_path.resolve() / "skill-copies"
    copied = load_settings({**env, "SKILL_RUNNER_SNAPSHOT": "Copy"})
    assert copied.snapshot_mode == "copy" and skill_copies(copied) is None
    with pytest.raises(ValueError, match="SKILL_RUNNER_SNAPSHOT"):
        load_settings({**env, "SKILL_RUNNER_SNAPSHOT": "hardlink"})
