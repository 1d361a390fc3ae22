"""The Dockerfile and deploy/compose.yaml, checked without a container engine: hadolint, the
compose specification's own parser, and every command, path and queue they name."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from runner_core.queues import QUEUES
from runner_core.settings import REPO_ROOT
from tests.deploy_files import (
    COMPOSE,
    DOCKERFILE,
    compose_config,
    context_files,
    copies,
    ignored,
    instructions,
    service_command,
)

BIN = Path(sys.executable).parent
SCRIPTS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
# what the image's venv has on PATH: the project's console scripts and its dependencies'
IMAGE_COMMANDS = {*SCRIPTS, "celery", "gunicorn", "python"}
WORKERS = ("worker-script", "worker-engines", "sweeper", "webhooks")


def lint_tool(name: str) -> str:
    path = BIN / name
    if not path.is_file():
        pytest.fail(
            f"{name} is missing: install the lint extra (bash deploy/bootstrap.sh test,lint)"
        )
    return str(path)


def test_dockerfile_lints_clean_with_hadolint():
    done = subprocess.run(
        [lint_tool("hadolint"), str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_dockerfile_is_multi_stage_and_runs_as_a_numeric_non_root_user():
    items = instructions()
    stages = [i for i in items if i.keyword == "FROM"]
    assert len(stages) >= 3, stages
    user = [i.args for i in items if i.keyword == "USER"]
    assert user and user[-1].split(":")[0].isdigit() and user[-1].split(":")[0] != "0"
    last = [i for i in items if i.stage == items[-1].stage]
    assert any(i.keyword == "CMD" and "serve" in i.args for i in last)  # alone: embedded default


def test_every_path_the_dockerfile_copies_exists_and_reaches_the_build_context():
    sources = context_files()
    assert "deploy/install-engines.sh" in sources and "migrations/" in sources
    for source in sources:
        assert (REPO_ROOT / source).exists(), source
        assert not ignored(source), f"{source} is kept out of the build context by .dockerignore"


def test_dockerignore_keeps_local_state_out_of_the_build_context():
    for path in (".venv/bin/python", ".engines/node_modules", "data/runs.db", ".git/HEAD"):
        assert ignored(path), path
    assert ignored("api/__pycache__/x.pyc") and not ignored("api/app.py")


def test_the_engine_stage_has_what_install_engines_copies():
    engine_copies = [c for stage, c in copies() if stage == "engines" and c.from_stage is None]
    copied = {s.rstrip("/") for c in engine_copies for s in c.sources}
    for name in ("package.json", "package-lock.json", ".npmrc"):  # install-engines.sh's cp
        assert (REPO_ROOT / "deploy/engines" / name).is_file()
        assert "deploy/engines" in copied
    runs = [i.args for i in instructions() if i.stage == "engines" and i.keyword == "RUN"]
    assert runs == ["bash deploy/install-engines.sh"]
    later = [c for _, c in copies() if c.from_stage == "engines"]
    assert {"/app/.engines", "/usr/local/bin/node"} <= {s for c in later for s in c.sources}


def test_the_sandbox_stage_builds_bwrap_as_a_host_does_and_the_image_takes_it():
    runs = [i.args for i in instructions() if i.stage == "sandbox" and i.keyword == "RUN"]
    assert any(run.startswith("bash deploy/install-sandbox.sh") for run in runs), runs
    assert any("gcc" in run and "libc6-dev" in run for run in runs), runs
    later = [c for _, c in copies() if c.from_stage == "sandbox"]
    assert [c.sources for c in later] == [["/app/.sandbox"]]
    final = [i for i in instructions() if i.stage == instructions()[-1].stage]
    assert not any("bubblewrap" in i.args for i in final if i.keyword == "RUN")


def test_compose_file_is_valid_against_the_compose_specification():
    from compose_spec.compose_spec import PyCompose

    for env in ({}, {"PORT": "9000", "FLOWER_BASIC_AUTH": "a:b", "ENGINE_WORKER_AUTOSCALE": "8,2"}):
        parsed = PyCompose.from_dict(compose_config(env))
        parsed.validate()
        assert set(parsed.service_names()) >= {"web", "beat", "redis", "postgres", *WORKERS}


def test_compose_validation_rejects_a_misspelt_key():
    from compose_spec.compose_spec import PyCompose

    broken = compose_config()
    broken["services"]["web"]["restrat"] = "always"
    with pytest.raises(ValueError):
        PyCompose.from_dict(broken)


def test_compose_builds_this_repository_and_names_only_existing_commands_and_files():
    config = compose_config()
    for name, service in config["services"].items():
        if "build" not in service:
            continue
        build = service["build"]
        assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
        argv = service_command(service)
        program = argv[0]
        if "/" in program:
            assert os.access(REPO_ROOT / program, os.X_OK), f"{name}: {program}"
        else:
            assert program in IMAGE_COMMANDS and (BIN / program).is_file(), f"{name}: {program}"
        for flag, value in zip(argv, argv[1:]):
            if flag == "-A":
                assert (REPO_ROOT / (value.replace(".", "/") + ".py")).is_file(), value
            if flag == "-c":
                assert (REPO_ROOT / value).is_file(), value
        for word in argv:
            if ":" in word and word.split(":")[0].endswith(".wsgi"):
                assert (REPO_ROOT / (word.split(":")[0].replace(".", "/") + ".py")).is_file()


def test_every_queue_has_a_worker_service_and_no_worker_names_an_unknown_queue():
    services = compose_config()["services"]
    consumed: list[str] = []
    for name in WORKERS:
        argv = service_command(services[name])
        queues = argv[argv.index("-Q") + 1].split(",")
        assert set(queues) <= set(QUEUES), (name, queues)
        assert "%h" in argv[argv.index("-n") + 1]  # replicas get distinct node names
        consumed += queues
    assert sorted(consumed) == sorted(QUEUES)  # each once


def test_compose_publishes_on_loopback_keeps_redis_durable_and_runs_one_beat():
    services = compose_config({"FLOWER_BASIC_AUTH": "a:b"})["services"]
    for name, service in services.items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)
    redis_argv = service_command(services["redis"])
    assert redis_argv[redis_argv.index("--appendonly") + 1] == "yes"
    assert redis_argv[redis_argv.index("--maxmemory-policy") + 1] == "noeviction"
    assert services["beat"]["deploy"]["replicas"] == 1
    assert services["flower"]["profiles"] == ["monitoring"]
    shared = {"data:/var/lib/skill-runner", "skills:/app/skills"}
    for name in ("web", "beat", *WORKERS):
        assert shared <= set(services[name]["volumes"]), name
    assert set(compose_config()["volumes"]) >= {"data", "skills", "pgdata", "redisdata"}


def test_flower_script_refuses_to_start_without_a_login():
    env = {k: v for k, v in os.environ.items() if k != "FLOWER_BASIC_AUTH"}
    done = subprocess.run(
        [str(REPO_ROOT / "deploy/flower.sh")], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "FLOWER_BASIC_AUTH" in done.stderr
