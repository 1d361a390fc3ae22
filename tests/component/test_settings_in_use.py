"""Settings as the worker and the command line use them (worker.execution.run_layout, launcher.cli)."""

from __future__ import annotations

import pytest

from runner_core.settings import load_settings


def test_snapshot_mode_defaults_to_link_and_rejects_typos(tmp_path) -> None:
    from worker.execution.run_layout import skill_copies

    env = {"SKILL_RUNNER_DATA_DIR": str(tmp_path)}
    linked = load_settings(env)
    assert linked.snapshot_mode == "link"
    assert skill_copies(linked).root == tmp_path.resolve() / "skill-copies"
    copied = load_settings({**env, "SKILL_RUNNER_SNAPSHOT": "Copy"})
    assert copied.snapshot_mode == "copy" and skill_copies(copied) is None
    with pytest.raises(ValueError, match="SKILL_RUNNER_SNAPSHOT"):
        load_settings({**env, "SKILL_RUNNER_SNAPSHOT": "hardlink"})


def test_the_cli_reports_a_configuration_error_without_a_traceback(
    tmp_path, monkeypatch, capsys
) -> None:
    from launcher.cli import main

    monkeypatch.setenv("SKILL_RUNNER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SKILL_RUNNER_LEASE_SEC", "-1")
    assert main(["migrate"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "skill-runner: configuration error: SKILL_RUNNER_LEASE_SEC must be at least 1, not '-1'"
    )
    assert not (tmp_path / "runs.db").exists()
