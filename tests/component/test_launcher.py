"""`skill-runner` (launcher.cli) without its optional half: the client package."""

from __future__ import annotations

import os
import sys

from launcher.cli import main


def test_a_client_command_without_the_client_package_says_how_to_install_it(
    monkeypatch, capsys
) -> None:
    monkeypatch.setitem(sys.modules, "skill_runner_client", None)  # import fails as if absent
    monkeypatch.delitem(sys.modules, "skill_runner_client.cli", raising=False)
    assert main(["submit", "demo-prime-number"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "skill-runner: 'submit' is a client command; install the client package: "
        "pip install ./client (docs/clients.md)\n"
    )


def test_config_prints_the_effective_settings_with_secrets_masked(tmp_path, monkeypatch, capsys):
    config = tmp_path / "service.yaml"
    config.write_text(f"SKILL_RUNNER_DATA_DIR: {tmp_path}\nPORT: 9100\n")
    # the command fills the process environment from the file: a copy, undone after the test
    monkeypatch.setattr(os, "environ", {**os.environ})
    monkeypatch.setenv("DATABASE_URL", "postgresql://runner:hunter2-long-pw@db/skills")
    monkeypatch.setenv("SKILL_RUNNER_API_TOKEN", "a-token-of-twenty-chars")
    monkeypatch.setenv("PORT", "9200")
    monkeypatch.delenv("SKILL_RUNNER_CONFIG", raising=False)
    assert main(["config", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"# config file: {config} (the environment wins over it)"
    assert f"data_dir = {tmp_path}" in lines and "port = 9200" in lines
    assert "database_url = postgresql://runner:[REDACTED]@db/skills" in lines
    assert "api_tokens = [REDACTED] x1" in lines
    assert "hunter2" not in out and "a-token-of-twenty-chars" not in out


def test_a_bad_config_file_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("data_dir: /srv\n")
    monkeypatch.setattr(os, "environ", {**os.environ})
    monkeypatch.delenv("SKILL_RUNNER_CONFIG", raising=False)
    assert main(["config", "--config", str(config)]) == 2
    assert capsys.readouterr().err == (
        f"skill-runner: configuration error: {config}: 'data_dir' is not a variable name "
        "(upper case, as in the environment: SKILL_RUNNER_DATA_DIR)\n"
    )
