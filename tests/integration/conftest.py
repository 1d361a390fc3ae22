"""Integration tier: the API (test client) -> real Redis -> a real Celery worker -> SQL, on SQLite
and on Postgres (a module whose SQL does not differ by database overrides `backend`)."""

from __future__ import annotations

import pytest

from tests.integration.services import STACK_ENV, api_stack, broker_settings


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def backend(request):
    """The database of the module's stacks: both, one after the other (module scope groups a
    module's tests by database, so a shared stack is made once per database)."""
    return request.param


@pytest.fixture
def stack_settings(tmp_path, backend):
    with broker_settings(tmp_path, backend, **STACK_ENV) as settings:
        yield settings


@pytest.fixture
def bare_stack(stack_settings, backend):
    """API + broker, no worker yet (tests start and kill their own)."""
    with api_stack(stack_settings, backend) as stack:
        yield stack


@pytest.fixture
def stack(bare_stack):
    """API + broker + a worker of the test's own."""
    bare_stack.start_worker()
    return bare_stack


@pytest.fixture(scope="module")
def module_stack(tmp_path_factory, backend):
    """API + broker + one worker shared by the tests of a module (per database). A module whose
    tests neither stop, kill nor reconfigure the worker takes it as its `stack`; its tests tell
    their own jobs apart by what they created, never by counting everything there is."""
    root = tmp_path_factory.mktemp(f"stack-{backend}")
    with (
        broker_settings(root, backend, **STACK_ENV) as settings,
        api_stack(settings, backend) as stack,
    ):
        stack.start_worker()
        yield stack
