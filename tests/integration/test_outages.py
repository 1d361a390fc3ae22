"""Outages found by the chaos test (tests/chaos), each kept here as a focused regression."""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.integration.lifecycle_helpers import create_job, recorded_processes
from tests.integration.services import POSTGRES_URL

pytestmark = pytest.mark.integration


def closed(name: str, seconds: float) -> None:
    """Every backend of database `name` cut and new connections refused for `seconds`."""
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        time.sleep(seconds)  # the outage itself
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')


def test_a_finish_that_meets_a_long_outage_is_recorded_once_the_database_is_back(
    bare_stack, backend
):
    """The run ends 1 s into a 6 s outage. Its finish used to be retried for half a lease
    (here 4 s) and then given up: the run stayed `running`, and the sweep later ran it again
    (the skill declares a retry) although it had succeeded. Now the finish outlasts the outage
    and the run is executed once."""
    if backend != "postgres":
        pytest.skip("an outage is made by closing a Postgres database to connections")
    stack = bare_stack
    stack.start_worker(extra_env={"SKILL_RUNNER_LEASE_SEC": "8"})
    rid = create_job(stack, "retry-counter", sleep=1.5)
    running = stack.wait(rid, until=("running",))
    recorded_processes(stack, running["run_id"], expect=0)  # the script has started
    closed(stack.settings.database_url.rsplit("/", 1)[1], 6.0)
    status = stack.wait(rid, timeout=60)
    assert status["status"] == "succeeded" and status["attempt"] == 1, status
    calls = stack.settings.runs_dir / running["run_id"] / "artifacts" / "calls.txt"
    assert len(calls.read_text().split()) == 1
    assert "does not answer" in stack.worker.log_path.read_text()
