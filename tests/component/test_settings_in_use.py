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


@pytest.mark.parametrize(
    "name, value, line",
    [
        (
            "SKILL_RUNNER_QUEUE_MAX",
            "abc",
            "SKILL_RUNNER_QUEUE_MAX must be a whole number, not 'abc'",
        ),
        ("WEB_THREADS", "four", "WEB_THREADS must be a whole number, not 'four'"),
        ("WEB_CONNECTIONS", "0", "WEB_CONNECTIONS must be at least 1, not '0'"),
    ],
)
def test_gunicorn_stops_on_a_bad_setting_with_one_line_and_code_2(tmp_path, name, value, line):
    """gunicorn printed the app's import traceback and exited 1 (the doc says code 2), and a
    bad WEB_THREADS was a ValueError traceback of its config file."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from runner_core.settings import REPO_ROOT

    env = {
        **os.environ,
        "SKILL_RUNNER_DATA_DIR": str(tmp_path),
        "PORT": "1",  # never reached: the check comes first
        name: value,
    }
    gunicorn = Path(sys.executable).parent / "gunicorn"
    done = subprocess.run(
        [str(gunicorn), "-c", str(REPO_ROOT / "deploy" / "gunicorn.conf.py"), "api.wsgi:app"],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"skill-runner: configuration error: {line}"
