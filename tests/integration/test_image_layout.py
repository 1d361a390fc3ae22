"""The image's file set serves on its own: the files the Dockerfile copies from the repository
(and nothing else of the checkout) laid out as in the image, started with the image's CMD and
ENV, serve the demo job on the embedded default. No container engine runs here, so this is
what stands for `docker run -p 8000:8000 IMAGE`; the image's Python packages are this venv's."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from runner_core.settings import REPO_ROOT
from tests.deploy_files import copies, instructions
from tests.helpers import wait_for, zip_bytes

pytestmark = pytest.mark.integration


def image_tree(app: Path) -> None:
    """Copy what the Dockerfile's COPY instructions take from the build context into `app`
    (the image's /app; the engines and sandbox stages' copies are left out: they install the
    CLIs and build bubblewrap)."""
    for stage, copy in copies():
        if copy.from_stage is not None or stage in ("engines", "sandbox"):
            continue
        dest = app / copy.dest.removeprefix("/app").lstrip("/")
        for source in copy.sources:
            src = REPO_ROOT / source
            if src.is_dir():
                shutil.copytree(
                    src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
                )
            else:
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / src.name)


def image_env(app: Path, volume: Path) -> tuple[dict[str, str], list[str]]:
    """The final stage's ENV (paths mapped into the test's tree) and its CMD."""
    items = instructions()
    final = [i for i in items if i.stage == items[-1].stage]
    env: dict[str, str] = {}
    for item in final:
        if item.keyword == "ENV":
            for pair in shlex.split(item.args):
                key, _, value = pair.partition("=")
                env[key] = value
    env.pop("PATH")
    for key, value in env.items():
        if value.startswith("/app"):
            env[key] = str(app / value.removeprefix("/app/"))
        elif value == "/var/lib/skill-runner":
            env[key] = str(volume)
    cmd = json.loads(next(i.args for i in final if i.keyword == "CMD"))
    return env, cmd


def call(method: str, url: str, body: bytes | None = None, timeout: float = 10) -> dict:
    headers = {
        "Content-Type": "application/json" if body and body[:1] == b"{" else "application/zip"
    }
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read())


def answers(url: str) -> bool:
    try:
        return call("GET", url, timeout=2).get("status") in ("ok", "degraded")
    except (OSError, ValueError):
        return False


def exited(proc: subprocess.Popen, tmp_path: Path) -> bool:
    """Fail at once when the service exits while the test waits for it."""
    if proc.poll() is not None:
        raise AssertionError((tmp_path / "serve.log").read_text()[-3000:])
    return False


def test_the_files_the_image_copies_serve_the_demo_job_alone(tmp_path: Path):
    app, volume = tmp_path / "app", tmp_path / "volume"
    image_tree(app)
    volume.mkdir()
    env, cmd = image_env(app, volume)
    assert cmd == ["skill-runner", "serve"] and env["HOST"] == "0.0.0.0"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run_env = {
        k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DATABASE_URL")
    }
    run_env.update(env, HOST="127.0.0.1", PORT=str(port), PYTHONPATH=str(app), WEB_CONCURRENCY="1")
    program = str(Path(sys.executable).parent / cmd[0])
    where = subprocess.run(
        [sys.executable, "-c", "import runner_core.settings as s; print(s.REPO_ROOT)"],
        cwd=app,
        env=run_env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip() == str(app)  # the copied tree runs, not the checkout
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [program, *cmd[1:]],
        cwd=app,
        env=run_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: exited(proc, tmp_path) or answers(f"{base}/healthz"), 60, interval=0.2)
        created = call(
            "POST",
            f"{base}/v1/jobs",
            json.dumps({"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}).encode(),
        )
        rid = created["request_id"]
        call("POST", f"{base}/v1/jobs/{rid}/upload", zip_bytes({"input_file.txt": "100\n"}))
        result = call("GET", f"{base}/v1/jobs/{rid}/result?wait_sec=60", timeout=70)["result"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
        log.close()
    assert proc.returncode == 0, (tmp_path / "serve.log").read_text()[-3000:]
    assert result["status"] == "succeeded" and result["data"]["count"] == 15, result
    assert (volume / "runs.db").is_file() and len(list((volume / "runs").iterdir())) == 1
