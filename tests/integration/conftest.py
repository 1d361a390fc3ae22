"""Integration tier: the API (test client) -> real Redis -> a real Celery worker -> SQL,
run once on SQLite and once on Postgres."""

from __future__ import annotations

import pytest

from api import create_app
from api.queue import CeleryQueue
from tests.integration.services import Stack, broker_settings


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request):
    return request.param


@pytest.fixture
def stack_settings(tmp_path, backend):
    with broker_settings(
        tmp_path,
        backend,
        SKILL_RUNNER_SWEEP_GRACE_SEC="2",
        SKILL_RUNNER_LEASE_SEC="3",
    ) as settings:
        yield settings


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
