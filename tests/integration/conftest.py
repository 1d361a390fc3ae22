"""Integration tier: the API (test client) -> real Redis -> a real Celery worker -> SQL,
run once on SQLite and once on Postgres."""
from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from api import create_app
from api.queue import CeleryQueue
from runner_core.settings import Settings
from runner_core.store.migrate import upgrade
from tests.conftest import copy_skills, make_settings
from tests.integration.services import WorkerProcess, create_postgres_db, require_redis

REDIS_DB = {"sqlite": 14, "postgres": 15}
TERMINAL = ("succeeded", "failed", "canceled")


@dataclass
class Stack:
    settings: Settings
    client: object
    app: object
    worker: WorkerProcess | None
    backend: str

    def start_worker(self, name: str = "w", **kwargs) -> WorkerProcess:
        """Start a real worker process for this stack (stopped by the fixture)."""
        self.worker = WorkerProcess(self.settings, f"{name}-{self.backend}",
                                    self.settings.data_dir / f"worker-{name}.log", **kwargs)
        return self.worker

    def wait(self, request_id: str, timeout: float = 30.0, until=TERMINAL) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            status = self.client.get(f"/v1/jobs/{request_id}").json
            if status["status"] in until:
                return status
            time.sleep(0.05)
        raise AssertionError(f"job {request_id} still {status['status']} after {timeout}s")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request):
    return request.param


@pytest.fixture
def stack_settings(tmp_path, backend):
    copy_skills(tmp_path / "skills")
    broker = require_redis(REDIS_DB[backend])
    env = {"CELERY_BROKER_URL": broker, "SKILL_RUNNER_SWEEP_GRACE_SEC": "2",
           "SKILL_RUNNER_LEASE_SEC": "3"}
    drop = None
    if backend == "postgres":
        url, drop = create_postgres_db()
        env["DATABASE_URL"] = url
    settings = make_settings(tmp_path, **env)
    settings.data_dir.mkdir(parents=True)
    upgrade(settings.database_url)
    yield settings
    if drop:
        drop()


@pytest.fixture
def bare_stack(stack_settings, backend):
    """API + broker, no worker yet (tests start and kill their own)."""
    app = create_app({"SETTINGS": stack_settings, "QUEUE": CeleryQueue(stack_settings.broker_url)})
    stack = Stack(stack_settings, app.test_client(), app, None, backend)
    yield stack
    if stack.worker:
        stack.worker.stop()
    app.extensions["db"].kw["bind"].dispose()


@pytest.fixture
def stack(bare_stack):
    bare_stack.start_worker()
    return bare_stack
