"""The Procfile as operators run it: a real honcho with real Redis and Postgres. `honcho start`
serves (the web process migrates first), and `-c worker=3` gives three distinct node names;
stopping honcho leaves no process behind."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from celery import Celery

from runner_core.settings import REPO_ROOT
from runner_core.store.migrate import upgrade
from tests.databases import create_postgres_db

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Honcho:
    """`honcho start ARGS` on the repository's Procfile, its output in a file."""

    def __init__(self, tmp_path: Path, env: dict[str, str], *args: str) -> None:
        (tmp_path / "empty.env").write_text("")  # not the checkout's .env, if it has one
        self.log_path = tmp_path / "honcho.log"
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                str(BIN / "honcho"),
                "start",
                "-f",
                "Procfile",
                "-e",
                str(tmp_path / "empty.env"),
                *args,
            ],
            cwd=REPO_ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.seen: set[psutil.Process] = set()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def track(self) -> None:
        """Remember every process honcho has started so far (their pids may be reused later,
        psutil.Process compares creation times too)."""
        try:
            self.seen.update(psutil.Process(self.proc.pid).children(recursive=True))
        except psutil.NoSuchProcess:
            pass

    def wait_for(self, predicate, what: str, timeout: float = 40.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.track()
            assert "stopped (rc=" not in self.output(), self.output()[-4000:]
            if predicate():
                return
            time.sleep(0.2)
        raise AssertionError(f"{what} not seen within {timeout}s:\n{self.output()[-4000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> list[psutil.Process]:
        """Stop honcho as an operator would; the processes it started that are still alive."""
        self.track()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        alive = [p for p in self.seen if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        for leftover in alive:  # leave nothing behind for the next test, then fail
            leftover.kill()
        return alive


@pytest.fixture
def production_env(tmp_path, redis_url):
    """The production setup of deploy/env.example: Redis and a fresh Postgres database."""
    database_url, drop = create_postgres_db(migrated=False)  # the web process migrates
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.update(
        {
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": redis_url,  # of its own: no other worker answers its pings
            "SKILL_RUNNER_DATA_DIR": str(tmp_path / "data"),
            "SKILL_RUNNER_SKILLS_DIR": str(REPO_ROOT / "skills"),
            "HOST": "127.0.0.1",
            "PORT": str(free_port()),
            "FLOWER_PORT": str(free_port()),
            "WEB_CONCURRENCY": "1",
            "WORKER_CONCURRENCY": "1",
            "LOG_LEVEL": "info",
        }
    )
    yield env
    drop()


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read()
    except OSError:
        return 0, b""


def test_honcho_start_runs_every_process_and_stops_them_all(tmp_path, production_env):
    honcho = Honcho(tmp_path, production_env)
    try:
        port = production_env["PORT"]
        honcho.wait_for(lambda: get(f"http://127.0.0.1:{port}/healthz")[0] == 200, "/healthz")
        assert get(f"http://127.0.0.1:{port}/v1/skills")[0] == 200  # migrated: tables exist
        honcho.wait_for(
            lambda: "worker.1@" in honcho.output() and " ready." in honcho.output(),
            "the worker ready",
        )
        honcho.wait_for(lambda: "Sending due task sweep" in honcho.output(), "beat's sweep")
        flower = f"http://127.0.0.1:{production_env['FLOWER_PORT']}/healthcheck"
        honcho.wait_for(lambda: get(flower)[0] == 200, "flower")
        for name in ("web.1", "worker.1", "beat.1", "flower.1"):
            assert f"{name} started" in honcho.output()
    finally:
        alive = honcho.stop(signal.SIGTERM)
    assert alive == [], alive
    assert len(honcho.seen) >= 4 and "stopped (rc=" in honcho.output()


def test_three_workers_from_one_procfile_line_have_distinct_names(tmp_path, production_env):
    upgrade(production_env["DATABASE_URL"])  # the web process, not started here, migrates
    honcho = Honcho(tmp_path, production_env, "-c", "worker=3", "worker")
    control = Celery("ping", broker=production_env["CELERY_BROKER_URL"], set_as_current=False)
    names: set[str] = set()

    def three_answer() -> bool:
        names.update(name for reply in control.control.ping(timeout=1.0) for name in reply)
        return len(names) >= 3

    try:
        honcho.wait_for(lambda: honcho.output().count(" ready.") == 3, "three workers ready")
        honcho.wait_for(three_answer, "three pongs", timeout=15)
    finally:
        alive = honcho.stop(signal.SIGINT)
    host = socket.gethostname()
    assert names == {f"worker.{i}@{host}" for i in (1, 2, 3)}, names
    assert alive == [], alive
