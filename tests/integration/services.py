"""Real services for integration tests: Redis, Postgres and Celery worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from celery import Celery

from api import create_app
from api.queue import CeleryQueue
from runner_core.processes import stop_process_group
from runner_core.settings import REPO_ROOT, Settings
from runner_core.statuses import TERMINAL_STATUSES
from tests.databases import create_postgres_db
from tests.helpers import copy_skills, migrated_settings, wait_for, wait_for_job
from tests.integration.redis_databases import RedisDatabases

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379")


REDIS_DATABASES = RedisDatabases(REDIS_URL)


def redis_database() -> AbstractContextManager[str]:
    """`with redis_database() as url:` a flushed Redis database of this session's own for the
    block (tests/integration/redis_databases.py); fails (never skips) when Redis is away."""
    return REDIS_DATABASES.database()


@contextmanager
def broker_settings(root: Path, backend: str = "sqlite", **env: str) -> Iterator[Settings]:
    """Migrated settings under `root` with the test skills, a Redis database of their own as the
    broker and, for backend "postgres", a Postgres database of their own (dropped after)."""
    copy_skills(root / "skills")
    with redis_database() as broker_url:
        env = {"CELERY_BROKER_URL": broker_url, **env}
        drop = None
        if backend == "postgres":
            env["DATABASE_URL"], drop = create_postgres_db()
        try:
            yield migrated_settings(root, **env)
        finally:
            if drop:
                drop()


def message_count(url: str, queue: str) -> int:
    """How many messages wait in `queue` of the broker at `url`."""
    app = Celery("count", broker=url, set_as_current=False)
    with app.connection_for_read() as conn:
        return conn.default_channel.queue_declare(queue, passive=True).message_count


def service_env(settings: Settings) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "SKILL_RUNNER_DATA_DIR": str(settings.data_dir),
            "SKILL_RUNNER_SKILLS_DIR": str(settings.skills_dir),
            "DATABASE_URL": settings.database_url,
            "CELERY_BROKER_URL": settings.broker_url,
            "SKILL_RUNNER_SWEEP_GRACE_SEC": str(settings.sweep_grace_sec),
            "SKILL_RUNNER_LEASE_SEC": str(settings.lease_sec),
            "PYTHONPATH": str(REPO_ROOT),
        }
    )
    return env


class WorkerProcess:
    """A real `celery worker` (prefork) started and stopped by a test."""

    def __init__(
        self,
        settings: Settings,
        name: str,
        log_path: Path,
        concurrency: int = 2,
        beat: bool = False,
        extra_env: dict[str, str] | None = None,
        queues: str | None = None,
        extra_args: list[str] | None = None,
        as_procfile: bool = False,
    ) -> None:
        """`as_procfile`: with gossip and mingle, as the Procfile starts it (each opens broker
        queues of its own); by default without them, which saves a worker's start its second."""
        self.settings, self.name, self.log_path = settings, name, log_path
        argv = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "worker.celery_app",
            "worker",
            "--loglevel",
            "info",
            "--concurrency",
            str(concurrency),
            "-n",
            f"{name}@%h",
        ]
        if not as_procfile:
            argv += ["--without-gossip", "--without-mingle", "-O", "fair"]
        if queues:
            argv += ["-Q", queues]
        argv += extra_args or []
        if beat:
            argv += ["-B", "--schedule", str(settings.data_dir / f"beat-{name}")]
        env = service_env(settings)
        env.update(extra_env or {})
        self.log = log_path.open("ab")
        self.proc = subprocess.Popen(
            argv,
            cwd=REPO_ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 30.0) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log_path.read_text()[-3000:]}")
            return b"ready." in self.log_path.read_bytes()

        try:
            wait_for(ready, timeout, interval=0.1)
        except AssertionError:
            raise RuntimeError(f"worker not ready: {self.log_path.read_text()[-3000:]}") from None

    def pool_pids(self) -> set[int]:
        """The pids of its pool processes (a run's `worker` field ends with one of them)."""
        return {child.pid for child in psutil.Process(self.proc.pid).children()}

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the main worker process only (SIGKILL leaves its pool children orphaned)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(30)

    def stop(self) -> None:
        # a main process already gone (killed by a test) leaves its pool children: no grace
        stop_process_group(self.proc, 20 if self.proc.poll() is None else 0)
        self.log.close()


def stop_workers(workers: list[WorkerProcess]) -> None:
    """Stop `workers` at once: each one's warm shutdown takes its own second or two."""
    with ThreadPoolExecutor(max_workers=max(1, len(workers))) as pool:
        list(pool.map(WorkerProcess.stop, workers))


@dataclass
class Stack:
    """The API (test client) on real services, with the worker a test started, if any."""

    settings: Settings
    client: Any
    app: Any
    worker: WorkerProcess | None
    backend: str

    def start_worker(self, name: str = "w", **kwargs: Any) -> WorkerProcess:
        """Start a real worker process for this stack (stopped by the fixture)."""
        self.worker = WorkerProcess(
            self.settings,
            f"{name}-{self.backend}",
            self.settings.data_dir / f"worker-{name}.log",
            **kwargs,
        )
        return self.worker

    def wait(
        self, request_id: str, timeout: float = 30.0, until: tuple[str, ...] = TERMINAL_STATUSES
    ) -> dict:
        return wait_for_job(self.client, request_id, timeout, until)


# A test (or, as `pytestmark`, a module) whose SQL does not differ by database: on SQLite only.
# Every state transition, claim, lease, recovery and sweep, listing and outage test runs on
# both (the `backend` fixture's default); the line that applies this mark says why.
SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"], indirect=True, scope="module")
# A Postgres database outage (closed to connections): on Postgres only.
POSTGRES_ONLY = pytest.mark.parametrize("backend", ["postgres"], indirect=True, scope="module")

# the integration stacks' sweep and lease: short, so that recovery tests end in seconds
STACK_ENV = {"SKILL_RUNNER_SWEEP_GRACE_SEC": "2", "SKILL_RUNNER_LEASE_SEC": "3"}


@contextmanager
def api_stack(settings: Settings, backend: str) -> Iterator[Stack]:
    """The API (test client, Celery queue) on `settings`; the worker a test starts on it is
    stopped, and the API's database connections closed, on exit."""
    app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
    stack = Stack(settings, app.test_client(), app, None, backend)
    try:
        yield stack
    finally:
        if stack.worker:
            stack.worker.stop()
        app.extensions["db"].kw["bind"].dispose()
