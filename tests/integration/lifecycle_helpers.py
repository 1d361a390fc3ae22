"""Helpers of the lifecycle tests: jobs, recorded process trees, a private Redis."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from datetime import datetime
from pathlib import Path

import psutil
import redis as redis_lib

from runner_core.store.models import Run
from tests.helpers import wait_for


def create_job(stack, skill_id: str, *, no_cache: bool = False, **parameter) -> str:
    """POST a job of `skill_id` with `parameter`; with `no_cache`, never answered from the result
    cache (on a stack shared by several tests, one may have sent the same body)."""
    body = {"skill_id": skill_id, "parameter": parameter}
    if no_cache:
        body["runtime_options"] = {"no_cache": True}
    resp = stack.client.post("/v1/jobs", json=body)
    assert resp.status_code == 200, resp.json
    return resp.json["request_id"]


def job(stack, request_id: str) -> dict:
    return stack.client.get(f"/v1/jobs/{request_id}").json


def job_states(stack, request_ids: list[str], skill_id: str) -> list[str]:
    """The statuses of `request_ids` as of one instant: one list request is one SELECT, where
    one GET per job would read each at a different moment (a run ending and the next starting
    between two GETs looked like three running at once)."""
    items = stack.client.get(f"/v1/jobs?skill_id={skill_id}&limit=100").json["items"]
    by_id = {item["request_id"]: item["status"] for item in items}
    return [by_id[rid] for rid in request_ids]


def run_row(stack, run_id: str) -> Run:
    with stack.app.extensions["db"]() as session:
        return session.get(Run, run_id)


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def recorded_processes(stack, run_id: str, expect: int) -> tuple[int, list[int]]:
    """(pgid, child pids) of a test skill run: the script's pid (= its group, it leads it) is
    in artifacts/calls.txt, its children in raw/child_pids.txt."""
    run_dir = stack.settings.runs_dir / run_id
    pids_file, calls = run_dir / "raw" / "child_pids.txt", run_dir / "artifacts" / "calls.txt"

    def ready() -> bool:
        return (
            calls.is_file() and pids_file.is_file() and len(pids_file.read_text().split()) == expect
        )

    wait_for(ready, 10)
    pgid = int(calls.read_text().split()[-1])
    kids = [int(p) for p in pids_file.read_text().split()]
    assert all(os.getpgid(k) == pgid for k in kids)
    return pgid, kids


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE  # init here may never reap orphans
    except psutil.NoSuchProcess:
        return False


def live_pids(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if _alive(psutil.Process(pid)):
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def live_group(pgid: int) -> list[int]:
    """Live (non-zombie) members of process group `pgid`."""
    out = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and _alive(proc):
                out.append(proc.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return out


class PrivateRedis:
    """A redis-server of the test's own (never the shared one), without persistence, so a
    restart loses every message in it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is needed for the broker restart test"
        self.proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self._answers, 10)

    def _answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis_lib.RedisError:
            return False

    def client(self) -> redis_lib.Redis:
        return redis_lib.Redis.from_url(self.url, socket_timeout=2)

    def restart(self) -> None:
        self.stop()
        self.start()

    def shut_down(self) -> None:
        """As an operator's `redis-cli shutdown nosave`: the server closes its clients' connections
        and exits."""
        self.client().shutdown(nosave=True)
        if self.proc is not None:
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
