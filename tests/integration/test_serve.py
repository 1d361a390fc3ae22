"""The README's quick start: `skill-runner serve` on the embedded default (SQLite and the
embedded broker), in each of its layouts: the demo job through it, a broker that dies and comes
back, and a stop that leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from runner_core.cgroups import pids_root
from tests.helpers import copy_skills, wait_for, zip_bytes

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(
    method: str, url: str, body: bytes | None = None, content_type: str = "", timeout: float = 10
) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=body, method=method, headers={"Content-Type": content_type} if body else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def health(base: str) -> dict | None:
    try:
        return call("GET", f"{base}/healthz", timeout=2)[1]
    except (OSError, ValueError):
        return None


def is_celery(proc: psutil.Process) -> bool:
    try:
        return "worker.celery_app" in proc.cmdline()
    except psutil.Error:
        return False


def demo_job(base: str) -> dict:
    status, created = call(
        "POST",
        f"{base}/v1/jobs",
        json.dumps({"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}).encode(),
        "application/json",
    )
    assert status == 200, created
    rid = created["request_id"]
    status, uploaded = call(
        "POST",
        f"{base}/v1/jobs/{rid}/upload",
        zip_bytes({"input_file.txt": "100\n"}),
        "application/zip",
    )
    assert status == 200, uploaded
    return call("GET", f"{base}/v1/jobs/{rid}/result?wait_sec=60", timeout=70)[1]


@pytest.mark.parametrize("layout", ["one-process", "processes"])
def test_serve_runs_the_demo_heals_its_broker_and_stops_clean(tmp_path: Path, layout: str):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DATABASE_URL")}
    env.update(
        SKILL_RUNNER_DATA_DIR=str(tmp_path / "data"),
        PORT=str(port),
        HOST="127.0.0.1",
        SKILL_RUNNER_SKILLS_DIR=str(copy_skills(tmp_path / "skills")),
        SKILL_RUNNER_SWEEP_GRACE_SEC="2",
        WEB_CONCURRENCY="1",
    )
    serve = subprocess.Popen(
        [str(Path(sys.executable).parent / "skill-runner"), "serve", "--layout", layout],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    family: list[psutil.Process] = []
    try:
        wait_for(lambda: (health(base) or {}).get("status") == "ok", 60, 0.2, what="/healthz")
        family = psutil.Process(serve.pid).children(recursive=True)
        result = demo_job(base)["result"]
        assert result["status"] == "succeeded" and result["data"]["count"] == 15
        if layout == "one-process" and pids_root() is not None:
            # the pool thread that ran it holds a pids group of its own (its commands are
            # born there: no join per command)
            held = [
                tid
                for group in pids_root().glob(f"worker-{serve.pid}-t*")
                for tid in (group / "tasks").read_text().split()
            ]
            assert held and all(Path(f"/proc/{serve.pid}/task/{tid}").exists() for tid in held)
        if layout == "processes":  # a worker that stops on its own is started again
            # (before the broker's loss, which may stop the worker too: the one to stop is ready)
            (worker,) = [p for p in psutil.Process(serve.pid).children() if is_celery(p)]
            worker.terminate()

            def new_worker():
                kids = psutil.Process(serve.pid).children()
                return [p for p in kids if is_celery(p) and p.pid != worker.pid]

            wait_for(new_worker, 30, 0.2, what="the worker to be started again")
            result = demo_job(base)["result"]
            assert result["status"] == "succeeded", result

        broker = next(p for p in family if p.name() == "redis-server")
        broker.kill()
        broker.wait(10)

        def new_broker():
            return [
                p
                for p in psutil.Process(serve.pid).children()
                if p.name() == "redis-server" and p.pid != broker.pid
            ]

        wait_for(new_broker, 30, 0.2, what="the embedded broker to be restarted")
        wait_for(
            lambda: (health(base) or {}).get("status") == "ok", 30, 0.2, what="/healthz ok again"
        )
        result = demo_job(base)["result"]  # the worker reconnected (or was restarted)
        assert result["status"] == "succeeded", result
        family = psutil.Process(serve.pid).children(recursive=True)
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            output = serve.communicate(timeout=60)[0].decode(errors="replace")
        except subprocess.TimeoutExpired:
            serve.kill()
            raise
        print(output)  # the service's log, shown by pytest when the test fails
    assert serve.returncode == 0, output
    assert "the embedded broker exited; restarting it" in output
    if layout == "processes":
        # a ready worker shuts down warm on SIGTERM
        assert "celery exited with code 0; starting it again" in output
    gone, alive = psutil.wait_procs(family, timeout=10)
    assert alive == [], [p.info for p in alive] if alive else None


def test_a_second_ctrl_c_cancels_the_running_runs_and_leaves_no_command(tmp_path: Path):
    """Ctrl-C lets the runs finish; a second one (Celery's cold shutdown) used to raise in the
    pool of threads, leave the run `running` and its command alive after the service exited.
    Now the run is canceled and recorded, and its command is gone."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DATABASE_URL")}
    env.update(
        SKILL_RUNNER_DATA_DIR=str(tmp_path / "data"),
        PORT=str(port),
        HOST="127.0.0.1",
        SKILL_RUNNER_SKILLS_DIR=str(copy_skills(tmp_path / "skills")),
    )
    serve = subprocess.Popen(
        [sys.executable, "-m", "launcher.cli", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: (health(base) or {}).get("status") == "ok", 60, 0.2, what="/healthz")
        body = {"skill_id": "slow-counter", "parameter": {"sleep": 25}}
        status, created = call(
            "POST", f"{base}/v1/jobs", json.dumps(body).encode(), "application/json"
        )
        assert status == 200, created
        rid = created["request_id"]
        wait_for(lambda: call("GET", f"{base}/v1/jobs/{rid}")[1]["status"] == "running", 30, 0.2)
        run_id = call("GET", f"{base}/v1/jobs/{rid}")[1]["run_id"]

        def commands() -> list[psutil.Process]:
            return [
                p
                for p in psutil.Process(serve.pid).children(recursive=True)
                if p.name() != "redis-server"
            ]

        wait_for(commands, 10, 0.1, what="the run's command")
        family = commands()
        serve.send_signal(signal.SIGINT)  # warm: the runs may finish
        time.sleep(1)
        serve.send_signal(signal.SIGINT)  # cold
        output = serve.communicate(timeout=30)[0].decode(errors="replace")
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    print(output)
    assert "NotImplementedError" not in output
    assert f"cold shutdown: canceling 1 running run(s): {run_id}" in output
    gone, alive = psutil.wait_procs(family, timeout=5)
    assert alive == [], [p.pid for p in alive]
    with sqlite3.connect(tmp_path / "data" / "runs.db") as db:
        query = "SELECT status, error_code, error FROM runs WHERE id = ?"
        status, code, error = db.execute(query, (run_id,)).fetchone()
    assert (status, code) == ("canceled", "CANCELED_BY_USER")
    assert json.loads(error)["message"] == "canceled by the service's cold stop"
