"""The container image itself (marker `image`): built from the Dockerfile and run with
`docker run -p`, it answers /healthz and serves the demo job on its embedded default, as the
service's user, with the agent CLIs installed; with `--demo-llm` (and the seccomp profile
that lets bubblewrap make namespaces) the codex demo job runs too.

It needs a Docker daemon and the network (the base images, npm and the Python package index),
which the machines the suite runs on may not have, so `tests/run.sh` leaves it out (setup.cfg
deselects the marker); run it with `pytest -m image tests/integration/test_image.py`. Without a
daemon it skips and says so. Where the public base images cannot be pulled, name others with
SKILL_RUNNER_TEST_PYTHON_IMAGE and SKILL_RUNNER_TEST_NODE_IMAGE (the Dockerfile's build args);
DOCKER_HOST picks the daemon as for the docker command."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from runner_core.settings import REPO_ROOT
from tests.helpers import wait_for, zip_bytes
from tests.integration.test_image_layout import answers, call

pytestmark = [pytest.mark.image, pytest.mark.timeout(3600)]  # a build takes minutes
BUILD_ARGS = {
    "PYTHON_IMAGE": "SKILL_RUNNER_TEST_PYTHON_IMAGE",
    "NODE_IMAGE": "SKILL_RUNNER_TEST_NODE_IMAGE",
}


def docker(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=check, timeout=timeout
    )


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    """The image built from this checkout (removed after the module)."""
    if shutil.which("docker") is None:
        pytest.skip("no docker command: the image cannot be built here")
    info = docker("info", "--format", "{{.ServerVersion}}", check=False, timeout=30)
    if info.returncode != 0:
        pytest.skip(f"no Docker daemon answers: {info.stderr.strip()[:200]}")
    tag = f"skill-runner-test:{uuid.uuid4().hex[:8]}"
    args = [
        f"--build-arg={arg}={os.environ[env]}"
        for arg, env in BUILD_ARGS.items()
        if env in os.environ
    ]
    # the build's RUN steps use the host's network (npm, the package index): no bridge needed
    built = docker(
        "build", "--network", "host", *args, "-t", tag, str(REPO_ROOT), check=False, timeout=3600
    )
    assert built.returncode == 0, (built.stdout + built.stderr)[-4000:]
    try:
        yield tag
    finally:
        docker("rmi", "-f", tag, check=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def container(image) -> Iterator:
    """`start(*command)`: the image run detached with its port published on loopback; yields
    (name, base URL). Every container is removed after the test."""
    names: list[str] = []

    def start(*command: str, options: tuple[str, ...] = ()) -> tuple[str, str]:
        name, port = f"skill-runner-test-{uuid.uuid4().hex[:8]}", free_port()
        docker(
            "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:8000", *options, image, *command
        )
        names.append(name)
        base = f"http://127.0.0.1:{port}"

        def up() -> bool:
            state = docker("inspect", "-f", "{{.State.Running}}", name, check=False).stdout
            if state.strip() != "true":
                raise AssertionError(docker("logs", name, check=False).stderr[-3000:])
            return answers(f"{base}/healthz")

        wait_for(up, 90, interval=0.5)
        return name, base

    yield start
    for name in names:
        docker("rm", "-f", "-v", name, check=False)


def test_the_image_serves_healthz_and_the_demo_job_as_its_own_user(container):
    name, base = container()
    health = call("GET", f"{base}/healthz")
    assert health["status"] in ("ok", "degraded"), health
    created = call(
        "POST",
        f"{base}/v1/jobs",
        json.dumps({"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}).encode(),
    )
    rid = created["request_id"]
    call("POST", f"{base}/v1/jobs/{rid}/upload", zip_bytes({"input_file.txt": "100\n"}))
    result = call("GET", f"{base}/v1/jobs/{rid}/result?wait_sec=60", timeout=70)["result"]
    assert result["status"] == "succeeded", result
    assert result["data"]["count"] == 15, result  # as the checkout's own run of the demo
    assert docker("exec", name, "id", "-u").stdout.strip() == "10001"
    for cli in ("codex", "gemini", "opencode", "qwen", "claude"):
        found = docker(
            "exec", name, "test", "-x", f"/app/.engines/node_modules/.bin/{cli}", check=False
        )
        assert found.returncode == 0, cli
    code = docker("exec", name, "sh", "-c", "touch /app/api/x", check=False)
    assert code.returncode != 0  # the code is read-only to the service's user


def test_the_image_runs_the_codex_demo_against_the_demo_llm(container):
    # codex runs its tools in bubblewrap, which makes user namespaces: Docker's default
    # seccomp profile refuses them ("No permissions to create a new namespace"), and every
    # tool call of the agent would fail
    _name, base = container(
        "skill-runner", "serve", "--demo-llm", options=("--security-opt", "seccomp=unconfined")
    )
    assert call("GET", f"{base}/healthz").get("demo_llm") is True
    created = call(
        "POST",
        f"{base}/v1/jobs",
        json.dumps(
            {"skill_id": "demo-echo", "engine": "codex", "input": {"text": "  Hello   World "}}
        ).encode(),
    )
    rid = created["request_id"]
    status = wait_for(
        lambda: (
            (s := call("GET", f"{base}/v1/jobs/{rid}?wait_sec=30", timeout=40))["status"]
            in ("succeeded", "failed", "canceled")
            and s
        ),
        120,
    )
    assert status["status"] == "succeeded", (status, call("GET", f"{base}/v1/jobs/{rid}/logs"))
    result = call("GET", f"{base}/v1/jobs/{rid}/result")["result"]
    assert result["data"]["normalized_text"] == "hello world", result
    assert result["artifacts"] == ["artifacts/notes.md"]
