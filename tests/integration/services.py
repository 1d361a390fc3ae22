"""Real services for integration tests: Redis, Postgres and Celery worker processes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
import redis

from runner_core.processes import stop_process_group
from runner_core.settings import REPO_ROOT, Settings

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379")
POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def require_redis(db: int) -> str:
    """A flushed Redis database; fails (never skips) when Redis is not reachable."""
    url = f"{REDIS_URL}/{db}"
    try:
        client = redis.Redis.from_url(url, socket_timeout=2)
        client.ping()
        client.flushdb()
    except redis.RedisError as exc:
        pytest.fail(f"integration tests need Redis at {REDIS_URL} ({exc}); tests/run.sh starts it")
    return url


def create_postgres_db() -> tuple[str, callable]:
    """A fresh Postgres database and a function that drops it."""
    name = f"skill_runner_test_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        pytest.fail(f"integration tests need Postgres at {POSTGRES_URL} ({exc}); tests/run.sh starts it")
    admin.execute(f'CREATE DATABASE "{name}"')
    base = POSTGRES_URL.rsplit("/", 1)[0]

    def drop() -> None:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
    return f"{base}/{name}", drop


def service_env(settings: Settings) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"SKILL_RUNNER_DATA_DIR": str(settings.data_dir),
                "SKILL_RUNNER_SKILLS_DIR": str(settings.skills_dir),
                "DATABASE_URL": settings.database_url,
                "CELERY_BROKER_URL": settings.broker_url,
                "SKILL_RUNNER_SWEEP_GRACE_SEC": str(settings.sweep_grace_sec),
                "SKILL_RUNNER_LEASE_SEC": str(settings.lease_sec),
                "PYTHONPATH": str(REPO_ROOT)})
    return env


class WorkerProcess:
    """A real `celery worker` (prefork) started and stopped by a test."""

    def __init__(self, settings: Settings, name: str, log_path: Path, concurrency: int = 2,
                 beat: bool = False, extra_env: dict[str, str] | None = None,
                 queues: str | None = None) -> None:
        self.settings, self.name, self.log_path = settings, name, log_path
        argv = [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker",
                "--loglevel", "info", "--concurrency", str(concurrency), "-n", f"{name}@%h",
                "--without-gossip", "--without-mingle", "-O", "fair"]
        if queues:
            argv += ["-Q", queues]
        if beat:
            argv += ["-B", "--schedule", str(settings.data_dir / f"beat-{name}")]
        env = service_env(settings)
        env.update(extra_env or {})
        self.log = log_path.open("ab")
        self.proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.wait_ready()

    def wait_ready(self, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log_path.read_text()[-3000:]}")
            if b"ready." in self.log_path.read_bytes():
                return
            time.sleep(0.1)
        raise RuntimeError(f"worker not ready: {self.log_path.read_text()[-3000:]}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the main worker process only (SIGKILL leaves its pool children orphaned)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(30)

    def stop(self) -> None:
        # a main process already gone (killed by a test) leaves its pool children: no grace
        stop_process_group(self.proc, 20 if self.proc.poll() is None else 0)
        self.log.close()
