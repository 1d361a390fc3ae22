"""`skill-runner` (launcher.cli) without its optional half: the client package."""

from __future__ import annotations

import json
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


def test_new_then_validate_and_a_broken_skill_is_one_line_per_problem(tmp_path, capsys):
    for name, kind in (("my-prompt", "prompt"), ("my-script", "script"), ("my_code", "skill.json")):
        assert main(["new", name, "--kind", kind, "--dir", str(tmp_path)]) == 0
    capsys.readouterr()
    dirs = [str(tmp_path / n) for n in ("my-prompt", "my-script", "my_code")]
    assert main(["validate", *dirs, "--skills-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path}/my-prompt: ok (my-prompt)",
        f"{tmp_path}/my-script: ok (my-script)",
        f"{tmp_path}/my_code: ok (my_code)",
    ]
    (tmp_path / "my-script" / "assets" / "output.schema.json").write_text('{"type": "objec"}')
    assert main(["validate", dirs[1], "--skills-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out and all(line.startswith(f"{tmp_path}/my-script: ") for line in out)
    assert any("output.schema.json" in line for line in out), out
    assert main(["validate", dirs[1], "--json", "--skills-dir", str(tmp_path)]) == 1
    [report] = json.loads(capsys.readouterr().out)
    assert report["valid"] is False and report["skill_id"] == "my-script" and report["errors"]


def test_new_refuses_a_bad_name_and_an_existing_directory(tmp_path, capsys):
    assert main(["new", "Bad_Name", "--dir", str(tmp_path)]) == 2
    assert "not a skill name for --kind prompt" in capsys.readouterr().err
    (tmp_path / "taken").mkdir()
    assert main(["new", "taken", "--dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"skill-runner: {tmp_path}/taken already exists\n"


def test_new_in_a_folder_that_cannot_be_written_is_one_line(tmp_path, capsys):
    (tmp_path / "file.txt").write_text("x")
    for where, reason in (
        ("/proc/no-such-dir", "No such file or directory"),
        (str(tmp_path / "file.txt"), "Not a directory"),
    ):
        assert main(["new", "my-skill", "--dir", where]) == 2
        assert capsys.readouterr().err == (
            f"skill-runner: cannot write {where}/my-skill: {reason}\n"
        )


def test_a_data_folder_that_cannot_be_made_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "file.txt").write_text("x")
    monkeypatch.setattr(os, "environ", {**os.environ})
    monkeypatch.delenv("SKILL_RUNNER_CONFIG", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    for data_dir, reason in (
        ("/proc/no-such-dir/data", "No such file or directory"),
        (str(tmp_path / "file.txt" / "data"), "Not a directory"),
    ):
        monkeypatch.setenv("SKILL_RUNNER_DATA_DIR", data_dir)
        for command in ("migrate", "serve"):
            assert main([command]) == 2
            assert capsys.readouterr().err == (
                f"skill-runner: configuration error: cannot make the data folder {data_dir}: "
                f"{reason}\n"
            )


def test_a_database_url_that_does_not_work_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(os, "environ", {**os.environ})
    monkeypatch.delenv("SKILL_RUNNER_CONFIG", raising=False)
    monkeypatch.setenv("SKILL_RUNNER_DATA_DIR", str(tmp_path))
    for url, shown, reason in (
        ("nonsense://x", "nonsense://x", "Can't load plugin: sqlalchemy.dialects:nonsense"),
        (  # nothing listens on port 9: the password is masked in the line
            "postgresql://runner:pw-long-secret@127.0.0.1:9/skills",
            "postgresql://runner:[REDACTED]@127.0.0.1:9/skills",
            "connection failed: ",
        ),
    ):
        monkeypatch.setenv("DATABASE_URL", url)
        assert main(["migrate"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(
            f"skill-runner: configuration error: the database at {shown}: {reason}"
        ), err
        assert len(err.splitlines()) == 1


def test_the_serve_banner_masks_the_broker_password(tmp_path, monkeypatch):
    from launcher.cli import serve_banner
    from runner_core.settings import load_settings

    monkeypatch.setattr(os, "environ", {**os.environ})
    monkeypatch.delenv("SKILL_RUNNER_CONFIG", raising=False)
    monkeypatch.setenv("SKILL_RUNNER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://:broker-secret-pw@10.0.0.5:6379/0")
    banner = serve_banner(load_settings(), embedded_broker=False)
    assert "broker-secret-pw" not in banner
    assert banner.endswith("broker: redis://:[REDACTED]@10.0.0.5:6379/0)")
