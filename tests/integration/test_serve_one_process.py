"""`skill-runner serve` in its default layout, one process: few processes at rest, and each run
still has its own process group, timeout, cancel and crash, none of which stops the service."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers import copy_skills, wait_for
from tests.integration.lifecycle_helpers import live_group, live_pids
from tests.integration.test_serve import call, free_port, health

pytestmark = pytest.mark.integration


class Served:
    """A running `skill-runner serve` and the calls the tests make to it."""

    def __init__(self, proc: subprocess.Popen, base: str, data_dir: Path) -> None:
        self.proc, self.base, self.data_dir = proc, base, data_dir

    def submit(self, **parameter) -> str:
        body = {"skill_id": "stubborn-tree", "parameter": parameter}
        body["runtime_options"] = {"no_cache": True}
        status, created = call(
            "POST", f"{self.base}/v1/jobs", json.dumps(body).encode(), "application/json"
        )
        assert status == 200, created
        return created["request_id"]

    def job(self, rid: str) -> dict:
        return call("GET", f"{self.base}/v1/jobs/{rid}")[1]

    def wait(self, rid: str, until: tuple[str, ...] = ("succeeded", "failed", "canceled")):
        return wait_for(lambda: (j := self.job(rid))["status"] in until and j, 30, 0.1)

    def pids(self, run_id: str, expect: int) -> tuple[int, list[int]]:
        """(the script's group, its children) as the test skill records them."""
        run_dir = self.data_dir / "runs" / run_id
        calls, kids = run_dir / "artifacts" / "calls.txt", run_dir / "raw" / "child_pids.txt"
        wait_for(lambda: kids.is_file() and len(kids.read_text().split()) == expect, 10, 0.05)
        return int(calls.read_text().split()[-1]), [int(p) for p in kids.read_text().split()]

    def live_family(self) -> list[psutil.Process]:
        """The service's process and its descendants that still run (zombies aside)."""
        top = psutil.Process(self.proc.pid)
        return [p for p in [top, *top.children(recursive=True)] if _running(p)]


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def start_serve(root: Path, log) -> tuple[subprocess.Popen, str]:
    """`skill-runner serve` on a data folder under `root`, once its /healthz is ok."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DATABASE_URL")}
    env.update(
        SKILL_RUNNER_DATA_DIR=str(root / "data"),
        SKILL_RUNNER_SKILLS_DIR=str(copy_skills(root / "skills")),
        PORT=str(port),
        HOST="127.0.0.1",
        SKILL_RUNNER_SANDBOX="off",  # the script's pids are read from inside: no pid namespace
        SKILL_RUNNER_KILL_GRACE_SEC="1",
    )
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "skill-runner"), "serve"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: (health(base) or {}).get("status") == "ok", 60, 0.05, what="/healthz")
    except BaseException:
        proc.kill()
        raise
    return proc, base


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("serve-one-process")
    log = (root / "serve.log").open("wb")
    proc, base = start_serve(root, log)
    try:
        yield Served(proc, base, root / "data")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        log.close()
    assert proc.returncode == 0, (root / "serve.log").read_text()[-4000:]


def test_at_rest_the_service_is_at_most_three_processes(served):
    family = served.live_family()
    assert len(family) <= 3, [(p.pid, p.name()) for p in family]


def test_a_script_run_succeeds(served):
    rid = served.submit(sleep=0, children=0)
    status = served.wait(rid)
    assert status["status"] == "succeeded", status


def test_a_run_over_its_timeout_ends_timeout_with_its_group_killed(served):
    rid = served.submit(sleep=60, children=2)
    running = served.wait(rid, until=("running",))
    pgid, kids = served.pids(running["run_id"], expect=4)
    status = served.wait(rid)
    assert status["status"] == "failed" and status["error"]["code"] == "TIMEOUT", status
    assert live_group(pgid) == [] and live_pids(kids) == []


def test_a_cancel_ends_the_run_and_its_group_within_a_second_and_the_grace(served):
    rid = served.submit(sleep=60, children=1)
    running = served.wait(rid, until=("running",))
    pgid, kids = served.pids(running["run_id"], expect=3)
    asked = time.monotonic()
    assert call("POST", f"{served.base}/v1/jobs/{rid}/cancel")[1]["accepted"] is True
    status = served.wait(rid)
    took = time.monotonic() - asked
    assert status["status"] == "canceled", status
    # the watch sees the cancel within 0.5 s; one child ignores SIGTERM: 1 s of grace
    assert took < 1.0 + 1.0, took
    assert live_group(pgid) == [] and live_pids(kids) == []


def test_a_killed_script_fails_its_run_and_the_next_run_succeeds(served):
    rid = served.submit(sleep=60, children=0)
    running = served.wait(rid, until=("running",))
    pgid, _kids = served.pids(running["run_id"], expect=2)
    os.kill(pgid, signal.SIGKILL)  # the script leads its group: its pid is the group's id
    status = served.wait(rid)
    assert status["status"] == "failed", status
    assert served.proc.poll() is None
    assert (health(served.base) or {}).get("status") == "ok"
    rid = served.submit(sleep=0, children=0)
    assert served.wait(rid)["status"] == "succeeded"


def test_a_stop_as_soon_as_the_api_answers_leaves_no_process_behind(tmp_path):
    """SIGTERM can come before the worker has set its own handlers: still a clean stop."""
    with (tmp_path / "serve.log").open("wb") as log:
        proc, _base = start_serve(tmp_path, log)
        family = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, (tmp_path / "serve.log").read_text()[-4000:]
    _gone, alive = psutil.wait_procs(family, timeout=10)
    assert alive == []


def test_a_port_already_taken_is_one_line_and_leaves_no_broker_behind(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DATABASE_URL")}
    env.update(
        SKILL_RUNNER_DATA_DIR=str(tmp_path / "data"),
        SKILL_RUNNER_SKILLS_DIR=str(copy_skills(tmp_path / "skills")),
        PORT="1",  # --port wins over the environment
        HOST="0.0.0.0",
    )
    port = str(taken.getsockname()[1])
    with taken:
        done = subprocess.run(
            [str(Path(sys.executable).parent / "skill-runner"), "serve"]
            + ["--host", "127.0.0.1", "--port", port],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1, done.stderr[-4000:]
    assert done.stderr.splitlines()[-1] == (
        f"skill-runner: cannot listen on 127.0.0.1:{port}: Address already in use"
    )
    assert "Traceback" not in done.stderr
    broker = str(tmp_path / "data")
    left = [
        p for p in psutil.process_iter(["cmdline"]) if broker in " ".join(p.info["cmdline"] or [])
    ]
    assert left == []  # the embedded broker it started is stopped
